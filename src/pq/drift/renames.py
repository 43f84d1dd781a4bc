"""Paddle-side renames: the known-renames table of compat entry points (data), the patch
lines that still spell an old name, and the text rewrite `pq fix-renames` commits.

Only the dotted spelling is matched (`paddle.compat.enable_torch_proxy(`); see docs/drift.md.
"""

from __future__ import annotations

import re
from collections.abc import Collection
from dataclasses import dataclass, field, replace

from pq.model import layers, patchfile
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
    file: str  # where the line is at the end of the series (a later patch may rename it)
    line: int  # in the file as the patch leaves it
    old: str
    new: str
    text: str = field(default="", compare=False)  # the line, as the patch adds it

    def to_json(self) -> dict[str, object]:
        return {"patch": self.patch, "file": self.file, "line": self.line, "old": self.old,
                "new": self.new}


def hits(queue: Queue) -> list[RenameHit]:
    """Every line a patch adds that still spells an old name and that no later patch
    takes out again (a removed line of the same file with the same text, or the file
    deleted), in series order; a file a later patch renames is named as renamed."""
    found: list[RenameHit] = []
    for entry in queue.series.patches:
        data = queue.files[entry.name]
        moves = found and (b"\nrename from " in data or b"\ndeleted file mode " in data)
        if not moves and not any(r.old.encode() in data for r in RENAMES):
            continue  # it can spell no old name, take out none, and move no hit's file
        pf = patchfile.parse(data, f"{PATCHES_DIR}/{entry.name}")
        for f in pf.files:
            gone = [ln.text for ln in f.removed()]
            for i in reversed(range(len(found))):
                hit = found[i]
                if hit.file in (f.old, f.new) and hit.text in gone:
                    gone.remove(hit.text)
                    del found[i]
                elif hit.file == f.old and f.new is None:  # the file is deleted
                    del found[i]
                elif hit.file == f.old and f.status == "renamed" and f.new is not None:
                    found[i] = replace(hit, file=f.new)
            found += [RenameHit(entry.name, f.path, ln.number, r.old, r.new, ln.text)
                      for ln in f.added() for r, pattern in _PATTERNS
                      if pattern.search(ln.text)]
    # Documentation is prose (a migration note names the old spelling), where the series
    # leaves the file: a draft a later patch moves to code counts, code moved to docs not.
    return [hit for hit in found if not layers.is_doc(hit.file)]


def respell(data: bytes, numbers: Collection[int] | None = None) -> bytes:
    """`data` with every old spelling replaced by the new one (other bytes unchanged); with
    `numbers`, only on those lines (1-based, as git numbers them: the patches' own lines,
    not upstream's lines of the same file, whatever their text)."""
    out = []
    for number, line in enumerate(data.split(b"\n"), start=1):
        if numbers is None or number in numbers:
            text = line.decode("utf-8", "surrogateescape")
            for r, pattern in _PATTERNS:
                text = pattern.sub(r.new, text)
            line = text.encode("utf-8", "surrogateescape")
        out.append(line)
    return b"\n".join(out)
