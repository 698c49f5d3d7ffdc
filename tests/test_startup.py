"""What the command imports before it has work: a module that only some rules need in some
files must not slow every start (libcst.matchers alone costs a tenth of a second)."""
import subprocess
import sys


def test_the_command_starts_without_libcst_matchers():
    code = "import sys, gpu2npu.cli; print('libcst.matchers' in sys.modules)"
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert result.stdout.strip() == "False"
