"""The compat surface as drift asks it: the installed Paddle's index when there is one
(pq.compat.surface, cached there), else nothing and one line saying why, so that a drift
report (and the rebase report's drift section) never fails for want of Paddle.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import cast

from pq.compat.coverage import Coverage, Status, Surface
from pq.errors import PqError


@dataclass(frozen=True)
class Loaded:
    surface: Surface | None
    note: str  # "paddle 3.3.1", or why there is no surface


def load(paddle_python: str | None = None) -> Loaded:
    """The surface of the Paddle that `paddle_python` (default: pq's toolchain probe) has."""
    try:
        module = importlib.import_module("pq.compat.surface")
    except ImportError:
        return Loaded(None, "the compat surface index is not part of this pq")
    try:
        surface = cast(Surface, module.load_surface(paddle_python))
    except (PqError, OSError) as exc:
        why = exc.render() if isinstance(exc, PqError) else str(exc)
        return Loaded(None, f"compat surface unavailable: {why}")
    return Loaded(surface, f"paddle {surface.paddle_version}")


def coverage(surface: Surface | None, kind: str, name: str) -> Coverage:
    """How `name` (a use of `kind`, see pq.drift.extract.Use) stands against `surface`."""
    if surface is None:  # the report says why once (`note`), not on every item
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
