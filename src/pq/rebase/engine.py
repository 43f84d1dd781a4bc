"""`pq rebase`: replay the series' commits onto a new upstream commit, in memory.

Each patch commit becomes a new commit object with cherry-pick semantics: a patch whose
files upstream left alone is applied to the trees directly, any other goes through git's
three-way merge (`merge-tree`). HEAD and the working tree move only to show a conflict and
at the end, after the series is re-exported (rebase_state owns those moves).
"""

from __future__ import annotations

from collections.abc import Callable

from pq.errors import ConfigError, GitError
from pq.git.objects import MERGER, Change, CommitId, Entry, Person, as_git_commits
from pq.git.repo import Git
from pq.git.trees import TreeCollision, Trees
from pq.model import patchfile
from pq.model.series import PATCHES_DIR, SERIES_FILE
from pq.oplog.txn import Transaction, settle_stopped
from pq.queue import bookkeeping, renames
from pq.queue import files as queuefiles
from pq.queue import ops as queueops
from pq.queue import stack as stack_mod
from pq.queue.files import Queue, read_worktree
from pq.rebase import rangediff
from pq.rebase import rerere as rerere_mod
from pq.rebase import state as rs
from pq.rebase import status as rebase_status
from pq.rebase.rangediff import PatchReport, RebaseReport
from pq.rebase.state import RebaseState, Step

Progress = Callable[[int, int, str], None]


# -- starting -------------------------------------------------------------------------


def start(git: Git, upstream: str | None = None, *, gate: bool = False,
          progress: Progress | None = None, force: bool = False,
          rerere: bool = True) -> RebaseReport:
    rs.require_none(git)
    branch = queueops.require_branch(git)
    queue = read_worktree(git)
    series = queue.series
    ref = upstream or series.upstream_ref
    onto = git.resolve(ref, "upstream ref")
    qp = series.queue_paths
    queueops.require_clean(git, qp, "pq rebase")
    head = git.head()
    trees = Trees(git)
    rs.require_clean_queue_dirs(git, [p for p in qp if p not in (SERIES_FILE, PATCHES_DIR)
                                      and trees.lookup(trees.tree_of(head), p) is not None])
    old_base = git.resolve(series.base, "series base (upstream.base in series.yaml)")
    if onto != old_base and not force and git.is_ancestor(onto, old_base):
        raise ConfigError(f"{ref} ({onto[:12]}) is an ancestor of the series base "
                          f"{old_base[:12]}: rebasing onto it moves the series back to an "
                          "older upstream (a stale or mistyped ref?)",
                          hint=f"check the ref (`git fetch` it?); `pq rebase --force {ref}` "
                               "rebases onto it anyway")
    stack = stack_mod.read_stack(git, old_base, head, qp)
    fresh = stack_mod.export(git, stack, series, old_base,
                             recorded=stack_mod.recorded_files(queue))
    if fresh.files != queue.files or [e.name for e in fresh.series.patches] != [
            e.name for e in series.patches]:
        raise ConfigError(f"{branch.removeprefix('refs/heads/')} has commits that differ from "
                          f"{SERIES_FILE}; rebasing would lose them", hint="run `pq export` first")
    if onto == old_base:
        return RebaseReport("up-to-date", branch.removeprefix("refs/heads/"), ref, old_base,
                            onto, 0, head, head, [PatchReport(e.name, e.layer, "clean")
                                                  for e in series.patches])
    committer = git.committer_now()
    layers = {e.name: e.layer for e in series.patches}
    with Transaction(git, f"pq rebase {ref}") as txn:
        changes = trees.load_changes([sc.commit for sc in stack])
        trees.read_commits([sc.commit for sc in stack])
        steps = [Step(entry.name, layers[entry.name], sc.commit, sc.parent,
                      _queue_free_pick(git, trees, sc.commit, sc.parent, changes[sc.commit], qp))
                 for entry, sc in zip(fresh.series.patches, stack, strict=True)]
        state = RebaseState(
            command=f"pq rebase {ref}", branch=branch, orig_head=head, old_base=old_base,
            onto=onto, onto_ref=ref, upstream_count=0,
            prev_orig_head=git.try_resolve(rs.orig_head_ref(branch)),
            prev_legacy_orig_head=git.try_resolve(rs.ORIG_HEAD_REF),
            queue_before=rs.save_queue_files(git, bookkeeping.queue_blobs(trees, head)),
            steps=steps,
            tip=onto, gate=gate, index_before=queuefiles.index_entries(git), rerere=rerere)
        rs.save(git, state)
        with rs.cleanup_unless_touched(git, state):
            diffs: dict[str, bytes] = {sc.commit: sc.diff for sc in stack}
            matches = rangediff.UpstreamMatches(git, state, qp, changes, diffs)
            state.upstream_count = matches.count()
            return _settle(txn, _run(git, state, trees, changes, matches, progress, queue,
                                     committer))


def _settle(txn: Transaction, report: RebaseReport) -> RebaseReport:
    """Log a stop at a conflict as `stopped`; a finished rebase settles its stops as done."""
    if report.status == "conflict":
        txn.done("stopped")
    else:
        settle_stopped(txn.git, "done")
    return report


def _queue_free_pick(git: Git, trees: Trees, commit: str, parent: str, changes: list[Change],
                     qp: tuple[str, ...]) -> str:
    """`commit`, or for a commit that also edits queue files a copy that does not."""
    undo = {path: old for path, old, _ in changes if stack_mod.is_queue_path(path, qp)}
    if not undo:
        return commit
    info = trees.commit(commit)
    tree = trees.edit(info.tree, undo)
    return git.write_commit(tree, [parent], info.author, info.committer, info.message,
                            info.encoding)


# -- continuing -----------------------------------------------------------------------


def resume(git: Git, action: str, progress: Progress | None = None) -> RebaseReport:
    """`--continue` (take the staged resolution) or `--skip` (drop the conflicted patch)."""
    state = rs.load_required(git)
    # A rebase that stopped in memory (files in the way of a conflict or of landing) goes
    # on from where it was saved.
    stopped = rebase_status.resumable(state)
    if state.phase != "conflict" and not (stopped and action == "continue"):
        if stopped:
            raise ConfigError(f"the last pq rebase stopped at no conflict ({state.phase}); "
                              f"there is no patch to {action}",
                              hint="`pq rebase --continue` goes on; `pq rebase --abort` "
                                   "restores the branch")
        raise ConfigError(f"the last pq rebase was interrupted while {state.phase}",
                          hint="`pq rebase --abort` restores the branch; then run the "
                               "rebase again")
    if action == "continue" and not stopped:
        rebase_status.require_resolved(git, state)
    old = rs.queue_before(git, state)
    committer = git.committer_now()
    with Transaction(git, f"pq rebase --{action}") as txn:
        trees = Trees(git)
        rest = [s.commit for s in state.steps[state.index:]]
        changes = trees.load_changes(rest if stopped else rest[1:])
        trees.read_commits(rest)
        step = state.steps[state.index] if state.index < len(state.steps) else None
        if stopped:
            pass
        elif action == "continue":
            assert step is not None
            tree = rs.write_index_tree(git, state)
            clean_tree = trees.without(tree, old.series.queue_paths)
            if clean_tree == trees.tree_of(state.tip):
                step.outcome = "dropped"
            else:
                step.outcome = "conflict"
                step.new_commit = _commit(git, trees, clean_tree, state.tip, step.commit,
                                          committer)
                state.tip = step.new_commit
        else:
            assert step is not None
            step.outcome = "skipped"
        if not stopped:
            state.index += 1
            state.phase = "replaying"
            rs.save(git, state)
        if state.detached:  # HEAD on the branch (a landing git refused) stays where it is
            rs.reset_to(git, state.tip)
        upstream = rangediff.UpstreamMatches(git, state, old.series.queue_paths, changes)
        return _settle(txn, _run(git, state, trees, changes, upstream, progress, old,
                                 committer))


def abort(git: Git) -> RebaseReport:
    state = rs.load_required(git)
    with Transaction(git, "pq rebase --abort"):
        rs.restore(git, state)
        rs.remove(git)
        settle_stopped(git, "aborted")
    return RebaseReport("aborted", state.short_branch, state.onto_ref, state.old_base,
                        state.onto, state.upstream_count, state.orig_head, state.orig_head)


# -- the replay -----------------------------------------------------------------------


def _run(git: Git, state: RebaseState, trees: Trees, changes: dict[str, list[Change]],
         upstream: rangediff.UpstreamMatches, progress: Progress | None, old: Queue,
         committer: Person) -> RebaseReport:
    qp = old.series.queue_paths
    total = len(state.steps)
    batch = BatchMerge(git, trees, state.steps[state.index:], changes, state.onto,
                       state.tip, qp)
    while state.index < total:
        step = state.steps[state.index]
        if progress:
            progress(state.index, total, step.name)
        outcome, tree = _replay(git, trees, batch, step, state.tip, changes[step.commit], qp)
        if outcome == "dropped":
            step.upstream_commit = upstream.carrying(step.commit)
        else:
            # Upstream has the patch (same patch-id, not reverted since): dropped, as git
            # rebase drops it, even where it conflicts or would apply again. Applied and
            # reverted upstream: kept (the fork still needs it), and reported.
            step.upstream_commit, undone = upstream.status(step.commit)
            if step.upstream_commit:
                outcome, tree = "dropped", None
            elif undone:
                step.applied_in, step.reverted_in = undone
        shown = False
        if outcome == "conflict":
            reused = _reuse(git, trees, batch, state, step)
            if reused is None:
                unmerged, resolutions = rs.show_conflict(git, state, step.pick)
                step.rerere_files = [r.to_dict() for r in resolutions]
                if unmerged:
                    state.phase = "conflict"
                    state.conflict_paths = unmerged
                    rs.save(git, state)
                    return _report(git, state, "conflict", old, None)
                # git rerere resolved every conflict from a recorded resolution: take it.
                shown = True
                tree = trees.without(rs.write_index_tree(git, state), qp)
            else:
                tree, resolutions = reused
                rerere_mod.remember(git, resolutions)
                step.rerere_files = [r.to_dict() for r in resolutions]
            outcome, step.rerere = "merged", bool(resolutions)
            if tree == trees.tree_of(state.tip):
                outcome = "dropped"
        step.outcome = outcome
        if tree is not None and outcome != "dropped":
            step.new_commit = _commit(git, trees, tree, state.tip, step.commit, committer)
            state.tip = step.new_commit
        state.index += 1
        if shown:
            state.phase = "replaying"
            rs.save(git, state)
            rs.reset_to(git, state.tip)
    return _finish(git, state, trees, old, committer, upstream.diffs)


def _reuse(git: Git, trees: Trees, batch: BatchMerge, state: RebaseState, step: Step
           ) -> tuple[str, list[rerere_mod.Resolution]] | None:
    """The conflicted patch resolved in memory from recorded resolutions (rerere), or None
    to let git rerere try in the working tree: where rerere is off, nothing is recorded,
    checkout could change bytes, or a conflict is not a plain content conflict."""
    if not rerere_mod.enabled(git, state.rerere) or not rerere_mod.rr_cache(git).is_dir():
        return None
    tip_tree = trees.tree_of(state.tip)
    attributes = batch.attributes(tip_tree)
    if attributes or not rerere_mod.plain_checkout(git):
        return None
    result = git.merge_trees(step.parent, state.tip, step.pick, ours_tree=tip_tree,
                             attributes=attributes)
    if result.clean:
        return None
    return rerere_mod.resolve_tree(git, trees, result.tree, result.conflicted_paths,
                                   (tip_tree, trees.tree_of(step.pick)))


def _replay(git: Git, trees: Trees, batch: BatchMerge, step: Step, tip: str,
            changes: list[Change], qp: tuple[str, ...]) -> tuple[str, str | None]:
    """(outcome, new tree) of one patch on `tip`, in memory."""
    tip_tree = trees.tree_of(tip)
    own = [c for c in changes if not stack_mod.is_queue_path(c[0], qp)]
    direct = None  # the patch applied to the tip as it is, path by path
    if all(trees.lookup(tip_tree, path) == old for path, old, _ in own):
        # Upstream left every file the patch touches as the patch found it: no merge needed,
        # unless git's directory rename detection could move one of the files.
        try:
            direct = trees.edit(tip_tree, {path: new for path, _, new in own})
        except TreeCollision:
            pass  # a file became a folder or the other way round: let git's merge decide
        else:
            if not _directory_renames_possible(trees, step, tip_tree, own):
                return "clean", direct
    merged = batch.result(step.commit, tip_tree)
    if merged is not None:
        tree, clean = merged, True
    else:
        tree, clean = _merge(git, batch, step, tip, tip_tree)
    if not clean:
        return "conflict", None
    if tree == tip_tree:
        return "dropped", None
    return ("clean" if tree == direct else "merged"), tree


def _directory_renames_possible(trees: Trees, step: Step, tip_tree: str,
                                own: list[Change]) -> bool:
    """Whether git's merge (merge-ort) could move a file of this cherry-pick elsewhere, for
    a patch whose files upstream left as they were.

    Such a patch is no file rename's source or target on upstream's side, and its own file
    renames meet nothing upstream changed, so file renames cannot matter; directory renames
    can. merge-ort takes a folder as renamed on one side only where that side no longer
    has it (as a folder), and then moves into the new place the paths the OTHER side adds
    (or renames) into it. So the merge can differ from the direct edit only where
      * the patch adds a path under a folder its parent had and the tip has not (upstream
        renamed, or deleted, the folder or one above it); or
      * the patch removes a folder (every file of it) in which upstream added or renamed
        something (the tip's folder differs from the parent's).
    """
    base = trees.tree_of(step.parent)
    pick: str | None = None
    for path, old, new in own:
        if old is not None and new is not None:
            continue
        folders = [path[:i] for i in range(len(path)) if path[i] == "/"]
        for folder in folders:
            was = trees.lookup(base, folder)
            if was is None or not _is_folder(was):
                break  # a folder the parent lacked: nothing below it can have been renamed
            now = trees.lookup(tip_tree, folder)
            if old is None and (now is None or not _is_folder(now)):
                return True
            if new is None and now != was:
                pick = pick or trees.tree_of(step.pick)
                after = trees.lookup(pick, folder)
                if after is None or not _is_folder(after):
                    return True
    return False


def _is_folder(entry: Entry) -> bool:
    return entry[0] in ("40000", "040000")


def _merge(git: Git, batch: BatchMerge, step: Step, tip: str, tip_tree: str
           ) -> tuple[str, bool]:
    """(tree, clean) of the patch cherry-picked onto `tip` by git's merge, in memory."""
    result = git.merge_trees(step.parent, tip, step.pick, ours_tree=tip_tree,
                             attributes=batch.attributes(tip_tree))
    return result.tree, result.clean


class BatchMerge:
    """The three-way content merges of many patches, in one `git merge-tree` run.

    A patch that only modifies files, each of which upstream still has at the same path,
    merges file by file: its merge on the tip is git's content merge of (its parent's
    blob, the tip's blob, its own blob) for each file, and the tip elsewhere. While the tip
    still holds upstream's blob for those files, that merge is the same one as on the new
    upstream commit, which is done here for all such patches at once, in trees holding just
    their files. Patches sharing a file, renames, additions and deletions are left to the
    per-patch merge. Renames cannot move such a patch's files: every one exists on all
    three sides (no rename source or target), and git's directory renames only move paths
    one side adds into a folder the other side no longer has.
    """

    def __init__(self, git: Git, trees: Trees, steps: list[Step],
                 changes: dict[str, list[Change]], onto: str, tip: str,
                 qp: tuple[str, ...]) -> None:
        self.git = git
        self.trees = trees
        self.onto_tree = trees.tree_of(onto)
        # Where .gitattributes files can be in the trees merged onto from here on: the
        # tip's, and those the patches still to replay touch (one process for the run).
        self._attribute_paths = git.attribute_paths(trees.tree_of(tip)) | {
            path for cs in changes.values() for path, _, _ in cs
            if path.rpartition("/")[2] == ".gitattributes"}
        self.merged: dict[str, dict[str, Entry | None]] = {}
        wanted: dict[str, list[tuple[str, Entry, Entry, Entry]]] = {}
        users: dict[str, int] = {}
        for step in steps:
            own = [c for c in changes.get(step.commit, []) if not stack_mod.is_queue_path(c[0], qp)]
            files = []
            for path, old, new in own:
                now = trees.lookup(self.onto_tree, path)
                if old is None or new is None or now is None or not all(
                        e[0].startswith(("100", "120")) for e in (old, new, now)):
                    break
                files.append((path, old, now, new))
                users[path] = users.get(path, 0) + 1
            else:
                if files and any(now != old for _, old, now, _ in files):
                    wanted[step.commit] = files
        wanted = {c: f for c, f in wanted.items() if all(users[p] == 1 for p, *_ in f)}
        if len(wanted) < 2:
            return  # one merge costs the same either way
        sides = [trees.edit_new({p: e[i] for f in wanted.values() for p, *e in f})
                 for i in range(3)]
        base = git.write_commit(sides[0], [], MERGER, MERGER, "pq rebase: base\n")
        ours, theirs = (git.write_commit(t, [base], MERGER, MERGER, "pq rebase\n")
                        for t in sides[1:])
        try:
            merged = git.merge_commits(ours, theirs, self.attributes(self.onto_tree))
        except GitError:
            return  # each patch is merged on its own instead
        conflicted = set(merged.conflicted_paths)
        result = merged.tree
        for commit, files in wanted.items():
            if not any(p in conflicted for p, *_ in files):
                self.merged[commit] = {p: trees.lookup(result, p) for p, *_ in files}

    def attributes(self, tree: str) -> bytes:
        """The attributes git's merge reads with `tree` checked out (see gitio)."""
        files = {}
        for path in self._attribute_paths:
            entry = self.trees.lookup(tree, path)
            if entry is not None and entry[0] in ("100644", "100755"):
                files[path] = entry[1]
        return self.git.attributes_from(files)

    def result(self, commit: str, tip_tree: str) -> str | None:
        """The patch merged onto `tip_tree`, or None when it must be merged on its own."""
        files = self.merged.get(commit)
        if files is None or any(self.trees.lookup(tip_tree, p) != self.trees.lookup(
                self.onto_tree, p) for p in files):
            return None
        if self.attributes(tip_tree) != self.attributes(self.onto_tree):
            return None  # an earlier patch changed how these files merge
        return self.trees.edit(tip_tree, files)


def _commit(git: Git, trees: Trees, tree: str, parent: str, original: str,
            committer: Person) -> str:
    info = trees.commit(original)
    author, message = as_git_commits(info.author, info.message, info.encoding)
    commit = git.write_commit(tree, [parent], author, committer, message)
    trees.commit_trees[commit] = tree
    return commit


def _finish(git: Git, state: RebaseState, trees: Trees, old: Queue, committer: Person,
            diffs: dict[str, bytes] | None) -> RebaseReport:
    qp = old.series.queue_paths
    new_stack = _new_stack(git, trees, state, qp, diffs or {})
    # The workaround paths follow the files upstream renamed, as the patches did.
    followed = renames.follow(old.series,
                              git.renamed_paths(state.old_base, state.onto))
    queue = stack_mod.export(git, new_stack, followed, state.onto,
                             names=[s.name for s in state.steps if s.new_commit])
    previous = state.new_tip  # where a landing that git refused may have got to
    state.new_tip = bookkeeping.bookkeeping_commit(
        git, state.tip, state.orig_head, queue, committer,
        f"pq: rebase series onto {state.onto[:12]}\n", trees)
    # Landing checks out the bookkeeping commit: series.yaml and patches/ are then `queue`
    # byte for byte (what `queuefiles.write_worktree` would write, without a second dump).
    rs.land(git, state, previous)
    rs.remove(git)
    return _report(git, state, "done", old, queue)


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


def _report(git: Git, state: RebaseState, status: str, old: Queue,
            new: Queue | None) -> RebaseReport:
    subjects = {c: git.commit(c).subject for s in state.steps
                for c in (s.upstream_commit, s.applied_in, s.reverted_in) if c}
    report = rangediff.report(state, status, old.files, new.files if new else None, subjects)
    for p, step in zip(report.patches, state.steps, strict=True):
        p.source = step.commit
    return report
