"""Landing a finished replay: the queue exported again from the new commits (patch files
re-diffed only where the replay changed them, workaround paths following upstream's
renames), the bookkeeping commit on top, and the branch moved there with index and
working tree (the old tip kept as refs/pq/orig-head/<branch>); and the report of a
rebase, finished or stopped.
"""

from __future__ import annotations

from pq.background import Background
from pq.errors import ConfigError, GitError
from pq.git.branchmove import BranchMoved
from pq.git.failures import LockedError, lock_step
from pq.git.objects import CommitId, Person
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.model import patchfile
from pq.model.series import PATCHES_DIR
from pq.queue import bookkeeping, renames, verified
from pq.queue import stack as stack_mod
from pq.queue.cleanform import checkout_undone
from pq.queue.files import Queue
from pq.rebase import rangediff, worktree
from pq.rebase import state as rs
from pq.rebase.report import RebaseReport
from pq.rebase.state import RebaseState


def finish(git: Git, state: RebaseState, trees: Trees, old: Queue, committer: Person,
           diffs: dict[str, bytes] | None) -> RebaseReport:
    qp = old.series.queue_paths
    new_stack = _new_stack(git, trees, state, qp, diffs or {})
    # The workaround paths follow the files upstream renamed, as the patches did, and the
    # files the patches add where upstream moved their folder (git's merge moved them too,
    # as each patch's new commit against its old one shows; upstream's word wins).
    pairs = [(s.commit, s.new_commit) for s in state.steps if s.new_commit]
    followed = renames.follow(old.series, lambda: git.renamed_paths(
        *pairs, (state.old_base, state.onto)))
    queue = stack_mod.export(git, new_stack, followed, state.onto,
                             names=[s.name for s in state.steps if s.new_commit])
    previous = state.new_tip  # where a landing that git refused may have got to
    written = Queue(queue.series, queue.files, queue.series.dumps())
    state.new_tip = bookkeeping.bookkeeping_commit(
        git, state.tip, state.orig_head, queue, (git.author_now(), committer),
        f"pq: rebase series onto {state.onto[:12]}\n", trees, written.series_bytes)
    # Landing checks out the bookkeeping commit: series.yaml and patches/ are then `queue`
    # byte for byte (what `queuefiles.write_worktree` would write, without a second dump).
    land(git, state, previous)
    # They are the export of the stack under them, as `pq export` gives it: the next `pq
    # export` or `pq rebase` need not export it again to know so (pq.queue.verified).
    verified.remember_written(git, state.new_tip, written, new_stack)
    queue.series.keep(git.pq_dir())  # and the next command reads it unparsed
    rs.remove(git)
    return report(git, state, "done", old, queue)


def _new_stack(git: Git, trees: Trees, state: RebaseState, qp: tuple[str, ...],
               diffs: dict[str, bytes]) -> list[stack_mod.StackCommit]:
    """What `stack.read_stack(onto, tip)` returns, from what the replay already knows: a
    clean patch's diff is its old one; the others are diffed again (one process)."""
    kept = [s for s in state.steps if s.new_commit]
    again = [s for s in kept if not (s.outcome == "clean" and s.commit in diffs)]
    fresh: dict[str, bytes] = {}
    if again:
        patches = git.commit_patches([s.new_commit for s in again if s.new_commit],
                                     stack_mod.exclude_pathspec(qp))
        for s in again:
            assert s.new_commit is not None
            fresh[s.commit] = patchfile.strip_index_lines(patches[s.new_commit])
    result = []
    parent = state.onto
    for s in kept:
        assert s.new_commit is not None
        diff = fresh[s.commit] if s.commit in fresh else diffs[s.commit]
        # Every kept step is a patch: one that became empty was dropped; one that started
        # empty (no diff) is kept, as `git rebase` keeps it.
        info = trees.commit(s.new_commit)
        message, name = patchfile.strip_trailer(info.message)
        result.append(stack_mod.StackCommit(CommitId(s.new_commit), CommitId(parent), diff,
                                            name, message, info.author, info.encoding))
        parent = s.new_commit
    return result


def land(git: Git, state: RebaseState, previous: str | None = None) -> None:
    """Move the branch to state.new_tip, with index and working tree; the old tip is kept.

    When git refuses (files in the way), the state stays in `landing` with the replayed
    stack, every resolution included, and `pq rebase --continue` lands again; `previous`
    is the new tip an earlier landing may already have moved the branch to.
    """
    assert state.new_tip is not None
    now = git.try_resolve(state.branch)
    expected = previous if previous is not None and now == previous else state.orig_head
    _require_on_branch(git, state, expected, now)
    worktree.require_nothing_in_the_way(git, state, state.new_tip)
    state.phase = "landing"
    state.touched = True
    rs.save(git, state)
    git.set_orig_head(state.branch, state.orig_head, "pq rebase: previous tip")
    env = {"GIT_REFLOG_ACTION": f"pq rebase onto {state.onto[:12]}"}
    new_tip = state.new_tip
    attributes = Background(lambda: worktree.attributes_changed(
        git, state.orig_head, new_tip), "pq git diff-tree")  # while git checks out
    try:
        if state.detached:
            git.checkout(state.new_tip, detach=True, env=env)
            git.update_ref(state.branch, state.new_tip, expected, env["GIT_REFLOG_ACTION"])
            git.symbolic_ref("HEAD", state.branch, env["GIT_REFLOG_ACTION"])
            worktree.clear_git_merge_files(git)
        else:
            # Uncommitted queue files (kept in the state) would stop `reset --keep`.
            worktree.clear_queue_files(git)
            # Again, at once before it: `reset --keep` moves whichever branch HEAD is on,
            # from wherever it is (a commit or a checkout in another terminal meanwhile).
            _require_on_branch(git, state, expected, git.try_resolve(state.branch), True)
            try:
                git.reset("keep", state.new_tip, env=env)
            except GitError as exc:  # a file only touched since the index last looked at
                if "not uptodate" not in exc.message:  # it (a landing after a kill)
                    raise
                git.refresh_index()
                git.reset("keep", state.new_tip, env=env)
    except GitError as exc:
        what = ("let the hook pass the update" if "aborted by hook" in exc.message else
                "make the filter work" if " filter " in exc.message else
                lock_step(exc.lock) if isinstance(exc, LockedError) else
                "move the files aside")
        raise ConfigError(f"cannot move {state.short_branch} to the rebased stack: "
                          f"{exc.message}",
                          hint=f"deal with what git names ({what}), then `pq rebase "
                               "--continue` lands it, resolutions included; or `pq rebase "
                               "--abort`") from None
    try:
        if attributes.result():
            worktree.convert_again(git, state.orig_head, new_tip, state.onto)
    except GitError as exc:  # the branch is there; some files keep the old line ends
        raise ConfigError(f"{state.short_branch} is rebased, but git would not write the "
                          f"patched files again for the new .gitattributes: {exc.message}",
                          hint="`pq rebase --continue` finishes the rebase; a file with no "
                               "edit of yours written again (`rm FILE && git checkout -- "
                               "FILE`) takes the new line ends") from None


def _require_on_branch(git: Git, state: RebaseState, expected: str, now: str | None,
                       landing: bool = False) -> None:
    """Refuse to land unless HEAD is on the rebased branch, at the tip the rebase read
    (`now`, `expected`): `reset --keep` moves whichever branch HEAD is on, from wherever
    it is. Before the landing began nothing changed; once it began (`landing`), the
    rebase stays in progress."""
    if state.detached:
        return
    name, doing = state.short_branch, "landing" if landing else "computing"
    left = ("the rebase is left in progress (`pq rebase --abort` goes back)" if landing
            else "nothing was changed")
    if now != expected:
        moved = f"to {now[:12]} ({git.commit(now).title})" if now else "(deleted)"
        keep = f"`git branch keep-{name} {now[:12] if now else 'COMMIT'}` keeps that commit, " \
            "then `pq rebase --abort --force`"
        # Before a rebase that never stopped lands, nothing changed: the entry goes.
        error = ConfigError if landing or state.touched else BranchMoved
        raise error(f"{name} moved {moved} while pq rebase was {doing}; {left}",
                    hint=keep if landing else "run `pq export` if that commit belongs to the "
                                              "series, then `pq rebase` again")
    if (head := git.current_branch()) != state.branch:  # `git checkout other` meanwhile
        where = f"to {head.removeprefix('refs/heads/')}" if head else "(detached)"
        again = "`pq rebase --continue`" if landing else "`pq rebase` again"
        error = ConfigError if landing or state.touched else BranchMoved
        raise error(f"HEAD left {name} {where} while pq rebase was {doing}; {left}",
                    hint=f"`git switch {name}`, then {again}")


def report(git: Git, state: RebaseState, status: str, old: Queue,
           new: Queue | None) -> RebaseReport:
    subjects = {c: git.commit(c).title for s in state.steps
                for c in (s.upstream_commit, s.applied_in, s.reverted_in) if c}
    result = rangediff.report(state, status, _as_stored(git, state, old.files),
                              new.files if new else None, subjects)
    for p, step in zip(result.patches, state.steps, strict=True):
        p.source = step.commit
    result.queue = new
    return result


def _as_stored(git: Git, state: RebaseState, files: dict[str, bytes]) -> dict[str, bytes]:
    """The patch files {name: bytes} the working tree held, as git stores them: one that a
    checkout wrote with CRLF (core.autocrlf) is its LF form when that is the blob the old
    tip committed; a file committed with CRLF stays as it is."""
    converted = {name: lf for name, data in files.items()
                 if (lf := checkout_undone(data)) is not data}
    if not converted:
        return files
    stored = dict(files)
    for _, _, obj, path in git.ls_tree(state.orig_head,
                                       [f"{PATCHES_DIR}/{name}" for name in converted]):
        name = path.removeprefix(f"{PATCHES_DIR}/")
        if name in converted and git.hash_blob(converted[name]) == obj:
            stored[name] = converted[name]
    return stored
