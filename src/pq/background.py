"""Work done in a thread of its own while the caller goes on: a `git status` while a
rebase reads its stack, a drift scan while a landing checks files out.

The work's result, or the error it raised, is handed over when the caller asks for it.
Work run this way must change nothing a kill could leave half done: only the main thread
has fault checkpoints (pq.faults).
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

T = TypeVar("T")


class Background(Generic[T]):
    """`work()` in a daemon thread named `name`, started at once. As a context manager,
    leaving waits for it (its error is then kept, not raised)."""

    def __init__(self, work: Callable[[], T], name: str) -> None:
        self._work = work
        self._outcome: tuple[bool, T | BaseException] | None = None
        self._thread = threading.Thread(target=self._run, daemon=True, name=name)
        self._thread.start()

    def _run(self) -> None:
        try:
            self._outcome = (True, self._work())
        except BaseException as exc:  # handed to the caller by result()
            self._outcome = (False, exc)

    def wait(self) -> None:
        """Until the work ended."""
        self._thread.join()

    def result(self) -> T:
        """The work's result; its error raised here."""
        self._thread.join()
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
