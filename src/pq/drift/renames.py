"""Paddle-side renames: the known-renames table of compat entry points (data), the patch
lines that still spell an old name, and the text rewrite `pq fix-renames` commits.

Only the dotted spelling is matched (`paddle.compat.enable_torch_proxy(`); see docs/drift.md.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pq.model import patchfile
from pq.model.series import PATCHES_DIR
from pq.queue.files import Queue


@dataclass(frozen=True)
class Rename:
    old: str
    new: str
    since: str  # the Paddle release that has the new spelling


RENAMES = (
    Rename("paddle.compat.enable_torch_proxy", "paddle.enable_compat", "3.3"),
    Rename("paddle.compat.disable_torch_proxy", "paddle.disable_compat", "3.3"),
)


def _pattern(old: str) -> re.Pattern[str]:
    return re.compile(r"(?<![\w.])" + re.escape(old) + r"(?!\w)")


_PATTERNS = tuple((r, _pattern(r.old)) for r in RENAMES)


@dataclass(frozen=True)
class RenameHit:
    patch: str
    file: str
    line: int  # in the file as the patch leaves it
    old: str
    new: str

    def to_json(self) -> dict[str, object]:
        return {"patch": self.patch, "file": self.file, "line": self.line, "old": self.old,
                "new": self.new}


def hits(queue: Queue) -> list[RenameHit]:
    """Every line a patch adds that still spells an old name and that no later patch
    takes out again (a removed line of the same file with the same text), in series order."""
    found: list[tuple[RenameHit, str]] = []
    for entry in queue.series.patches:
        data = queue.files[entry.name]
        if not any(r.old.encode() in data for r in RENAMES):
            continue  # no line of it can spell an old name, or take out one that does
        pf = patchfile.parse(data, f"{PATCHES_DIR}/{entry.name}")
        for f in pf.files:
            gone = [ln.text for ln in f.removed()]
            for i in reversed(range(len(found))):
                hit, text = found[i]
                if hit.file in (f.old, f.new) and text in gone:
                    gone.remove(text)
                    del found[i]
            found += [(RenameHit(entry.name, f.path, ln.number, r.old, r.new), ln.text)
                      for ln in f.added() for r, pattern in _PATTERNS
                      if pattern.search(ln.text)]
    return [hit for hit, _ in found]


def respell(data: bytes) -> bytes:
    """`data` with every old spelling replaced by the new one (other bytes unchanged)."""
    text = data.decode("utf-8", "surrogateescape")
    for r, pattern in _PATTERNS:
        text = pattern.sub(r.new, text)
    return text.encode("utf-8", "surrogateescape")
