"""`pq rebase --abort`: branch, HEAD, index, working tree and queue as before the rebase,
in one transaction.

Kept apart from the engine so that an abort loads only what it runs: the state, the
restore and the undo log (it is the command a user runs when something went wrong, and
it is timed against `git rebase --abort`).
"""

from __future__ import annotations

from pq.git.repo import Git
from pq.oplog.txn import Transaction, settle_stopped
from pq.rebase import state as rs
from pq.rebase import status as rebase_status
from pq.rebase import worktree
from pq.rebase.report import RebaseReport


def abort(git: Git, force: bool = False) -> RebaseReport:
    """Restore everything the stopped rebase changed (`force`: even when the branch moved
    while it was stopped, commits were made on the stopped patch, or queue files came back)
    and log the stopped entry as aborted."""
    state = rs.load_required(git)
    refusals = rebase_status.abort_refusals(git, state, force)
    if refusals:
        raise refusals[0][1]
    # git's own operation, started meanwhile, would outlive the abort and undo it later.
    rs.require_no_git_operation(git)
    with Transaction(git, "pq rebase --abort"):
        if state.touched:  # the working tree is reset: nothing untracked goes with it
            worktree.require_nothing_in_the_way(git, state, state.orig_head, aborting=True)
        worktree.restore(git, state)
        rs.remove(git)
        settle_stopped(git, "aborted", state.log_id)
    return RebaseReport("aborted", state.short_branch, state.onto_ref, state.old_base,
                        state.onto, state.upstream_count, state.orig_head, state.orig_head)
