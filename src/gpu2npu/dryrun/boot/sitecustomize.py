"""Start-up of every Python process that `gpu2npu dryrun` starts: loads its probe (this folder is
on those processes' PYTHONPATH only; a sitecustomize of the user's environment further down the
path is loaded after it)."""
import gpu2npu_dryrun_probe

gpu2npu_dryrun_probe.start()
