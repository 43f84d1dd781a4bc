"""A parsed diff applied to a file's bytes in memory, only where `git apply` would agree.

`git apply` (no fuzz, no whitespace fixing) first tries each hunk at the line it names, a
hunk starting at line 0 or 1 only at the beginning and one without trailing context only at
the end. When every hunk's old lines stand exactly there, git applies them there, and so
does `apply_hunks`; anything else (a hunk that moved, a missing final newline) is None and
the caller asks git, as it does for a diff that is not `plain` (a rename, a mode, an odd
name). The hunks come from the one diff reader, pq.model.diff.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pq.errors import ConfigError
from pq.model import diff as diffs
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


_INDEX = re.compile(rb"index [0-9a-f]{7,64}\.\.[0-9a-f]{7,64}( 100644| 100755)?")
_NEW_INDEX = re.compile(rb"index 0{7,64}\.\.[0-9a-f]{7,64}")
_PLAIN_NAME = re.compile(rb"[\x21-\x5b\x5d-\x7e ]+")  # printable ASCII but `\\`; no empty part
_PATCH_LIKE = re.compile(rb"(?m)^(?:[-+@]|diff |Binary |GIT binary )")


def plain(diff: bytes) -> bool:
    """Whether `diff` has only the plain shape `git format-patch` writes for text files
    modified in place or added: per file exactly `diff --git a/P b/P`, an optional `new
    file mode` and `index` line, `--- a/P` (or `/dev/null`), `+++ b/P`, hunks, nothing git
    could read as another patch around them, names of printable ASCII whose every part git
    accepts (not empty, `.`, `..`, `.git...`, `git~...`). Else `git apply` judges."""
    sections = diffs.split_sections(diff)
    if sections and not sections[0].startswith(b"diff --git ") and _PATCH_LIKE.search(
            sections[0]):
        return False  # a diffstat before the diff is fine; lines git reads as a patch are not
    for section in sections:
        if not section.startswith(b"diff --git "):
            continue
        lines = section.split(b"\n")
        i = next((k for k, ln in enumerate(lines) if ln.startswith(b"@@ ")), len(lines))
        head = lines[:i]
        m = re.fullmatch(rb"diff --git a/([^\t\n\"]+) b/([^\t\n\"]+)", head[0])
        if not m or m.group(1) != m.group(2) or i == len(lines):
            return False
        name = m.group(1)
        if not all(_PLAIN_NAME.fullmatch(part) and part not in (b".", b"..")
                   and not part.lower().startswith((b".git", b"git~"))
                   for part in name.split(b"/")):
            return False  # a name git might refuse or read otherwise (`invalid path`)
        rest = head[1:]
        if rest and rest[0] in (b"new file mode 100644", b"new file mode 100755"):
            rest, old, index = rest[1:], b"--- /dev/null", _NEW_INDEX
        else:
            old, index = b"--- a/" + name, _INDEX
        if rest and index.fullmatch(rest[0]):
            rest = rest[1:]
        if rest != [old, b"+++ b/" + name]:
            return False
        try:
            end = i + diffs.section_hunks(lines, i, None, None)[1]
        except ConfigError:
            return False
        if any(ln != b"-- " and _PATCH_LIKE.match(ln) for ln in lines[end:]):
            return False
    return True
