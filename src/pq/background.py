"""Work done in a thread of its own while the caller goes on: a `git status` while a
rebase reads its stack, its `git log` of the upstream range while it builds its state, a
drift scan while a landing checks files out.

The work's result, or the error it raised, is handed over when the caller asks for it.
Work run this way must change nothing a kill could leave half done: only the main thread
has fault checkpoints (pq.faults), and before a fault fires every running piece of work
is waited for, so that no git process of theirs still holds a lock (`git status` holds
`index.lock` while it refreshes the index) when pq is killed or a test's command runs.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from pq import faults

T = TypeVar("T")

_running: set[Background[Any]] = set()
_running_lock = threading.Lock()


class Background(Generic[T]):
    """`work()` in a daemon thread named `name`, started at once (run here and now when no
    thread can be had). As a context manager, leaving waits for it (its error is then
    kept, not raised)."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._work: Callable[[], T] | None = work  # let go once it ran (what it held too)
        self._outcome: tuple[bool, T | BaseException] | None = None
        self._thread: threading.Thread | None = threading.Thread(
            target=self._run, daemon=True, name=name)
        # Known to a waiting fault only once started: another thread of pq's may wait for
        # every running piece of work meanwhile, and a thread not started cannot be joined.
        with _running_lock:  # (the work's own end waits here to leave the set)
            try:
                self._thread.start()
            except RuntimeError:  # no thread to be had (a process or memory limit)
                self._thread = None
            else:
                _running.add(self)
        if self._thread is None:
            self._run()

    def _run(self) -> None:
        work, self._work = self._work, None
        assert work is not None, "a Background's work runs once"
        try:
            self._outcome = (True, work())
        except BaseException as exc:  # handed to the caller by result()
            self._outcome = (False, exc)
        finally:
            del work  # what the work held (a repository, say) is let go
            with _running_lock:
                _running.discard(self)

    def wait(self) -> None:
        """Until the work ended."""
        if self._thread is not None:
            self._thread.join()

    def result(self) -> T:
        """The work's result; its error raised here."""
        self.wait()
        assert self._outcome is not None
        done, value = self._outcome
        if not done:
            assert isinstance(value, BaseException)
            raise value
        return value  # type: ignore[return-value]

    def __enter__(self) -> Background[T]:
        return self

    def __exit__(self, *exc: object) -> None:
        self.wait()


def _wait_running() -> None:
    with _running_lock:
        running = list(_running)
    for work in running:
        work.wait()


faults.set_before_fault(_wait_running)
