"""A parsed diff applied to a file's bytes in memory, only where `git apply` would agree.

`git apply` (no fuzz, no whitespace fixing) first tries each hunk at the line it names, a
hunk starting at line 0 or 1 only at the beginning and one without trailing context only at
the end. When every hunk's old lines stand exactly there, git applies them there, and so
does `apply_hunks`; anything else (a hunk that moved, a missing final newline) is None and
the caller asks git. The hunks come from the one diff reader, pq.model.diff.
"""

from __future__ import annotations

from collections.abc import Sequence

from pq.model.diff import Hunk


def apply_hunks(data: bytes, hunks: Sequence[Hunk]) -> bytes | None:
    """`data` with `hunks` applied at their own lines, or None when git might differ."""
    if data and not data.endswith(b"\n"):
        return None  # the last line has no newline: git's `\ No newline` rules apply
    lines = data.split(b"\n")[:-1] if data else []
    out: list[bytes] = []
    pos = 0  # lines[:pos] are done
    delta = 0  # new minus old lines so far
    for h in hunks:
        old = [ln.raw for ln in h.lines if ln.kind != "+"]
        new = [ln.raw for ln in h.lines if ln.kind != "-"]
        if len(old) != h.old_count or len(new) != h.new_count:
            return None
        start = h.old_start - 1 if h.old_count else h.old_start
        expected_new = h.new_start - 1 if h.new_count else h.new_start
        if start < pos or start + delta != expected_new:
            return None
        if h.old_start <= 1 and start != 0:
            return None  # git matches such a hunk only at the beginning
        trailing = 0
        for ln in reversed(h.lines):
            if ln.kind != " ":
                break
            trailing += 1
        end = start + len(old)
        if lines[start:end] != old or (trailing == 0 and end != len(lines)):
            return None  # not there, or (no trailing context) not at the end
        out += lines[pos:start]
        out += new
        pos = end
        delta += len(new) - len(old)
    out += lines[pos:]
    return b"".join(line + b"\n" for line in out)
