"""Fault injection: kill pq at a chosen step, to prove that no step can lose work.

Every place where pq changes something on disk (a git command, an object or file write)
is a checkpoint. With PQ_FAULT_AT=N in the environment, pq SIGKILLs itself at the Nth
checkpoint; PQ_FAULT_LOG=FILE appends each checkpoint's label, to count them first.
With PQ_FAULT_RUN=CMD as well, pq runs the shell command CMD at that checkpoint and goes on
instead (tests use it to change the repository, say `git commit`, while pq works); its
output goes to pq's stderr. (This module sits just above pq.process, below pq.git.)
"""

from __future__ import annotations

import os
import signal
import sys

from pq import process

_count = 0


def checkpoint(label: str) -> None:
    global _count
    at = os.environ.get("PQ_FAULT_AT")
    log = os.environ.get("PQ_FAULT_LOG")
    if not at and not log:
        return
    _count += 1
    if log:
        with open(log, "a") as f:
            f.write(f"{_count} {label}\n")
    if at and _count == int(at):
        run = os.environ.get("PQ_FAULT_RUN")
        if run:
            done = process.run(["/bin/sh", "-c", run], timeout=600)  # a test's own command
            sys.stderr.write(done.stdout.decode("utf-8", "replace"))
        else:
            os.kill(os.getpid(), signal.SIGKILL)
