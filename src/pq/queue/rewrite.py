"""Rewriting the branch under the series (`pq split`, `pq fix-renames`): the checks before
(clean, on a branch, one commit per patch) and the landing after (a bookkeeping commit with
the refreshed queue, the branch moved, working tree and queue files updated), in one place.
"""

from __future__ import annotations

from collections.abc import Sequence

from pq.errors import ConfigError
from pq.git.branchmove import require_unmoved
from pq.git.objects import CommitId, Person
from pq.git.repo import Git
from pq.model.series import SERIES_FILE, Series
from pq.oplog.txn import Transaction
from pq.queue import ops
from pq.queue import stack as stack_mod
from pq.queue.bookkeeping import bookkeeping_commit
from pq.queue.files import Queue, move_branch_to_queue, write_worktree


def series_stack(git: Git, queue: Queue, command: str, action: str
                 ) -> tuple[str, CommitId, list[stack_mod.StackCommit]]:
    """(branch, its tip, one commit per patch) when the branch holds exactly the series;
    else ConfigError naming what to run first. `action` says what would drop commits."""
    series = queue.series
    ops.require_clean(git, series.queue_paths, command)
    branch = ops.require_branch(git)
    head = git.head()
    short = branch.removeprefix("refs/heads/")
    if not ops.holds_only_series(git, head, queue):
        raise ConfigError(f"{short} has commits that differ from {SERIES_FILE}; {action} "
                          "would drop them", hint=f"run `pq export` first, then `{command}`")
    stack = stack_mod.read_stack(git, series.base, head, series.queue_paths,
                                 upstream=series.upstream_ref)
    if len(stack) != len(series.patches):
        raise ConfigError(f"{short} does not hold one commit per patch of {SERIES_FILE}",
                          hint=f"run `pq export` (or `pq apply`) first, then `{command}`")
    return branch, head, stack


def land(git: Git, t: Transaction, branch: str, head: CommitId, last: CommitId,
         series: Series, names: Sequence[str], committer: Person, command: str,
         message: str) -> CommitId:
    """Move `branch` (at `head`) to the patch commits ending in `last`, named `names`, with
    `series`' entries and a bookkeeping commit on top; working tree and queue follow."""
    fresh = stack_mod.read_stack(git, series.base, last, series.queue_paths,
                                 upstream=series.upstream_ref)
    refreshed = stack_mod.export(git, fresh, series, series.base, names=names)
    tip = bookkeeping_commit(git, last, None, refreshed, (git.author_now(), committer),
                             message)
    require_unmoved(git, branch, head, command)
    t.begin()
    move_branch_to_queue(git, branch, head, tip, series.queue_paths, command)
    write_worktree(git, refreshed)
    t.done()
    return tip
