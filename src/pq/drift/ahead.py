"""A drift scan computed in a thread while the caller goes on (a rebase landing, say).

Kept apart from `pq.drift.scan` so that starting one costs the caller nothing but a thread:
the scan's modules are imported in that thread, alongside the caller's own work (a
landing's checkout, which runs in git), not before it.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import TYPE_CHECKING

from pq.git.repo import Git

if TYPE_CHECKING:
    from pq.drift.index import Loaded
    from pq.drift.scan import RangeScan


class Ahead:
    """`scan.scan_range(git, old, new, load())` in a thread; `load` defaults to the compat
    surface as cached (never measured here). The thread uses only processes of its own
    (no object reader shared with the caller)."""

    def __init__(self, git: Git, old: str, new: str,
                 load: Callable[[], Loaded] | None = None) -> None:
        self._result: RangeScan | BaseException | None = None
        self._thread = threading.Thread(target=self._run, args=(git, old, new, load),
                                        daemon=True, name="pq drift scan")
        self._thread.start()

    def _run(self, git: Git, old: str, new: str, load: Callable[[], Loaded] | None) -> None:
        try:
            from pq.drift import index, scan

            surface = load() if load is not None else index.load(measure=False)
            self._result = scan.scan_range(git, old, new, surface)
        except BaseException as exc:  # handed to the caller by result()
            self._result = exc

    def wait(self) -> None:
        """Until the scan ended (its result, or its error, is then kept, not raised)."""
        self._thread.join()

    def result(self) -> RangeScan:
        self._thread.join()
        if isinstance(self._result, BaseException):
            raise self._result
        assert self._result is not None
        return self._result
