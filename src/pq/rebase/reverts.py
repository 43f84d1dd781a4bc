"""Whether a later upstream commit reverts an adopted one, judged where the lines sit.

Each run of lines the adopted commit changed is followed, by its line numbers, through the
commits after it that change its file: a commit that changes lines around it moves it; one
that changes its lines otherwise (an edit, a move, a re-spacing, part of them taken back)
ends the search, for what was adopted is no longer there to revert; and the commit that
changes every run back, where it sits, to what it was before is the revert. The text of a
run is checked, not only its place, and a reverting commit that adds an adopted line again
elsewhere moved it: no revert. Diffs of merges are not read, so across a merge line
numbers tell nothing: `follow_text` judges such a range by the lines' text alone.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, replace

from pq.model import diff as diffs

Lines = tuple[bytes, ...]


@dataclass(frozen=True)
class Run:
    """Lines a commit changed in one file: `start`..`end` (1-based, end excluded) in the
    numbering the file has now hold `added` (what the commit put there) in place of
    `removed` (what it took out)."""
    start: int
    end: int
    added: Lines
    removed: Lines
    above: bytes | None = None  # the context line above it (None: the hunk shows none)
    below: bytes | None = None  # the context line below it


def runs(hunks: Sequence[diffs.Hunk], new_side: bool = True) -> list[Run]:
    """The runs of changed lines of one file's hunks, numbered in the file after the
    change (`new_side`), or before it."""
    found = []
    for h in hunks:
        count, first = (h.new_count, h.new_start) if new_side else (h.old_count, h.old_start)
        pos = first + 1 if count == 0 else first  # where the next line of that side goes
        i, lines = 0, h.lines
        while i < len(lines):
            ln = lines[i]
            if ln.kind == " ":
                pos, i = pos + 1, i + 1
                continue
            j = i
            while j < len(lines) and lines[j].kind != " ":
                j += 1
            added = tuple(x.raw.rstrip() for x in lines[i:j] if x.added)
            removed = tuple(x.raw.rstrip() for x in lines[i:j] if x.removed)
            size = len(added) if new_side else len(removed)
            found.append(Run(pos, pos + size, added, removed,
                             lines[i - 1].raw.rstrip() if i else None,
                             lines[j].raw.rstrip() if j < len(lines) else None))
            pos, i = pos + size, j
    return found


def follow(adopted: dict[str, list[Run]],
           later: Sequence[tuple[str, dict[str, list[diffs.Hunk]]]]) -> str | None:
    """The commit of `later` ((commit, {path: its hunks}), oldest first: those after the
    adopted commit that change one of its files) that reverts `adopted` (its runs per path,
    numbered in the file it left), or None."""
    tracked = {path: list(rs) for path, rs in adopted.items() if rs}
    if not tracked:
        return None
    total = sum(len(rs) for rs in tracked.values())
    significant = {ln for rs in tracked.values() for r in rs for ln in r.added
                   if any(c.isalnum() for c in ln.decode("utf-8", "replace"))}
    for commit, files in later:
        moved: dict[str, list[Run]] = {}
        again: set[bytes] = set()  # what the commit adds besides turning runs back
        for path, rs in tracked.items():
            if path in files:
                after = _through(rs, files[path])
                if after is None:
                    return None  # an adopted run changed otherwise: nothing left to revert
                moved[path], added = after
                again |= added
        reverted = sum(1 for rs in moved.values() for r in rs if r.start < 0)
        if reverted == total:
            return None if again & significant else commit  # moved elsewhere, or reverted
        if reverted:
            return None  # only some of it taken back: not the change the patch makes
        tracked.update(moved)
    return None


def _through(tracked: list[Run], hunks: Sequence[diffs.Hunk]
             ) -> tuple[list[Run], set[bytes]] | None:
    """`tracked` runs after a commit's `hunks` of their file: each moved, or marked
    reverted (start -1), and the lines the commit adds elsewhere; None when the commit
    changes one of them otherwise."""
    back, reverting = _hunks_revert(tracked, hunks)
    theirs = runs([h for h in hunks if h not in reverting], new_side=False)
    exact = [r for r in theirs if any((r.start, r.end, r.removed, r.added)
                                      == (t.start, t.end, t.added, t.removed) for t in tracked)]
    out = []
    for t in tracked:
        if t in back or any((r.start, r.end) == (t.start, t.end) for r in exact):
            out.append(replace(t, start=-1, end=-1))
            continue
        if any(r.start < t.end and t.start < r.end or t.start < r.start < t.end
               for r in theirs):
            return None
        shift = sum(len(r.added) - len(r.removed) for r in runs(hunks, new_side=False)
                    if r.end <= t.start)
        out.append(replace(t, start=t.start + shift, end=t.end + shift))
    return out, {ln for r in theirs if r not in exact for ln in r.added}


def _hunks_revert(tracked: list[Run], hunks: Sequence[diffs.Hunk]
                  ) -> tuple[list[Run], list[diffs.Hunk]]:
    """The tracked runs whose hunk turns exactly them back and changes nothing else, and
    those hunks: git may draw a revert's diff with other lines than the adopted commit's
    (where lines repeat), and only the hunk's text before and after tells."""
    found: list[Run] = []
    reverting: list[diffs.Hunk] = []
    for h in hunks:
        first = h.old_start + 1 if h.old_count == 0 else h.old_start
        inside = [t for t in tracked if first <= t.start and t.end <= first + h.old_count]
        if not inside:
            continue
        before = [(ln.old, ln.raw.rstrip()) for ln in h.lines if not ln.added]
        expected: list[bytes] = []
        at = 0  # the next line of `before` to keep
        for t in sorted(inside, key=lambda r: r.start):
            lines = [text for number, text in before if t.start <= (number or 0) < t.end]
            if tuple(lines) != t.added:
                break
            while at < len(before) and (before[at][0] or 0) < t.start:
                expected.append(before[at][1])
                at += 1
            expected += t.removed
            at += len(t.added)
        else:
            expected += [text for _, text in before[at:]]
            if expected == [ln.raw.rstrip() for ln in h.lines if not ln.removed]:
                found += inside
                reverting.append(h)
    return found, reverting


def follow_text(adopted: dict[str, list[Run]],
                later: Sequence[tuple[str, dict[str, list[diffs.Hunk]]]]) -> str | None:
    """`follow` for a range with merges, whose diffs are not read (so line numbers tell
    nothing): the first later commit that takes out, file by file, every line the adopted
    commit added and puts back every line it removed (as many of each), adding no adopted
    line again; None once a commit takes an adopted line out otherwise (an edit)."""
    def counted(rs: list[Run], side: str) -> Counter[bytes]:
        return Counter(ln for r in rs for ln in (r.added if side == "+" else r.removed))

    tracked = {path: rs for path, rs in adopted.items() if rs}
    if not tracked:
        return None
    significant = {ln for rs in tracked.values() for r in rs for ln in r.added
                   if any(c.isalnum() for c in ln.decode("utf-8", "replace"))}
    for commit, files in later:
        theirs = {path: runs(files[path], new_side=False) for path in tracked if path in files}
        if len(theirs) == len(tracked) and all(
                counted(theirs[p], "-") >= counted(rs, "+")
                and counted(theirs[p], "+") >= counted(rs, "-")
                and all(counted(theirs[p], "+")[ln] <= counted(rs, "-")[ln]
                        for ln in significant)
                for p, rs in tracked.items()):
            return commit
        if any(significant & set(counted(rs, "-")) for rs in theirs.values()):
            return None  # an adopted line taken out for something else: refined
    return None
