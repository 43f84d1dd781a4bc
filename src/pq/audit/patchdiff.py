"""A patch's diff as the rules see it: per file, the post-image lines each hunk shows.

Added lines carry their line number in the patched file, so findings can point at
`path:line`. Only text hunks are read; binary sections give a file with no lines.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pq.model.patchfile import split_sections, unquote_path

_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_PATH = re.compile(rb"^(---|\+\+\+) (.*)$")
_GIT_LINE = re.compile(rb'^diff --git (?:"?a/)(.*?)"? (?:"?b/)(.*?)"?$')


@dataclass(frozen=True)
class Line:
    number: int  # the line's number in the patched file
    text: str
    added: bool


@dataclass(frozen=True)
class FileDiff:
    path: str  # the patched file's path (the old path for a deletion)
    old_path: str | None
    created: bool
    deleted: bool
    binary: bool
    hunks: tuple[tuple[Line, ...], ...]

    def added(self) -> list[Line]:
        return [ln for hunk in self.hunks for ln in hunk if ln.added]


def parse(diff: bytes) -> list[FileDiff]:
    """Every file section of a git diff; sections that are not `diff --git` are ignored."""
    return [f for f in (_section(s) for s in split_sections(diff)) if f is not None]


def _section(section: bytes) -> FileDiff | None:
    lines = section.split(b"\n")
    if not lines or not lines[0].startswith(b"diff --git "):
        return None
    old: str | None = None
    new: str | None = None
    created = deleted = binary = False
    m = _GIT_LINE.match(lines[0])
    if m:
        old, new = unquote_path(m.group(1)), unquote_path(m.group(2))
    i = 1
    while i < len(lines) and not lines[i].startswith(b"@@ "):
        ln = lines[i]
        pm = _PATH.match(ln)
        if pm:
            value = pm.group(2).rstrip(b"\t")
            if value == b"/dev/null":
                created, deleted = (True, deleted) if pm.group(1) == b"---" else (created, True)
            else:
                path = _strip_prefix(unquote_path(value))
                if pm.group(1) == b"---":
                    old = path
                else:
                    new = path
        elif ln.startswith(b"rename from "):
            old = unquote_path(ln[len(b"rename from "):])
        elif ln.startswith(b"rename to "):
            new = unquote_path(ln[len(b"rename to "):])
        elif ln.startswith(b"new file mode"):
            created = True
        elif ln.startswith(b"deleted file mode"):
            deleted = True
        elif ln.startswith((b"GIT binary patch", b"Binary files ")):
            binary = True
        i += 1
    path = (old if deleted else new) or old or ""
    hunks = [] if binary else _hunks(lines[i:])
    return FileDiff(path=path, old_path=old if old != path else None, created=created,
                    deleted=deleted, binary=binary, hunks=tuple(hunks))


def _hunks(lines: list[bytes]) -> list[tuple[Line, ...]]:
    hunks: list[tuple[Line, ...]] = []
    i = 0
    while i < len(lines):
        m = _HUNK.match(lines[i])
        i += 1
        if not m:
            continue
        old_left = int(m.group(2)) if m.group(2) is not None else 1
        new_left = int(m.group(4)) if m.group(4) is not None else 1
        number = int(m.group(3))
        hunk: list[Line] = []
        while i < len(lines) and (old_left > 0 or new_left > 0):
            raw = lines[i]
            i += 1
            tag, body = raw[:1], raw[1:].decode("utf-8", "replace")
            if tag == b"+":
                hunk.append(Line(number, body, True))
                number += 1
                new_left -= 1
            elif tag == b" " or raw == b"":
                hunk.append(Line(number, body, False))
                number += 1
                new_left -= 1
                old_left -= 1
            elif tag == b"-":
                old_left -= 1
            elif tag != b"\\":
                break
        hunks.append(tuple(hunk))
    return hunks


def _strip_prefix(path: str) -> str:
    return path[2:] if path.startswith(("a/", "b/")) else path
