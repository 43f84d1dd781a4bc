"""`pq rebase --abort`: branch, HEAD, index, working tree and queue as before the rebase,
in one transaction.

Kept apart from the engine so that an abort loads only what it runs: the state, the
restore and the undo log (it is the command a user runs when something went wrong, and
it is timed against `git rebase --abort`).
"""

from __future__ import annotations

from pq.git.repo import Git
from pq.oplog.txn import Transaction, settle_stopped
from pq.queue.files import index_entries
from pq.rebase import refusals, worktree
from pq.rebase import state as rs
from pq.rebase.report import RebaseReport


def abort(git: Git, force: bool = False) -> RebaseReport:
    """Restore everything the stopped rebase changed (`force`: even when the branch moved
    while it was stopped, commits were made on the stopped patch, or queue files came back)
    and log the stopped entry as aborted. The stopped rebase is read under the lock: a
    `--continue` that ran meanwhile has ended it, or not begun."""
    with Transaction(git, "pq rebase --abort", mutating=False) as txn:
        state = rs.load_required(git, gone_ok=True)
        gone = rs.gone_worktree(git, state)
        if gone is not None:
            return _forget(txn, state, gone)
        # git's own operation, started meanwhile, would outlive the abort and undo it later;
        # named first: its conflicts are no edits of the user's that a stash would keep.
        rs.require_no_git_operation(git)
        refused = refusals.abort_refusals(git, state, force)
        if refused:
            raise refused[0][1]
        txn.begin()
        if state.touched:  # the working tree is reset: nothing untracked goes with it
            worktree.require_nothing_in_the_way(git, state, state.orig_head, aborting=True)
            if not state.aborting:  # (a kill from here on leaves the files the abort's)
                state.aborting = True
                rs.save(git, state)
        _restore(git, state)
        rs.remove(git)
        settle_stopped(git, "aborted", state.log_id)
    return _aborted(state)


def _forget(txn: Transaction, state: rs.RebaseState, gone: str) -> RebaseReport:
    """The abort of a rebase whose worktree is gone: its HEAD, index and files went with
    it; the refs it moved go back (the branch only if it still is where the landing put
    it), and this worktree is not touched."""
    git = txn.git
    txn.begin()
    now = git.try_resolve(state.branch)
    if now is not None and now != state.orig_head and now == state.new_tip:
        git.update_ref(state.branch, state.orig_head, message="pq rebase --abort")
    git.set_orig_head(state.branch, state.prev_orig_head, "pq rebase --abort")
    rs.remove(git)
    settle_stopped(git, "aborted", state.log_id)
    return _aborted(state, gone)


def _aborted(state: rs.RebaseState, gone: str | None = None) -> RebaseReport:
    return RebaseReport("aborted", state.short_branch, state.onto_ref, state.old_base,
                        state.onto, state.upstream_count, state.orig_head, state.orig_head,
                        gone_worktree=gone)


def _restore(git: Git, state: rs.RebaseState) -> None:
    """Everything as it was before the rebase: branch, HEAD, index, working tree, queue."""
    if git.try_resolve(state.branch) != state.orig_head:
        git.update_ref(state.branch, state.orig_head, message="pq rebase --abort")
    if git.current_branch() != state.branch:
        git.symbolic_ref("HEAD", state.branch, "pq rebase --abort")
    if state.touched:
        git.reset("hard", state.orig_head, env={"GIT_REFLOG_ACTION": "pq rebase --abort"})
        worktree.clear_git_merge_files(git)
    rewritten = worktree.set_queue_files(git, dict(state.queue_before), state.queue_executable)
    if state.index_before is not None and (git.set_index_entries(
            index_entries(git), state.index_before, refresh=False,
            rewritten=set(rewritten)) or rewritten):
        git.refresh_index()  # else `reset --hard` above left every entry fresh
    git.set_orig_head(state.branch, state.prev_orig_head, "pq rebase --abort")
    legacy = state.prev_legacy_orig_head
    if legacy and git.try_resolve(git.ORIG_HEAD_REF) is None and not git.has_refs_under(
            git.ORIG_HEAD_REF + "/"):
        git.update_ref(git.ORIG_HEAD_REF, legacy, message="pq rebase --abort")
