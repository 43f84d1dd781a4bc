"""`pq drift OLD..NEW`: one pass over the upstream range's diffs gives the new framework API
(with its compat status), the files upstream changed; the queue gives the patches' files,
their declared copies and the old Paddle spellings they still carry.

The rules (which files, which names, what counts as new, what is risky) are in docs/drift.md.
"""

from __future__ import annotations

import posixpath
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from pq.background import Background
from pq.compat.coverage import Coverage, Status, Surface
from pq.drift import extract, index
from pq.drift.renames import RenameHit, hits
from pq.git.repo import Git
from pq.model import diff as diffs
from pq.model import patchfile
from pq.model.series import PATCHES_DIR
from pq.queue.files import Queue


@dataclass(frozen=True)
class Item:
    kind: str  # see pq.drift.extract.Use
    name: str
    file: str
    line: int
    commit: str  # the upstream commit that added the line
    status: Status
    header: str | None
    detail: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "name": self.name, "file": self.file, "line": self.line,
                "commit": self.commit, "status": self.status.value,
                "breaks": self.status.breaks, "header": self.header, "detail": self.detail}


@dataclass(frozen=True)
class StaleCopy:
    patch: str
    copy: str
    origin: str
    commits: tuple[str, ...]  # the upstream commits that changed the origin, oldest first
    diff: str  # upstream's diff of the origin, OLD..NEW

    def to_json(self) -> dict[str, Any]:
        return {"patch": self.patch, "copy": self.copy, "origin": self.origin,
                "commits": list(self.commits), "diff": self.diff}


@dataclass(frozen=True)
class Touched:
    file: str
    layer: str  # the layer of the (first) patch that changes it
    patches: tuple[str, ...]
    commits: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "layer": self.layer, "patches": list(self.patches),
                "commits": list(self.commits)}


@dataclass(frozen=True)
class DriftReport:
    old: str
    new: str
    commits: int
    surface: str  # "paddle 3.3.1", or why there was no surface to ask
    items: tuple[Item, ...] = ()
    stale: tuple[StaleCopy, ...] = ()
    touched: tuple[Touched, ...] = ()
    renames: tuple[RenameHit, ...] = ()
    asked: bool = False  # whether a compat surface was asked (else every status is unknown)

    @property
    def breaking(self) -> int:
        return sum(1 for i in self.items if i.status.breaks)

    @property
    def risky(self) -> bool:
        """Anything a person should look at: an item that breaks, a stale copy, a file
        touched on both sides, an old spelling (covered and unknown items alone are not)."""
        return bool(self.breaking or self.stale or self.touched or self.renames)

    def to_json(self) -> dict[str, Any]:
        return {"old": self.old, "new": self.new, "commits": self.commits,
                "surface": self.surface, "risky": self.risky, "breaking": self.breaking,
                "items": [i.to_json() for i in self.items],
                "stale_copies": [s.to_json() for s in self.stale],
                "touched_both": [t.to_json() for t in self.touched],
                "renames": [r.to_json() for r in self.renames]}


def drift(git: Git, old: str, new: str, queue: Queue | None, loaded: index.Loaded
          ) -> DriftReport:
    """The drift of upstream `old`..`new` (commit ids) for the fork whose queue is `queue`
    (None: no series, only the new API is reported), asking `loaded`'s surface (none:
    every status is unknown, and its note says why)."""
    return report(git, scan_range(git, old, new, loaded), queue)


Found = tuple[extract.Use, str, int, str]


@dataclass(frozen=True)
class RangeScan:
    """What the upstream range alone gives: its new API uses, asked of the surface, and the
    files its commits change; `report` adds what the queue gives."""
    old: str
    new: str
    commits: int
    note: str  # the surface's note (see DriftReport.surface)
    asked: bool
    items: tuple[Item, ...]
    changed: dict[str, list[str]]  # {path: the commits that change it, oldest first}


def scan_range(git: Git, old: str, new: str,
               loaded: index.Loaded | Callable[[], index.Loaded]) -> RangeScan:
    """The range's new API uses against the surface `loaded` gives. Given as a function,
    the surface is loaded while git reads the range's diffs, not before."""
    if callable(loaded):
        with Background(lambda: git.range_diffs(old, new), "pq git log") as log:
            loaded = loaded()
        range_, count = log.result()
    else:
        range_, count = git.range_diffs(old, new)
    surface = loaded.surface

    def files_at(named: list[tuple[str, str]]) -> list[bytes | None]:
        objects = git.odb.read_many([f"{commit}:{path}" for commit, path in named])
        return [o[2] if o is not None and o[1] == "blob" else None for o in objects]

    uses, changed, at_new, moves, deleted = _new_uses(range_, surface, files_at)
    if uses and len(range_) > 1:  # (one commit's diff is the range's)
        # New in the range, not only in a commit of it: still used at NEW (in the file as
        # later commits renamed it, or a merge: `_moved_at_new`), not at OLD (a use added
        # and reverted, a file deleted and added back, is none).
        moved = _moved_at_new(git, old, new, sorted(set(at_new)), moves, deleted)
        at_new = [moved.get(p, p) for p in at_new]
        net, _, _, _, _ = _new_uses([(new, git.diff_commits(
            old, new, [f":(literal){p}" for p in sorted(set(at_new))], context=0))],
                              surface, files_at)
        still = {(path, use) for use, path, _, _ in net}
        uses = [found for found, path in zip(uses, at_new, strict=True)
                if (path, found[0]) in still]
    items = []
    asked: dict[tuple[str, str], Coverage] = {}
    for use, path, line, commit in uses:
        key = (use.kind, use.name)
        if key not in asked:
            asked[key] = index.coverage(surface, use.kind, use.name)
        cov = asked[key]
        detail = use.detail + (": " if use.detail and cov.detail else "") + cov.detail
        items.append(Item(use.kind, use.name, path, line, commit, cov.status, cov.header,
                          detail))
    items.sort(key=lambda i: (i.status.rank, i.file, i.line, i.name))
    return RangeScan(old, new, count, loaded.note, surface is not None, tuple(items), changed)


def report(git: Git, scanned: RangeScan, queue: Queue | None) -> DriftReport:
    """The drift report of a scanned range for the fork whose queue is `queue`."""
    found = DriftReport(scanned.old, scanned.new, scanned.commits, scanned.note, scanned.items,
                        asked=scanned.asked)
    if queue is None:
        return found
    changed = scanned.changed
    return replace(found, stale=tuple(_stale(git, scanned.old, scanned.new, queue, changed)),
                   touched=tuple(_touched(queue, changed)), renames=tuple(hits(queue)))


def _new_uses(range_: Sequence[tuple[str, bytes]], surface: Surface | None,
               files_at: Callable[[list[tuple[str, str]]], list[bytes | None]] | None = None
               ) -> tuple[list[Found], dict[str, list[str]], list[str], dict[str, str],
                          set[str]]:
    """The first use of each name per file on an added line whose name the same commit
    does not remove from the same file; {path: the commits that change it}; each use's
    file as the later commits of the range rename it (its path at the range's end); and
    {old path: new path} of the renames the range's commits make, and the paths they
    delete.
    `files_at` gives files as (commit, path) name them: a Python hunk that begins with a
    line of bare names is read after the lines of the `from torch.x import (` block it
    may sit in, which -U0 leaves out."""
    known: dict[str, bool] = {}

    def is_method(name: str) -> bool:
        if name not in known:
            known[name] = name in extract.TENSOR_METHODS or index.knows_method(surface, name)
        return known[name]

    found: list[Found] = []
    seen: set[tuple[str, str, str]] = set()
    changed: dict[str, list[str]] = {}

    read: dict[str, str] = {}  # path: language, of the sections whose hunks were read

    def read_hunks(path: str, section: bytes) -> bool:
        lang = extract.language(path)
        if lang is None or not extract.may_use(lang, section):
            return False
        read[path] = lang
        return True

    parsed: list[tuple[str, diffs.FileDiff, str]] = []
    wanted: dict[tuple[str, str], None] = {}  # (commit, path) of hunks in a block, maybe
    renames: list[tuple[str, str, str]] = []  # (commit, old path, new path), in order
    deleted: set[str] = set()
    for commit, diff in range_:
        for f in diffs.parse(diff, read_hunks=read_hunks):
            for p in dict.fromkeys(x for x in (f.old, f.new) if x is not None):
                changed.setdefault(p, []).append(commit)
            if f.status == "renamed" and f.old is not None and f.new is not None:
                renames.append((commit, f.old, f.new))
            if f.deleted and f.old is not None:
                deleted.add(f.old)
            lang = read.get(f.path)
            if lang is None or f.deleted or f.binary or not f.hunks:
                continue
            parsed.append((commit, f, lang))
            if lang == "python" and any(extract.in_a_list(h.lines) for h in f.hunks):
                wanted[(commit, f.path)] = None
    above: dict[tuple[str, str], list[str]] = {}
    if wanted and files_at is not None:
        for named, data in zip(wanted, files_at(list(wanted)), strict=True):
            if data is not None:
                above[named] = data.decode("utf-8", "replace").split("\n")  # git's lines

    for commit, f, lang in parsed:
        lines_of_file = above.get((commit, f.path))
        removed: set[extract.Use] = set()
        added = []
        for h in f.hunks:  # each side's lines in order: a comment may span several
            context: list[str] = []
            if lines_of_file is not None and extract.in_a_list(h.lines):
                # The new file's lines above the hunk (-U0: a hunk that adds none starts
                # after its line `new_start`).
                context = extract.open_import(
                    lines_of_file[:h.new_start - (1 if h.new_count else 0)])
            before = [ln for ln in h.lines if not ln.added]
            codes = extract.code_of(lang, context + [x.text for x in before])[len(context):]
            for ln, code in zip(before, codes):
                if ln.removed:
                    removed.update(extract.uses(lang, code, is_method))
            after = h.post()
            codes = extract.code_of(lang, context + [x.text for x in after])[len(context):]
            added += [(ln, code) for ln, code in zip(after, codes) if ln.added]
        for ln, code in added:
            for use in extract.uses(lang, code, is_method):
                key = (f.path, use.kind, use.name)
                if use not in removed and key not in seen:
                    seen.add(key)
                    found.append((use, f.path, ln.number, commit))
    order = {commit: i for i, (commit, _) in enumerate(range_)}

    def at_new(path: str, commit: str) -> str:
        for later, old, new in renames:
            if old == path and order[later] > order[commit]:
                path = new
        return path
    return found, changed, [at_new(path, commit) for _, path, _, commit in found], {
        old: new for _, old, new in renames}, deleted


def _moved_at_new(git: Git, old: str, new: str, paths: list[str], moves: dict[str, str],
                  deleted: set[str]) -> dict[str, str]:
    """Where those of `paths` that NEW has no file by are at NEW: moved on the other side
    of a merge (by the range's renames, one after another, `moves`, or as `git diff -M
    OLD NEW` pairs them), or, one no commit of the range deleted, into the folder its
    folder's files all went to (the directory rename git makes at a merge: a file added
    beside them follows them). Only a place NEW has a file at counts."""
    gone = [p for p, o in zip(paths, git.odb.read_many([f"{new}:{p}" for p in paths]),
                              strict=True) if o is None]
    if not gone:
        return {}
    whole = git.renamed_paths((old, new))

    def follow(path: str, renames: dict[str, str]) -> str:
        seen = {path}
        while path in renames and renames[path] not in seen:
            path = renames[path]
            seen.add(path)
        return path

    folders: dict[str, set[str]] = {}
    for was, now in {**whole, **moves}.items():
        if posixpath.basename(was) == posixpath.basename(now):
            folders.setdefault(posixpath.dirname(was), set()).add(posixpath.dirname(now))
    single = {f: next(iter(to)) for f, to in folders.items() if len(to) == 1}
    tries: dict[str, list[str]] = {}
    for path in gone:
        tries[path] = [follow(path, moves), whole.get(path, path)]
        folder = posixpath.dirname(path)
        while path not in deleted and folder and folder not in single:
            folder = posixpath.dirname(folder)
        if path not in deleted and folder:
            tries[path].append(posixpath.join(follow(folder, single),
                                              posixpath.relpath(path, folder)))
    wanted = sorted({t for ts in tries.values() for t in ts})
    there = {t for t, o in zip(wanted, git.odb.read_many([f"{new}:{t}" for t in wanted]),
                               strict=True) if o is not None}
    return {path: found for path, ts in tries.items()
            if (found := next((t for t in ts if t in there), None)) is not None}


def _stale(git: Git, old: str, new: str, queue: Queue, changed: dict[str, list[str]]
           ) -> list[StaleCopy]:
    found = []
    moves: dict[str, str] | None = None
    for entry in queue.series.patches:
        for copy, origin in sorted((entry.copies or {}).items()):
            if origin not in changed:
                continue
            paths = [origin]
            if git.odb.read_many([f"{new}:{origin}"])[0] is None:  # gone: moved, maybe;
                moves = git.renamed_paths((old, new)) if moves is None else moves  # its
                paths += [moves[origin]] if origin in moves else []  # diff shows the move
            diff = git.diff_commits(old, new, paths)
            if diff.strip():
                found.append(StaleCopy(entry.name, copy, origin, tuple(changed[origin]),
                                       diff.decode("utf-8", "replace")))
    return found


def _touched(queue: Queue, changed: dict[str, list[str]]) -> list[Touched]:
    by_file: dict[str, list[tuple[str, str]]] = {}
    for entry in queue.series.patches:
        pf = patchfile.parse(queue.files[entry.name], f"{PATCHES_DIR}/{entry.name}")
        for old, new in diffs.paths(pf.diff):  # the paths alone: no hunk is read
            for p in dict.fromkeys(x for x in (old, new) if x is not None):
                if p in changed:
                    by_file.setdefault(p, []).append((entry.name, entry.layer))
    return [Touched(p, found[0][1], tuple(dict.fromkeys(n for n, _ in found)),
                    tuple(changed[p])) for p, found in sorted(by_file.items())]
