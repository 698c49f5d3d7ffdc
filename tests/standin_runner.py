"""Run (migrated) training scripts on the CPU with the torch_npu stand-in.

``run_script`` runs ``sys.executable script *args`` with CUDA hidden and, when
``use_standin`` is true, the CPU imitation of torch_npu that ``gpu2npu dryrun`` uses
(src/gpu2npu/dryrun/standin) first on PYTHONPATH so that ``import torch_npu`` loads it.  ``parse_losses`` reads the
``step <i> loss <value>`` lines such scripts print.
"""

import os
import re
import subprocess
import sys

import gpu2npu.dryrun

STANDIN_DIR = os.path.join(os.path.dirname(os.path.abspath(gpu2npu.dryrun.__file__)), "standin")

_LOSS_RE = re.compile(r"^\s*step\s+(\d+)\s*[:,]?\s*loss\s*[:=]?\s*(\S+?)[,;]?\s*$", re.IGNORECASE)


def standin_env(env_extra=None, use_standin=True, base=None):
    """The environment ``run_script`` uses (exposed for tests that spawn otherwise)."""
    env = dict(os.environ if base is None else base)
    parts = [p for p in env.get("PYTHONPATH", "").split(os.pathsep)
             if p and os.path.abspath(p) != STANDIN_DIR]
    if use_standin:
        parts.insert(0, STANDIN_DIR)
    if parts:
        env["PYTHONPATH"] = os.pathsep.join(parts)
    else:
        env.pop("PYTHONPATH", None)
    env["CUDA_VISIBLE_DEVICES"] = ""
    env["GPU2NPU_DRYRUN"] = "1"  # the imitation loads only where this says so
    if env_extra:
        env.update({k: str(v) for k, v in env_extra.items()})
    return env


def run_script(script_path, args, cwd, env_extra=None, timeout=300, use_standin=True):
    """Run ``python script_path *args`` in ``cwd``; return the CompletedProcess
    (stdout/stderr as text).  Raises subprocess.TimeoutExpired after ``timeout`` s."""
    cmd = [sys.executable, str(script_path), *[str(a) for a in (args or [])]]
    return subprocess.run(
        cmd,
        cwd=str(cwd),
        env=standin_env(env_extra, use_standin),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
    )


def import_imitation():
    """The imitation of torch_npu, imported into this test process (which it patches for the rest
    of the run: only tests of the imitation call it)."""
    if STANDIN_DIR not in sys.path:
        sys.path.insert(0, STANDIN_DIR)
    import torch_npu

    assert getattr(torch_npu, "IS_STANDIN", False), torch_npu.__file__
    return torch_npu


def parse_losses(stdout):
    """Losses from lines ``step <i> loss <value>``, in the order printed."""
    losses = []
    for line in stdout.splitlines():
        m = _LOSS_RE.match(line)
        if m:
            losses.append(float(m.group(2)))
    return losses
