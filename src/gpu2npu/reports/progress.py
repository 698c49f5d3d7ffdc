"""A one-line progress display for long runs: files done/total, rate and time left.

Files differ in size a thousandfold, so the time left is estimated from the bytes done, and
only once it means something (a few seconds in, a twentieth of the bytes done); a caller that
does not know the bytes gets no estimate.

Shown only when standard error is a terminal (a CI log or a pipe gets no carriage-return
noise), redrawn at most a few times a second, and erased when the run ends.
"""
from __future__ import annotations

import sys
import time
from typing import Optional, TextIO

REDRAW_EVERY = 0.2  # seconds


class ProgressLine:
    def __init__(self, stream: Optional[TextIO] = None, enabled: Optional[bool] = None) -> None:
        self.stream = stream if stream is not None else sys.stderr
        self.enabled = self.stream.isatty() if enabled is None else enabled
        self.started = time.monotonic()
        self._drawn_at = 0.0
        self._width = 0

    def __call__(self, done: int, total: int, done_bytes: Optional[int] = None,
                 total_bytes: Optional[int] = None) -> None:
        if not self.enabled:
            return
        now = time.monotonic()
        if done < total and now - self._drawn_at < REDRAW_EVERY:
            return
        self._drawn_at = now
        self._draw(format_progress(done, total, now - self.started, done_bytes, total_bytes))

    def _draw(self, text: str) -> None:
        padding = " " * max(0, self._width - len(text))
        self.stream.write(f"\r{text}{padding}")
        self.stream.flush()
        self._width = len(text)

    def close(self) -> None:
        if self.enabled and self._width:
            self.stream.write("\r" + " " * self._width + "\r")
            self.stream.flush()
            self._width = 0


# an estimate of the time left is shown only after this long and this share of the bytes
MEANINGFUL_AFTER = 3.0  # seconds
MEANINGFUL_SHARE = 0.05


def format_progress(done: int, total: int, elapsed: float, done_bytes: Optional[int] = None,
                    total_bytes: Optional[int] = None) -> str:
    rate = done / elapsed if elapsed > 0 else 0.0
    text = f"gpu2npu: {done}/{total} Python files, {rate:.1f} files/s"
    if (done_bytes and total_bytes and 0 < done < total and elapsed >= MEANINGFUL_AFTER
            and done_bytes >= MEANINGFUL_SHARE * total_bytes):
        left = int((total_bytes - done_bytes) / (done_bytes / elapsed))
        text += f", about {left // 60}:{left % 60:02d} left"
    return text
