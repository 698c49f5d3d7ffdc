"""What the migration cannot change, found beside and after the rules: the leftovers
analysis, the hazards, the advice on faster NPU APIs, library APIs that reach CUDA (-api),
CUDA extension builds and custom CUDA operators; report_codes lists every kind."""
