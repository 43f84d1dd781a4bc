"""A git diff as data: each file's paths, status and modes (`FileDiff`), its hunks
(`Hunk`) and their lines (`Line`), each line with its numbers in the old and new file.
`pq.model.diff` reads them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

STATUSES = ("added", "deleted", "renamed", "copied", "modified")


class Line(NamedTuple):  # a tuple: a long diff makes millions (a dataclass: 5x the time)
    kind: str  # "+" added, "-" removed, " " context
    text: str  # the line without its newline, UTF-8 (bytes that are not become U+FFFD)
    raw: bytes  # the line's exact bytes, without its newline
    old: int | None  # its number in the old file (None for an added line)
    new: int | None  # its number in the new file (None for a removed line)

    @property
    def added(self) -> bool:
        return self.kind == "+"

    @property
    def removed(self) -> bool:
        return self.kind == "-"

    @property
    def number(self) -> int:
        """The line's number in the new file, or in the old one for a removed line."""
        return self.new if self.new is not None else (self.old or 0)


@dataclass(frozen=True)
class Hunk:
    old_start: int
    old_count: int
    new_start: int
    new_count: int
    lines: tuple[Line, ...]

    def post(self) -> tuple[Line, ...]:
        """The hunk's lines of the new file (context and added), in order."""
        return tuple(ln for ln in self.lines if ln.kind != "-")


@dataclass(frozen=True)
class FileDiff:
    old: str | None  # the old file's path; None for an added file
    new: str | None  # the new file's path; None for a deleted file
    status: str  # one of STATUSES
    binary: bool
    old_mode: str | None
    new_mode: str | None
    hunks: tuple[Hunk, ...]

    @property
    def path(self) -> str:
        """The patched file's path (the old path for a deletion), as `git apply --numstat`."""
        return self.new or self.old or ""

    @property
    def old_path(self) -> str | None:
        """The old path when it differs from `path` (a rename or a copy)."""
        return self.old if self.old is not None and self.old != self.path else None

    @property
    def created(self) -> bool:
        return self.status == "added"

    @property
    def deleted(self) -> bool:
        return self.status == "deleted"

    def added(self) -> list[Line]:
        return [ln for h in self.hunks for ln in h.lines if ln.kind == "+"]

    def removed(self) -> list[Line]:
        return [ln for h in self.hunks for ln in h.lines if ln.kind == "-"]
