"""`pq fix-renames`: one new patch at the end of the series that rewrites every old Paddle
spelling the patches still carry (pq.drift.renames), committed as pq adds patches (the
branch rewritten with a bookkeeping commit on top) inside a transaction, so `pq undo` works.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pq.drift.renames import RenameHit, hits, respell
from pq.git.objects import CommitId, Entry
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.model import diff as diffs
from pq.model import patchfile
from pq.oplog.txn import Transaction
from pq.queue import rewrite
from pq.queue import stack as stack_mod
from pq.queue.files import read_worktree

SUMMARY = "Follow Paddle's renamed compat entry points"


@dataclass(frozen=True)
class FixResult:
    hits: tuple[RenameHit, ...]
    patch: str | None = None  # the new patch; None when there was nothing to rewrite
    files: tuple[str, ...] = ()
    tip: CommitId | None = None
    branch: str = ""


def fix_renames(git: Git) -> FixResult:
    with Transaction(git, "pq fix-renames", mutating=False) as t:
        queue = read_worktree(git)
        series = queue.series
        # The branch first: a commit not exported yet is no patch `hits` can read.
        branch, head, stack = rewrite.series_stack(git, queue, "pq fix-renames",
                                                   "adding a patch")
        found = tuple(hits(queue))
        if not found:
            return FixResult(found)
        last = stack[-1].commit
        paths = sorted({h.file for h in found})
        # The lines the series adds, numbered in the files at its end: an upstream line of
        # the same text (the same call, in another branch of an `if`) is not the patches'.
        ours = {f.path: {ln.number for ln in f.added()}
                for f in diffs.parse(git.diff_commits(series.base, last, []), "the series")
                if f.path in paths}  # all paths: a file the series renamed is no new one
        changes: dict[str, Entry | None] = {}
        for mode, _kind, obj, path in git.ls_tree(last, paths):
            data = git.blob(obj)
            new = respell(data, ours.get(path, set()))
            if new != data:
                changes[path] = (mode, git.write_blob(new))
        if not changes:  # a later patch took the lines out again
            return FixResult(found)
        name = _new_name([e.name for e in series.patches])
        used = sorted({(h.old, h.new) for h in found})
        message = patchfile.add_trailer(
            f"{SUMMARY}\n\n" + "".join(f"{o} -> {n}\n" for o, n in used), name)
        committer = git.committer_now()
        tree = Trees(git).edit(git.tree_of(last), changes)
        commit = git.write_commit(tree, [last], git.author_now(), committer, message, branch=True)
        tip = rewrite.land(git, t, branch, head, commit, series,
                           [e.name for e in series.patches] + [name], committer,
                           "pq fix-renames", "pq: fix-renames\n")
    return FixResult(found, name, tuple(sorted(changes)), tip,
                     branch.removeprefix("refs/heads/"))


def _new_name(taken: list[str]) -> str:
    """The next free number and the summary's slug, as pq names a new patch."""
    numbers = [int(m.group(1)) for n in taken if (m := re.match(r"^([0-9]+)-", n))]
    nxt = max(numbers, default=0) + 1
    while True:
        name = f"{nxt:04d}-{stack_mod.slugify(SUMMARY)}.patch"
        if name not in taken:
            return name
        nxt += 1

