"""Pure Python work in a forked child of pq's, off this process's interpreter lock.

The pre-push checks' audit (pq.push.registry) is Python reading what pq holds already;
in a thread it takes turns with the checks beside it on one interpreter lock, in a child
it runs on a core of its own. (A rebase's drift scan forked so, measured side by side
with its thread on a 10-patch rebase, gained nothing: 0.271 s against 0.262 s, medians of
11 alternating rounds; it stays a thread.) Where a
child cannot be had safely, `forked` says so and the caller uses a thread.
"""

from __future__ import annotations

import contextlib
import os
import signal
import sys
import threading
from collections.abc import Callable
from typing import Generic, TypeVar

from pq.git.process import exit_detail, usable_cores

T = TypeVar("T")


class Forked(Generic[T]):
    """A function's call running in a forked child (see `forked`): `result` waits for it."""

    def __init__(self, pid: int, reading: int) -> None:
        self.pid = pid
        self._reading = reading
        self._ended = False

    def result(self) -> T:
        """What the call returned; what it raised (a KeyboardInterrupt: the child's own
        Ctrl-C), or a RuntimeError where the child died without an answer."""
        import pickle

        with open(self._reading, "rb", closefd=True) as answer:
            data = answer.read()
        status = self._reap()
        try:
            ok, value = pickle.loads(data)
        except Exception:  # nothing, or a torn answer: the child was killed
            detail = exit_detail(os.waitstatus_to_exitcode(status))
            raise RuntimeError(f"a forked pq child ended without an answer ({detail})"
                               ) from None
        if ok:
            return value  # type: ignore[no-any-return]
        raise value

    def kill(self) -> None:
        """SIGKILL the child, whose `result` (waited for elsewhere) then ends at once."""
        if not self._ended:
            with contextlib.suppress(ProcessLookupError):
                os.kill(self.pid, signal.SIGKILL)

    def cancel(self) -> None:
        """Kill the child and forget its answer (a verdict that became moot), where no
        `result` waits for it."""
        if self._ended:
            return
        self.kill()
        with contextlib.suppress(OSError):
            os.close(self._reading)
        self._reap()

    def _reap(self) -> int:
        if self._ended:
            return 0
        self._ended = True
        return os.waitpid(self.pid, 0)[1]


def forked(fn: Callable[[], T]) -> Forked[T] | None:
    """`fn()` started in a forked child, beside this process: pure Python work (reading
    data this process holds already) that would otherwise take turns on one interpreter
    lock with the work beside it. Its value, or what it raised (with the child's traceback
    as a note), comes back pickled through a pipe. None where a child would not pay or is
    not safe: no `os.fork`, one usable core, another thread running (a lock it held would
    stay held in the child), or no process or pipe to be had; the caller runs `fn` itself
    then. Ctrl-C and SIGTERM wait while the child is made (one landing in the child before
    it is on its own would run this process's code there). The child has no fault
    checkpoints, as a thread has none, dies with this process (Linux), and ends with
    `os._exit` (no atexit handlers, no flush of buffers it shares with this process);
    `fn` must not use this process's pipes to its own children (`ObjectDB.after_fork`
    gives a repository's reader its own)."""
    if not hasattr(os, "fork") or usable_cores() < 2 or threading.active_count() > 1:
        return None
    import pickle

    parent = os.getpid()
    blocked = signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT, signal.SIGTERM})
    try:
        reading, writing = os.pipe()
        try:
            pid = os.fork()
        except OSError:
            os.close(reading)
            os.close(writing)
            raise
    except OSError:  # no process or pipe to be had (a limit, memory): the caller runs it
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
        return None
    if pid == 0:  # the child: whatever happens, it leaves through os._exit
        code = 0
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, blocked)
            _die_with(parent)
            os.close(reading)
            for name in ("PQ_FAULT_AT", "PQ_FAULT_LOG"):  # its steps are a thread's (pq.faults)
                os.environ.pop(name, None)
            try:
                answer = pickle.dumps((True, fn()))
            except BaseException as exc:
                import traceback

                exc.add_note(f"(in pq's forked child {os.getpid()}:)\n"
                             + traceback.format_exc().rstrip())
                try:
                    answer = pickle.dumps((False, exc))
                    pickle.loads(answer)
                except Exception:  # an exception that does not travel: its words do
                    answer = pickle.dumps((False, RuntimeError(f"{type(exc).__name__}: "
                                                               f"{exc}")))
            with open(writing, "wb", closefd=True) as out:
                out.write(answer)
        except BaseException:
            code = 1
        finally:
            os._exit(code)
    os.close(writing)
    handle: Forked[T] = Forked(pid, reading)
    try:
        signal.pthread_sigmask(signal.SIG_SETMASK, blocked)  # a Ctrl-C held back lands here
    except BaseException:
        handle.cancel()
        raise
    return handle


def _die_with(parent: int) -> None:
    """In the child: on Linux, SIGKILL it when pq dies (a pq killed outright left its child
    working on, holding pq's stdout and stderr open for as long as its work lasted)."""
    if not sys.platform.startswith("linux"):
        return
    try:
        import ctypes

        ctypes.CDLL(None).prctl(1, signal.SIGKILL)  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        return
    if os.getppid() != parent:  # pq died before that: the work is nobody's now
        os._exit(1)
