"""Waiting on real processes in tests: whether one is gone, a polled condition, the pid a
child wrote to a file."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path


def gone(pid: int) -> bool:
    """Not running: no such process, or a zombie (a container's init may never reap)."""
    try:
        return "\nState:\tZ" in Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return True


def until(condition: Callable[[], bool], seconds: float = 10.0) -> bool:
    """Poll a condition until it holds or the deadline passes."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if condition():
            return True
        os.sched_yield()
    return condition()


def read_pid(path: Path) -> int:
    assert until(lambda: path.is_file() and path.read_text().strip() != "")
    return int(path.read_text())
