"""Not a package to import: this folder is put first on the import path of the processes that
`gpu2npu dryrun` starts, so that their `import torch_npu` loads the CPU imitation in it."""
