"""Range-diff style summaries: how a patch file changed across a rebase, in a few lines.

The unified diff between the old and the new bytes of one patch file, cut down to its hunk
headers and changed lines, so that a report shows what moved or changed and nothing else.
"""

from __future__ import annotations

import difflib

MAX_LINES = 200


def summary(old: bytes, new: bytes, max_lines: int = MAX_LINES) -> list[str]:
    """Changed lines of `old` -> `new` (`@@` headers, `-` and `+` lines); [] when equal."""
    if old == new:
        return []
    a = old.decode("utf-8", "replace").splitlines()
    b = new.decode("utf-8", "replace").splitlines()
    lines = list(difflib.unified_diff(a, b, lineterm="", n=0))[2:]  # drop the ---/+++ pair
    return trim(lines, max_lines)


def trim(lines: list[str], max_lines: int) -> list[str]:
    """The first `max_lines` of a summary, and how many were left out."""
    if len(lines) <= max_lines:
        return lines
    rest = len(lines) - max_lines
    return lines[:max_lines] + [f"... {rest} more line{'s' if rest != 1 else ''}"]
