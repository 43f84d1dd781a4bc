"""Copies of upstream files: a file a patch adds that is mostly identical to an upstream
file of the same name (Paddle copies of upstream tests, say) gets a proposed `copies:`
declaration, so that `pq drift` can report the copy stale when upstream changes the origin.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from difflib import SequenceMatcher

from pq.git.repo import Git
from pq.model import diff as diffs
from pq.model import patchfile
from pq.model.series import PATCHES_DIR
from pq.queue.files import Queue

SIMILAR = 0.6  # the share of matching lines from which a new file counts as a copy


@dataclass(frozen=True)
class CopyProposal:
    patch: str
    copy: str  # the file the patch adds
    origin: str  # the upstream file (in the series base) it is mostly identical to
    similarity: float  # difflib's ratio of their lines, 0..1

    def declaration(self) -> str:
        return f"copies: {{{self.copy}: {self.origin}}}"

    def to_json(self) -> dict[str, object]:
        return {"patch": self.patch, "copy": self.copy, "origin": self.origin,
                "similarity": round(self.similarity, 2), "declaration": self.declaration()}


def propose(git: Git, queue: Queue) -> list[CopyProposal]:
    """For each text file a patch adds, the base's file of the same name it is most like,
    when at least SIMILAR of their lines match and the entry does not declare it yet."""
    adding = [e for e in queue.series.patches if b"\nnew file mode " in queue.files[e.name]]
    if not adding:
        return []  # no patch adds a file: no need to read the base's files
    by_name: dict[str, list[tuple[str, str]]] = {}
    for _mode, kind, obj, path in git.ls_tree(queue.series.base):
        if kind == "blob":
            by_name.setdefault(path.rsplit("/", 1)[-1], []).append((path, obj))
    added = []
    for entry in adding:
        # Only the hunks of an added file that has a namesake in the base are read.
        wanted = _namesakes(entry.copies or {}, by_name)
        pf = patchfile.parse(queue.files[entry.name], f"{PATCHES_DIR}/{entry.name}")
        added += [(entry.name, f.path, [ln.text for ln in f.added()])
                  for f in diffs.parse(pf.diff, pf.source, wanted, pf.diff_line)
                  if f.created and not f.binary and wanted(f.path, b"")]
    found = []
    for patch, path, lines in added:
        best: tuple[float, str] | None = None
        for origin, obj in by_name.get(path.rsplit("/", 1)[-1], []):
            theirs = git.blob(obj).decode("utf-8", "replace").split("\n")
            if theirs and theirs[-1] == "":
                theirs.pop()
            ratio = SequenceMatcher(None, lines, theirs, autojunk=False).ratio()
            if ratio >= SIMILAR and (best is None or ratio > best[0]):
                best = (ratio, origin)
        if best is not None:
            found.append(CopyProposal(patch, path, best[1], best[0]))
    return found


def _namesakes(declared: dict[str, str], by_name: dict[str, list[tuple[str, str]]]
               ) -> Callable[[str, bytes], bool]:
    """Whether a file a patch adds may be a copy: not declared one, and named as a file of
    the base is."""
    return lambda path, _section: path not in declared and path.rsplit("/", 1)[-1] in by_name
