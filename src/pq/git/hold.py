"""Ctrl-C around the git processes of a command that changes the repository: git runs in
a process group of its own and is never stopped half way; pq's own Ctrl-C takes effect
between two git commands, and a second one stops git too (see `held`).
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator

from pq.git.process import feed


class Hold:
    """What `held` holds: whether it is active, the git process it runs, the Ctrl-Cs seen."""

    def __init__(self, active: bool) -> None:
        self.active = active
        self.child: subprocess.Popen[bytes] | None = None
        self.caught = 0
        self.stopping: float | None = None  # when a second Ctrl-C asked git to stop

    def communicate(self, proc: subprocess.Popen[bytes], input: bytes | None
                    ) -> tuple[bytes, bytes]:
        """`proc.communicate(input)`, waking every quarter second while active, to run the
        Ctrl-C handler (it runs in the main thread, between two of its steps: a Ctrl-C the
        kernel gave another thread does not end the wait) and to kill git's process group
        when it is still there a second after a second Ctrl-C asked it to stop (a process
        that traps SIGINT, or one started just after it came)."""
        if self.active and input is not None:
            feed(proc, input)  # its waits time out: `communicate` would stop writing
            input = None
        while True:
            try:
                return proc.communicate(input, timeout=0.25 if self.active else None)
            except subprocess.TimeoutExpired:
                input = None  # the output read so far is kept
                if self.stopping is not None and time.monotonic() - self.stopping > 1.0:
                    with contextlib.suppress(OSError):
                        os.killpg(proc.pid, signal.SIGKILL)

    def interrupted(self, _number: int, _frame: object) -> None:
        self.caught += 1
        if self.caught > 1 and self.child is not None:  # asked again: stop git too, as a
            self.stopping = self.stopping or time.monotonic()  # Ctrl-C always did (a hook
            with contextlib.suppress(OSError):  # may be stopped, reading the terminal)
                os.killpg(self.child.pid, signal.SIGINT)
                os.killpg(self.child.pid, signal.SIGCONT)


@contextlib.contextmanager
def held(holding: bool, moves_files: bool = False) -> Iterator[Hold]:
    """While `holding` (a command that changes the repository runs) and in the main thread:
    the git process of the block runs in a process group of its own, which the terminal's
    Ctrl-C does not reach, and pq's own Ctrl-C takes effect, as KeyboardInterrupt, once the
    block is done. git never stops half way through writing the index or the working tree
    (a checkout cut short leaves files that look like the user's edits); pq stops between
    two git commands, where its operation log can undo what it did. A second Ctrl-C stops
    git as well (a hook waiting on the terminal, which a process group in the background
    cannot read, would wait for ever). Where that git wrote files (`moves_files`) and did
    not finish, the KeyboardInterrupt says so (`pq_files_cut`): some files may hold what
    neither the old nor the new commit has."""
    hold = Hold(holding and threading.current_thread() is threading.main_thread())
    if not hold.active:
        yield hold
        return
    previous = signal.signal(signal.SIGINT, hold.interrupted)
    try:
        yield hold
    finally:
        signal.signal(signal.SIGINT, previous)
        if hold.caught:
            interrupt = KeyboardInterrupt()
            interrupt.pq_files_cut = (  # type: ignore[attr-defined]
                moves_files and hold.stopping is not None and hold.child is not None
                and hold.child.returncode != 0)
            raise interrupt


@contextlib.contextmanager
def terminate_as_interrupt() -> Iterator[None]:
    """A SIGTERM (a CI job cancelled, `timeout`), a SIGHUP (the terminal or the ssh session
    closed) or a SIGQUIT ends the block as a Ctrl-C does, so that what runs in it is stopped
    and cleaned up the same way (the gate's stage group, which runs in a session of its own
    and gets no hangup, its throwaway worktree); the default is to die at once, leaving
    them behind."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def interrupt(signum: int, frame: object) -> None:
        raise KeyboardInterrupt

    # Not one the caller ignores: `nohup pq gate &` runs on after a logout, as a shell's
    # background job runs on after Ctrl-\.
    caught = [signum for name in ("SIGTERM", "SIGHUP", "SIGQUIT")
              if (signum := getattr(signal, name, None)) is not None
              and signal.getsignal(signum) is not signal.SIG_IGN]
    previous = {signum: signal.signal(signum, interrupt) for signum in caught}
    try:
        yield
    finally:
        for signum, handler in previous.items():
            signal.signal(signum, handler)
