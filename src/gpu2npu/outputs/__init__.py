"""What a migration writes beside the migrated files: the output tree, the generated
packages, the -m package and the multi-NPU launcher."""
