"""Fault injection: kill pq at a chosen step, to prove that no step can lose work.

Every place where pq changes something on disk (a git command, an object or file write)
is a checkpoint. With PQ_FAULT_AT=N in the environment, pq SIGKILLs itself at the Nth
checkpoint; PQ_FAULT_LOG=FILE appends each checkpoint's label, to count them first.
With PQ_FAULT_RUN=CMD as well, pq runs the shell command CMD at that checkpoint and goes on
instead (tests use it to change the repository, say `git commit`, while pq works); its
output goes to pq's stderr. Only the main thread has checkpoints: the threads pq starts
(a rebase's `git status` while it reads its stack and its `git log` of the upstream
range while it builds its state, a snapshot's look at a conflict, `--continue`'s
`git diff --numstat` beside its `--check`, the drift scan alongside a landing, the
pre-push checks) change nothing a kill could leave half done,
and counting their steps would make the numbering depend on timing (nor has a forked
child: the push's audit, see pq.git.forked); before a fault fires, all but the
pre-push checks are waited for (pq.background), so that none of their git processes
still holds a lock (`git status` refreshing the index) at that moment. This module
starts no process itself: pq.git.process, the one place that does, registers the runner
for PQ_FAULT_RUN when it loads (every checkpoint is reached through the git layer or
after it has loaded).
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable

_count = 0
_shell: Callable[[str], bytes] | None = None  # runs PQ_FAULT_RUN's command; its output
_before_fault: Callable[[], None] | None = None  # waits for pq's threads (pq.background)


def set_shell(run: Callable[[str], bytes]) -> None:
    global _shell
    _shell = run


def set_before_fault(wait: Callable[[], None]) -> None:
    global _before_fault
    _before_fault = wait


def checkpoint(label: str) -> None:
    global _count
    at = os.environ.get("PQ_FAULT_AT")
    log = os.environ.get("PQ_FAULT_LOG")
    if not at and not log or threading.current_thread() is not threading.main_thread():
        return
    _count += 1
    if log:
        with open(log, "a") as f:
            f.write(f"{_count} {label}\n")
    if at and _count == int(at):
        if _before_fault is not None:
            _before_fault()  # no git process of pq's threads is left holding a lock
        run = os.environ.get("PQ_FAULT_RUN")
        if run:
            if _shell is None:
                raise RuntimeError("PQ_FAULT_RUN reached before pq.git.process loaded")
            sys.stderr.write(_shell(run).decode("utf-8", "replace"))  # a test's own command
        else:
            os.kill(os.getpid(), signal.SIGKILL)
