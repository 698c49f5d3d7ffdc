"""What keeps one hostile file from ending a run.

LibCST's native parser recurses once per level of nesting and has no depth limit of its own: a
statement nested some 1,200 brackets deep (or ~10,000 terms chained by `+`, or thousands of
adjacent string literals) overflows the thread's stack and the process dies with SIGSEGV, which
no `except` can catch.  Pathological statements can also take minutes and gigabytes.  So:

- content that is not Python source (NUL bytes) and files too large to parse in reasonable time
  and memory are refused up front, with the reason;
- a file holding a statement long or deep enough to be dangerous is migrated in a forked child
  process with a time and memory limit; if the child dies, the file is reported as nested too
  deeply and the run goes on.  Ordinary files never pay for this.
"""
from __future__ import annotations

import faulthandler
import os
import pickle
import re
import signal
from typing import Callable, Optional, TypeVar

# A Python file larger than this is not parsed whole (libcst holds about 650 MB per MiB of source
# while it works) but in pieces (pipeline._migrate_chunks), or copied unchanged when it cannot be
# cut so.
MAX_SOURCE_BYTES = 1024 * 1024

# A statement with fewer code bytes than this (strings and comments not counted) and shallower
# bracket nesting cannot overflow the parser: the cheapest crash measured is 1,200 nested
# parentheses, 2,400 bytes.  Both limits leave a margin.
RISKY_STATEMENT_BYTES = 2000
RISKY_DEPTH = 200  # also CPython's own limit for nested brackets

# Limits of the child process that migrates a risky file.
CHILD_SECONDS = 120
CHILD_MEMORY_BYTES = 4 * 1024 ** 3  # on top of what the process already maps

_TOKENS = re.compile(
    rb"""(?P<string>(?:'''|\"\"\")(?:\\.|.)*?(?:'''|\"\"\")|'(?:\\.|[^\\'\n])*'|"(?:\\.|[^\\"\n])*")
    |(?P<comment>\#[^\n]*)
    |(?P<open>[(\[{])
    |(?P<close>[)\]}])
    |(?P<newline>\n)""",
    re.X | re.S,
)

T = TypeVar("T")


def not_source(data: bytes) -> Optional[str]:
    """Why `data` cannot be Python source (CPython refuses NUL bytes; UTF-16 text has them),
    or None."""
    nul = data.find(b"\0")
    if nul >= 0:
        return f"binary content (a NUL byte at offset {nul}): not Python source"
    return None


def too_large(data: bytes) -> Optional[str]:
    if len(data) > MAX_SOURCE_BYTES:
        return (f"too large to migrate ({len(data) / 1024 ** 2:.1f} MiB; a Python file above "
                f"{MAX_SOURCE_BYTES // 1024 ** 2} MiB is migrated in pieces, each definition to migrate with the "
                "module-level statements, and this one cannot be: its module-level statements or one definition "
                "are too large, or the pieces disagree about the module-level statements)")
    return None


def risky(data: bytes) -> bool:
    """Whether some statement of `data` is long or deep enough to overflow the parser.  A
    string-aware scan of brackets and line ends, not a tokenizer: it only has to err on the
    side of caution."""
    if len(data) < RISKY_STATEMENT_BYTES:
        return False
    depth = 0
    statement_start = 0
    excluded = 0  # bytes of strings and comments in the current statement
    for match in _TOKENS.finditer(data):
        kind = match.lastgroup
        if kind == "string" or kind == "comment":
            excluded += match.end() - match.start()
        elif kind == "open":
            depth += 1
            if depth > RISKY_DEPTH:
                return True
        elif kind == "close":
            depth = max(depth - 1, 0)
        elif depth == 0 and not _continued(data, match.start()):
            if match.start() - statement_start - excluded > RISKY_STATEMENT_BYTES:
                return True
            statement_start, excluded = match.end(), 0
    return len(data) - statement_start - excluded > RISKY_STATEMENT_BYTES


def _continued(data: bytes, newline: int) -> bool:
    """Whether the line ending at `newline` ends in a backslash (continues the statement)."""
    end = newline - 1 if data[newline - 1:newline] == b"\r" else newline
    return data[end - 1:end] == b"\\"


def in_child(work: Callable[[], T], failure: Callable[[str], T]) -> T:
    """`work()` run in a forked child with a time and memory limit; `failure(reason)` if the
    child dies.  Where there is no fork, `work()` runs here."""
    if not hasattr(os, "fork"):
        return work()
    read_end, write_end = os.pipe()
    pid = os.fork()
    if pid == 0:  # the child: never returns
        status = 1
        try:
            os.close(read_end)
            _limit_child()
            payload = pickle.dumps(work())
            with os.fdopen(write_end, "wb") as pipe:
                pipe.write(payload)
            status = 0
        finally:
            os._exit(status)
    os.close(write_end)
    try:
        with os.fdopen(read_end, "rb") as pipe:
            payload = pipe.read()
        _, status = os.waitpid(pid, 0)
        pid = 0
    finally:
        if pid:  # interrupted while waiting: the child must not outlive us
            os.kill(pid, signal.SIGKILL)
            os.waitpid(pid, 0)
    if os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0 and payload:
        return pickle.loads(payload)
    if os.WIFSIGNALED(status) and os.WTERMSIG(status) == signal.SIGALRM:
        return failure(f"took more than {CHILD_SECONDS} s to migrate")
    if os.WIFEXITED(status):
        return failure("the process migrating it failed")
    return failure("nested too deeply or too complex to parse (the parser ran out of stack or memory)")


def _limit_child() -> None:
    # Interrupts belong to the parent; the child just ends.
    for number in (signal.SIGINT, signal.SIGTERM, signal.SIGALRM):
        signal.signal(number, signal.SIG_DFL)
    # A crash is the parent's to report, in one line: no stack dumps on the user's terminal.
    faulthandler.disable()
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 2)
    os.close(devnull)
    signal.alarm(CHILD_SECONDS)
    try:
        import resource

        mapped = os.sysconf("SC_PAGE_SIZE") * int(open("/proc/self/statm").read().split()[0])
        limit = mapped + CHILD_MEMORY_BYTES
        resource.setrlimit(resource.RLIMIT_AS, (limit, resource.getrlimit(resource.RLIMIT_AS)[1]))
    except (ImportError, OSError, ValueError):
        pass  # no limit where the platform cannot say how much is mapped
