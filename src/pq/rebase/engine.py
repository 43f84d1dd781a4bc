"""`pq rebase`, `--continue`, `--skip`: the commands, each in one transaction.

Starting checks the branch and the queue, builds the steps (one per patch commit) and
saves the state; continuing takes the staged resolution (or drops the patch) and goes on;
both hand the replay to rebase/replay.py, which replays each patch commit in memory with
cherry-pick semantics. HEAD and the working tree move only to show a conflict and at the
end (rebase/worktree.py, rebase/landing.py). Aborting is rebase/abort.py's.
"""

from __future__ import annotations

from collections.abc import Callable

from pq.background import Background
from pq.errors import ConfigError
from pq.git.objects import Change, Person
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.model import patchfile
from pq.model.series import PATCHES_DIR, SERIES_FILE
from pq.oplog.txn import Transaction, current_record_id, settle_stopped
from pq.queue import bookkeeping, verified
from pq.queue import files as queuefiles
from pq.queue import ops as queueops
from pq.queue import stack as stack_mod
from pq.queue.cleanform import require_convertible
from pq.queue.files import Queue, is_queue_path, read_worktree
from pq.queue.ops import Progress
from pq.rebase import landing, rangediff, refusals, replay, worktree
from pq.rebase import rerere as rerere_mod
from pq.rebase import state as rs
from pq.rebase.report import PatchReport, RebaseReport
from pq.rebase.state import RebaseState, Step

# -- starting -------------------------------------------------------------------------


def start(git: Git, upstream: str | None = None, *, gate: bool = False,
          progress: Progress | None = None, force: bool = False,
          rerere: bool = True, crossing: Callable[[str, str], None] | None = None,
          verify: bool = True) -> RebaseReport:
    """Rebase the series onto `upstream` (None: series.yaml's upstream.ref), after the
    repository's pre-rebase hook let it (unless not `verify`), as `git rebase` asks it.
    `crossing` is told (old base, new base) when every patch is replayed and the landing
    begins (never at a conflict), so a caller can start work on the upstream range (its
    drift scan) alongside the landing's checkout. Everything is read under the lock: another pq
    command (an undo, an export) ends before it, or after it."""
    ignored: list[str] = []  # hooks git would say it ignored, for its hint
    with Transaction(git, f"pq rebase {upstream or ''}".rstrip(), mutating=False) as txn:
        report = _start(txn, upstream, gate=gate, progress=progress, force=force,
                        rerere=rerere, crossing=crossing, verify=verify, ignored=ignored)
    report.ignored_hooks[:0] = ignored
    return _rewritten(git, report)


def _rewritten(git: Git, report: RebaseReport) -> RebaseReport:
    """Tell the repository's post-rewrite hook each patch commit a finished rebase copied
    and its copy (`rebase`, as `git rebase` tells it), once the operation is logged and the
    lock let go (a hook may run pq). Nothing it does changes the rebase's outcome."""
    pairs = "".join(f"{p.source} {p.commit}\n" for p in report.patches
                    if p.source and p.commit) if report.status == "done" else ""
    if pairs:
        from pq.errors import PqError
        from pq.git.hooks import run_hook

        try:  # notes first, as `git rebase` copies them before it runs the hook
            git.copy_notes(pairs.encode())
        except PqError as exc:
            report.notes.append(f"the commits' notes were not copied: {exc.render()}")
        try:
            ignored = run_hook(git, "post-rewrite", ["rebase"], pairs.encode()).ignored
            report.ignored_hooks += [ignored] if ignored else []
        except PqError as exc:
            report.notes.append(exc.render())
        except KeyboardInterrupt:
            report.notes.append("the post-rewrite hook was interrupted (the rebase is done)")
    return report


def _start(txn: Transaction, upstream: str | None, *, gate: bool, progress: Progress | None,
           force: bool, rerere: bool, crossing: Callable[[str, str], None] | None,
           verify: bool, ignored: list[str]) -> RebaseReport:
    git = txn.git
    rs.require_none(git)
    branch = queueops.require_branch(git)
    # Who commits, and whether commits are signed, are asked of git alongside.
    who = Background(lambda: _who_commits(git), "pq git var")
    if rerere:  # where rr-cache exists, rerere's configuration too: not at the first conflict
        rerere_mod.read_ahead(git)
    with Background(lambda: queueops.dirty_tracked_files(git), "pq git status") as status:
        queue = read_worktree(git)
        series = queue.series
        ref = upstream or series.upstream_ref
        onto = git.resolve(ref, "upstream ref")
        qp = series.queue_paths

        def require_clean() -> None:
            dirty = status.result()
            queueops.require_clean(git, qp, "pq rebase", dirty)
            worktree.require_clean_queue_dirs(dirty, qp)
            require_convertible(git, dirty, {PATCHES_DIR + "/" + n: data for n, data in
                                             queue.files.items()})

        try:
            queuefiles.require_own_queue_paths(git, series)
            stack, head, old_base, upstream_count = _checked_stack(git, branch, queue, ref,
                                                                   onto, force)
        except Exception:
            require_clean()  # uncommitted changes are the first thing to fix, as ever
            raise
        require_clean()
    if onto == old_base:
        return RebaseReport("up-to-date", branch.removeprefix("refs/heads/"), ref, old_base,
                            onto, 0, head, head, [PatchReport(e.name, e.layer, "clean",
                                                              commit=sc.commit, source=sc.commit)
                                                  for e, sc in zip(series.patches, stack,
                                                                   strict=True)])
    if verify:  # asked once there is a rebase to do, as `git rebase` asks it
        # The configuration is as it was before the hook ran, as `git rebase` reads it
        # once at its start: a hook that changes it (rerere.enabled) changes later runs.
        who.wait()
        rerere_mod.wait_ahead(git)
        hook = refusals.require_pre_rebase_hook(git, upstream or ref)
        ignored += [hook] if hook else []
    trees = Trees(git)
    committer = who.result()  # and `git` keeps whether it signs, before any commit
    layers = {e.name: e.layer for e in series.patches}
    # The upstream range's files (what finds patches upstream carries) are read by git
    # while the operation log and the rebase's state are written.
    with Background(lambda: git.log_files(*rs.new_upstream(old_base, onto)),
                    "pq git log") as range_log:
        txn.begin(command=f"pq rebase {ref}")
        changes = trees.load_changes([sc.commit for sc in stack])
        trees.read_commits([sc.commit for sc in stack])
        steps = [Step(entry.name, layers[entry.name], sc.commit, sc.parent,
                      _queue_free_pick(git, trees, sc.commit, sc.parent, changes[sc.commit], qp))
                 for entry, sc in zip(series.patches, stack, strict=True)]
        state = RebaseState(
            command=f"pq rebase {ref}", branch=branch, orig_head=head, old_base=old_base,
            onto=onto, onto_ref=ref, upstream_count=upstream_count,
            prev_orig_head=git.try_resolve(git.orig_head_ref(branch)),
            prev_legacy_orig_head=git.try_resolve(git.ORIG_HEAD_REF),
            queue_before=(before := worktree.save_queue_files(
                git, bookkeeping.queue_blobs(trees, head))),
            queue_executable=worktree.executable(git, before), steps=steps,
            tip=onto, gate=gate, index_before=queuefiles.index_entries(git), rerere=rerere,
            log_id=current_record_id(git), worktree=git.worktree(), queue_paths=list(qp),
            shared_with=[git.worktree_key(p) for b, p in git.branches_elsewhere().items()
                         if b == branch])
        rs.save(git, state)
        with rs.cleanup_unless_touched(git, state):
            diffs: dict[str, bytes] = {sc.commit: sc.diff for sc in stack}
            log = range_log.result()
            matches = rangediff.UpstreamMatches(git, state, qp, changes, diffs, lambda: log)
            report = replay.run(git, state, trees, changes, matches, progress, queue,
                                committer, crossing)
            return _settle(txn, state, report)


def _who_commits(git: Git) -> Person:
    """The committer now; and `git` learns whether it signs and who the author of the
    landing's bookkeeping commit is, before any commit is written."""
    git.signing()
    git.author_now()
    return git.committer_now()


def _checked_stack(git: Git, branch: str, queue: Queue, ref: str, onto: str, force: bool
                   ) -> tuple[list[stack_mod.StackCommit], str, str, int]:
    """The branch's patch commits (refusing a stack that differs from the queue, or an
    `onto` that would move the series back or already holds it), HEAD, the old base and
    how many commits upstream gained (old_base..onto, merges included): read-only, so it
    runs while `git status` looks at the working tree."""
    series = queue.series
    qp = series.queue_paths
    head = git.head()
    found = git.try_resolve(series.base)
    if found is None:
        from pq.queue.reach import base_missing

        missing = base_missing(git, series.base, series.upstream_ref)
        raise ConfigError(missing[0] if missing else f"unknown series base {series.base!r}",
                          path=SERIES_FILE, hint=missing[1] if missing else None)
    old_base = found
    # Upstream's new commits, merges included: none means `onto` is below the base; the
    # branch's first patch among them means upstream already holds it.
    crossed = {c for c, _ in git.rev_list_with_parents(f"{old_base}..{onto}")} \
        if onto != old_base else set()
    if not force:
        refusals.require_forward(git, ref, onto, old_base, crossed)
    # A queue verified before is this stack's export: its patch files hold the diffs.
    known = verified.known(git, head, queue)
    stack = stack_mod.read_stack(git, old_base, head, qp,
                                 known=_diffs_of(queue) if known else None,
                                 upstream=series.upstream_ref)
    if not known:  # else this very check passed before
        fresh = stack_mod.export(git, stack, series, old_base,
                                 recorded=stack_mod.recorded_files(queue))
        if not stack_mod.same_commits(fresh.files, queue.files) or [
                e.name for e in fresh.series.patches] != [
                e.name for e in series.patches]:
            from pq.queue.handedits import stack_differs  # (only where it refuses)

            raise stack_differs(branch, fresh, queue)
        # Remembered only where the files are what `pq export` would write, byte for
        # byte (the same commits in patch files whose headers or line ends differ, an
        # edited summary or a CRLF checkout, are no export: `pq export` rewrites them),
        # and are the ones committed in pq's last bookkeeping commit, HEAD: an export
        # weighs those as evidence too (names swapped in the working tree, say).
        if fresh.files == queue.files and fresh.series.dumps() == queue.series_bytes and (
                verified.as_last_written(git, head, queue)):
            verified.remember(git, head, queue)
    if not force:  # (after the stack: a branch rebased outside pq is named as such first)
        refusals.require_on_the_base_line(git, ref, onto, old_base, crossed)
    if stack and onto != old_base and not force and stack[0].commit in crossed:
        first = stack[0].commit
        own = f"{branch.removeprefix('refs/heads/')}'s own patch commit {first[:12]} (" \
              f"{series.patches[0].name})"
        if ref == series.upstream_ref:  # the fork's own upstream merged the branch
            raise ConfigError(
                f"{ref} ({onto[:12]}) already contains {own}: upstream merged the branch",
                hint=f"`pq rebase --force {ref}` drops the patches upstream merged, as `git "
                     "rebase` does; if that merge was not upstream's own, fetch the right "
                     "upstream first")
        raise ConfigError(
            f"{ref} ({onto[:12]}) already contains {own}: it is the branch or a copy of it, "
            f"not its upstream (series.yaml names {series.upstream_ref})",
            hint=f"`pq rebase {series.upstream_ref}`; if upstream really merged these "
                 f"commits, `pq rebase --force {ref}` drops them as already upstream")
    # (A forced rebase onto a ref holding this branch finds the branch's own queue there.)
    if onto != old_base and not (force and stack and stack[0].commit in crossed):
        queuefiles.require_no_upstream_files(git, onto, qp, ref, since=(old_base, head))
    return stack, head, old_base, len(crossed)


def _diffs_of(queue: Queue) -> list[bytes] | None:
    """The diffs of the queue's patch files, in series order (None if one does not parse:
    the stack is then diffed)."""
    try:
        return [patchfile.parse(queue.files[e.name], f"{PATCHES_DIR}/{e.name}").diff
                for e in queue.series.patches]
    except (ConfigError, KeyError):
        return None


def _finish_landed(txn: Transaction, state: RebaseState) -> RebaseReport:
    """`--continue` after pq stopped (killed, say) at the very end of a landing: the branch
    and HEAD are on the rebased stack already; what is left is removing the state."""
    git = txn.git
    refusals.require_branch_free(git, state, "continue")
    old = rs.queue_before(git, state)
    txn.begin()
    worktree.clear_git_merge_files(git)
    rs.remove(git)
    report = landing.report(git, state, "done", old, read_worktree(git))
    return _settle(txn, state, report)


def _made_by_hand(git: Git, state: RebaseState) -> str | None:
    """The resolution committed by hand on the stopped patch (the one commit HEAD may be
    past the stack's tip, as `require_in_place` checked), or None: its message and author
    are the patch's, as `git rebase --continue` keeps such a commit."""
    head = git.try_resolve("HEAD") if state.detached else None
    return head if head is not None and head != state.tip else None


def _settle(txn: Transaction, state: RebaseState, report: RebaseReport) -> RebaseReport:
    """Log a stop at a conflict as `stopped`; a finished rebase settles its stops as done."""
    if report.status == "conflict":
        txn.done("stopped")
    else:
        settle_stopped(txn.git, "done", state.log_id)
    return report


def _queue_free_pick(git: Git, trees: Trees, commit: str, parent: str, changes: list[Change],
                     qp: tuple[str, ...]) -> str:
    """`commit`, or for a commit that also edits queue files a copy that does not."""
    undo = {path: old for path, old, _ in changes if is_queue_path(path, qp)}
    if not undo:
        return commit
    info = trees.commit(commit)
    tree = trees.edit(info.tree, undo)
    return git.write_commit(tree, [parent], info.author, info.committer, info.message,
                            info.encoding, branch=True)


# -- continuing -----------------------------------------------------------------------


def resume(git: Git, action: str, progress: Progress | None = None,
           crossing: Callable[[str, str], None] | None = None) -> RebaseReport:
    """`--continue` (take the staged resolution) or `--skip` (drop the conflicted patch);
    `crossing` as for `start`. The stopped rebase is read under the lock: an abort, or
    another `--continue`, that ran meanwhile has ended it, or not begun."""
    with Transaction(git, f"pq rebase --{action}", mutating=False) as txn:
        report = _resume(txn, action, progress, crossing)
    return _rewritten(git, report)


def _resume(txn: Transaction, action: str, progress: Progress | None,
            crossing: Callable[[str, str], None] | None) -> RebaseReport:
    from pq.rebase import status as rebase_status  # (a rebase that starts needs none)

    git = txn.git
    state = rs.load_required(git)
    if action == "continue" and rebase_status.landed(git, state):
        return _finish_landed(txn, state)
    # A rebase that stopped in memory (files in the way of a conflict or of landing) goes
    # on from where it was saved.
    stopped = rebase_status.resumable(state)
    if state.phase != "conflict" and not (stopped and action == "continue") and not (
            state.phase == "refused" and action == "skip"):
        if stopped:
            raise ConfigError(f"the last pq rebase stopped at no conflict ({state.phase}); "
                              f"there is no patch to {action}",
                              hint="`pq rebase --continue` goes on; `pq rebase --abort` "
                                   "restores the branch")
        raise ConfigError(f"the last pq rebase was interrupted while {state.phase}",
                          hint="`pq rebase --abort` restores the branch; then run the "
                               "rebase again")
    refusals.require_in_place(git, state, action)
    refusals.require_branch_free(git, state, action)
    rs.require_no_git_operation(git)  # a git rebase started meanwhile would land on ours
    old = rs.queue_before(git, state)
    if state.detached:  # HEAD on the stack so far, without the queue files
        refusals.require_queue_aside(git, action, old.series.queue_paths)
    if action == "continue" and not stopped:
        rebase_status.require_resolved(git, state)
    committer = git.committer_now()
    git.author_now()  # asked before the log's record, as at the start: not at the landing
    txn.begin()
    trees = Trees(git)
    rest = [s.commit for s in state.steps[state.index:]]
    changes = trees.load_changes(rest if stopped else rest[1:])
    trees.read_commits(rest)
    step = state.steps[state.index] if state.index < len(state.steps) else None
    if stopped and action == "continue":
        if state.phase == "refused":  # shown again now (saved when it is)
            state.phase = "replaying"
    elif action == "continue":
        assert step is not None
        tree = worktree.write_index_tree(git, state)
        clean_tree = trees.without(tree, old.series.queue_paths)
        hand = _made_by_hand(git, state)  # an empty one too: git keeps what the user made
        if clean_tree == trees.tree_of(state.tip) and hand is None:
            step.outcome = "dropped"
        else:
            step.outcome = "conflict"
            step.new_commit = replay.commit_pick(git, trees, clean_tree, state.tip,
                                                  hand or step.commit, committer)
            state.tip = step.new_commit
    else:
        assert step is not None
        step.outcome = "skipped"
    if not stopped or action == "skip":
        state.index += 1
        state.phase = "replaying"
        rs.save(git, state)
    # HEAD on the branch (a landing git refused, a checkout that failed before it moved)
    # stays where it is: a reset there would move the branch.
    if state.detached and git.current_branch() is None:
        worktree.reset_to(git, state.tip)
    upstream = rangediff.UpstreamMatches(git, state, old.series.queue_paths, changes)
    report = replay.run(git, state, trees, changes, upstream, progress, old, committer,
                        crossing)
    return _settle(txn, state, report)
