"""Start-up of every Python process that `gpu2npu dryrun` starts: loads its probe (this folder is
on those processes' PYTHONPATH only), then the sitecustomize this one hides, if the user's
environment has one further down the path."""
import importlib.util
import os
import sys

import gpu2npu_dryrun_probe

gpu2npu_dryrun_probe.start()

_here = os.path.dirname(os.path.abspath(__file__))
for _entry in sys.path:
    _candidate = os.path.join(_entry or os.getcwd(), "sitecustomize.py")
    if os.path.abspath(_entry or os.getcwd()) != _here and os.path.isfile(_candidate):
        _spec = importlib.util.spec_from_file_location("sitecustomize_of_the_environment", _candidate)
        _module = importlib.util.module_from_spec(_spec)
        _spec.loader.exec_module(_module)
        break
