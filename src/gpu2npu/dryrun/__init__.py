"""`gpu2npu dryrun`: run a (migrated) project on the CPU as if on an NPU.

standin/ holds the CPU imitation of torch_npu (and of Ascend apex); run.py starts the user's
command with standin/ first on its children's import path and reads back what they recorded
(boot/gpu2npu_dryrun_probe.py, loaded at start-up by boot/sitecustomize.py)."""
