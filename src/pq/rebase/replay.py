"""The replay loop of `pq rebase`: each patch commit in turn onto the stack so far, in
memory (rebase/merge.py merges one), with upstream's copies of a patch dropped, a conflict
resolved from recorded resolutions (rerere) in memory where it can be, else shown in the
working tree (the loop stops and saves the state), and each kept patch written as a new
commit; after the last one, rebase/landing.py lands the stack.
"""

from __future__ import annotations

from collections.abc import Callable

from pq.git.objects import Change, Person, as_git_commits
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.queue.files import Queue
from pq.queue.ops import Progress
from pq.rebase import landing, rangediff, rrnotes, worktree
from pq.rebase import rerere as rerere_mod
from pq.rebase import state as rs
from pq.rebase.merge import BatchMerge, cherry_pick
from pq.rebase.report import RebaseReport
from pq.rebase.state import RebaseState, Step


def run(git: Git, state: RebaseState, trees: Trees, changes: dict[str, list[Change]],
        upstream: rangediff.UpstreamMatches, progress: Progress | None, old: Queue,
        committer: Person, crossing: Callable[[str, str], None] | None = None
        ) -> RebaseReport:
    qp = old.series.queue_paths
    total = len(state.steps)
    batch = BatchMerge(git, trees, state.steps[state.index:], changes, state.tip, qp)
    reused: list[rerere_mod.Resolution] = []  # noted at each save, not per patch

    def note() -> None:
        """Note the resolutions reused since the last note, before anything that a run
        resumed from a saved state (--continue after a kill) does not replay."""
        rrnotes.remember(git, reused)
        reused.clear()

    def save() -> None:
        note()
        rs.save(git, state)

    while state.index < total:
        step = state.steps[state.index]
        if progress:
            progress(state.index, total, step.name)
        outcome, tree = cherry_pick(git, trees, batch, step, state.tip)
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
            # A conflict git reports on no file (a directory renamed to several places):
            # shown in the working tree, and the rebase stops, as `git rebase` stops.
            notes = batch.notes(step, state.tip)
            resolved = None if notes else _reuse(git, trees, batch, state, step)
            if resolved is None:
                note()  # before the working tree is touched (git may refuse to show it)
                unmerged, resolutions = worktree.show_conflict(git, state, step.pick,
                                                               bool(notes))
                step.rerere_files = [r.to_dict() for r in rrnotes.with_also(git, resolutions)]
                if unmerged or notes:
                    state.phase = "conflict"
                    state.conflict_paths = unmerged
                    state.conflict_ids = rerere_mod.merge_rr(git)
                    state.conflict_notes = list(notes)
                    save()
                    return landing.report(git, state, "conflict", old, None)
                # git rerere resolved every conflict from a recorded resolution: take it.
                shown = True
                tree = trees.without(worktree.write_index_tree(git, state), qp)
            else:
                tree, resolutions = resolved
                reused += resolutions
                step.rerere_files = [r.to_dict() for r in rrnotes.with_also(git, resolutions)]
            outcome, step.rerere = "merged", bool(resolutions)
            if tree == trees.tree_of(state.tip):
                outcome = "dropped"
        step.outcome = outcome
        if tree is not None and outcome != "dropped":
            step.new_commit = commit_pick(git, trees, tree, state.tip, step.commit, committer)
            state.tip = step.new_commit
        state.index += 1
        if shown:
            state.phase = "replaying"
            save()
            worktree.reset_to(git, state.tip)
    rrnotes.remember(git, reused)
    if crossing is not None:  # every patch replayed: the caller's work on the range starts
        crossing(state.old_base, state.onto)
    return landing.finish(git, state, trees, old, committer, upstream.diffs)


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
    result = batch.merge(step, state.tip, tip_tree)  # the conflict cherry_pick found
    if result.clean or not result.conflicted_paths:  # no file to take a resolution for
        return None
    batch.read_conflicts_ahead()
    return rerere_mod.resolve_tree(git, trees, result.tree, result.conflicted_paths,
                                   (tip_tree, trees.tree_of(step.pick)),
                                   batch.conflict_sides(step, state.tip))



def commit_pick(git: Git, trees: Trees, tree: str, parent: str, original: str,
                committer: Person) -> str:
    """`original` as a commit of `tree` on `parent`: its author and message (re-encoded as
    git writes them), `committer` now."""
    info = trees.commit(original)
    author, message = as_git_commits(info.author, info.message, info.encoding)
    commit = git.write_commit(tree, [parent], author, committer, message, branch=True)
    trees.commit_trees[commit] = tree
    return commit

