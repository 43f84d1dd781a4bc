"""The rebase report: each patch's outcome and, range-diff style, how its file changed.

A patch file's change across a rebase is the unified diff between its old and new bytes,
cut down to hunk headers and changed lines. Pure data and text; never runs git.
"""

from __future__ import annotations

import difflib
from dataclasses import dataclass, field

MAX_LINES = 200
OUTCOMES = ("clean", "merged", "dropped", "conflict", "skipped")


@dataclass
class PatchReport:
    name: str
    layer: str
    outcome: str  # one of OUTCOMES, or `pending` for patches after a conflict stop
    rerere: bool = False  # resolved from a resolution git rerere recorded earlier
    upstream_commit: str | None = None  # for `dropped`: the upstream commit carrying it
    upstream_subject: str | None = None
    commit: str | None = None  # the rebased commit
    changed: bool = False  # the patch file's bytes changed
    range_diff: list[str] = field(default_factory=list)


@dataclass
class RebaseReport:
    status: str  # done, up-to-date, conflict, aborted
    branch: str
    upstream_ref: str
    old_base: str
    onto: str
    upstream_count: int
    orig_head: str
    head: str | None = None
    patches: list[PatchReport] = field(default_factory=list)
    conflict: PatchReport | None = None
    conflict_paths: list[str] = field(default_factory=list)
    gate: bool = False  # the rebase was started with --gate


def summary(old: bytes, new: bytes, max_lines: int = MAX_LINES) -> list[str]:
    """Changed lines of `old` -> `new` (`@@` headers, `-` and `+` lines); [] when equal."""
    if old == new:
        return []
    a = old.decode("utf-8", "replace").splitlines()
    b = new.decode("utf-8", "replace").splitlines()
    lines = list(difflib.unified_diff(a, b, lineterm="", n=0))[2:]  # drop the ---/+++ pair
    return trim(lines, max_lines)


def trim(lines: list[str], max_lines: int) -> list[str]:
    """The first `max_lines` of a summary, and a line saying how many were left out."""
    if len(lines) <= max_lines:
        return lines
    rest = len(lines) - max_lines
    return lines[:max_lines] + [f"... {rest} more line{'s' if rest != 1 else ''}"]
