"""One file through the migration and every file through a run: the engine (worker pool,
cache), the pipeline of a Python file, pieces of large files, notebooks and launch scripts."""
