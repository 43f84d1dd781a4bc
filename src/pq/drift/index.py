"""The compat surface as drift asks it: the installed Paddle's index (pq.compat.surface,
cached per version) when there is one, else nothing and one line saying why, so that a drift
report (and the rebase report's drift section) never fails for want of Paddle.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from pq.compat import cache_dir
from pq.compat.coverage import Coverage, Status, Surface
from pq.errors import PqError


@dataclass(frozen=True)
class Loaded:
    surface: Surface | None
    note: str  # "paddle 3.3.1", or why there is no surface


def load(paddle_python: str | None = None, *, measure: bool = True,
         progress: Callable[[str], None] | None = None) -> Loaded:
    """The surface of the Paddle that `paddle_python` (None: pq's own interpreter) imports;
    `measure` False: only a surface already measured and cached (no minutes-long build
    inside another command's report)."""
    inst = None
    try:
        if not measure:
            if paddle_python is None and not _any_measured(cache_dir()):
                # Nothing measured on this machine: no need to find Paddle (its package
                # metadata alone is ~25 ms of a rebase) to say so.
                return Loaded(None, "the compat surface is not measured yet "
                                    "(`pq compat-surface` measures it once)")
            from pq.compat.probe import find_paddle

            inst = find_paddle(paddle_python)
            if not (cache_dir() / f"{inst.key}.json").is_file():
                return Loaded(None, f"the compat surface of Paddle {inst.version} is not "
                                    "measured yet (`pq compat-surface` measures it once)")
        # Loaded only here: a rebase with no measured surface never imports the scanner.
        from pq.compat import surface as surface_mod

        found: Surface = surface_mod.load_surface(paddle_python, progress=progress,
                                                  installed=inst)
    except (PqError, OSError) as exc:
        why = exc.render() if isinstance(exc, PqError) else str(exc)
        return Loaded(None, f"unavailable: {why}")
    return Loaded(found, f"paddle {found.paddle_version}")


def _any_measured(folder: Path) -> bool:
    try:
        return any(name.endswith(".json") for name in os.listdir(folder))
    except OSError:  # no cache folder yet
        return False


def coverage(surface: Surface | None, kind: str, name: str) -> Coverage:
    """How `name` (a use of `kind`, see pq.drift.extract.Use) stands against `surface`."""
    if surface is None:  # the report says why once (its note), not on every item
        return Coverage(name, kind, Status.UNKNOWN)
    if kind == "header":
        return surface.header(name)
    if kind in ("cxx", "macro"):
        return surface.cxx(name)
    if kind == "method":
        return surface.method(name)
    if kind == "python":
        return surface.python(name)
    return Coverage(name, kind, Status.UNKNOWN,
                    detail="a new or changed op schema: check its defaults (Paddle's "
                           "torch.ops ignores schema default arguments)")


def knows_method(surface: Surface | None, name: str) -> bool:
    """Whether the surface knows at::Tensor (or a base) declares `name`."""
    if surface is None:
        return False
    return surface.method(name).status in (Status.COVERED, Status.NOT_EXPORTED)
