"""A drift scan computed in a thread while the caller goes on (a rebase landing, say).

Kept apart from `pq.drift.scan` so that starting one costs the caller nothing but a thread:
the scan's modules are imported in that thread, alongside the caller's own work (a
landing's checkout, which runs in git), not before it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from pq.background import Background
from pq.git.repo import Git

if TYPE_CHECKING:
    from pq.drift.index import Loaded
    from pq.drift.scan import RangeScan


def scan_ahead(git: Git, old: str, new: str, load: Callable[[], Loaded] | None = None
               ) -> Background[RangeScan]:
    """`scan.scan_range(git, old, new, load)` in a thread: the surface is loaded while git
    reads the range; `load` defaults to the compat surface as cached (never measured
    here). The thread reads the range through a process of its own; the few files a hunk
    inside an import block needs it reads through the shared object reader, which takes
    turns with the caller."""

    def work() -> RangeScan:
        from pq.drift import index, scan

        return scan.scan_range(git, old, new, load or (lambda: index.load(measure=False)))

    return Background(work, "pq drift scan")
