"""`pq import`: a merge-maintained fork branch becomes a layer-tagged series in one step.

The base is merge-base(branch, upstream): for a fork kept alive by merging upstream, the
newest upstream commit merged in. The migration is the branch's tree against the base. By
default it is cut into parts by layer and topic (pq.queue.topics); with `keep_commits`,
the fork's non-merge commits are kept one patch each when they replay, linearised, onto the
base and rebuild the branch's tree exactly (else the default runs, and the result says
why). Either way the patches are rendered, applied onto the base again (as `pq apply`
would) and must rebuild the branch's tree byte for byte, or nothing is written
(OperationFailed, exit 1). Edits that look like workarounds (the detector is the caller's:
the audit's signals) get a draft `workaround` block marked for review. The branch becomes
base..patches plus a bookkeeping commit; the old tip is kept as refs/pq/orig-head/<branch>;
one transaction, so `pq undo` restores the branch and removes the queue files.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from pq.errors import ConfigError, OperationFailed
from pq.git.bases import fork_base
from pq.git.branchmove import require_unmoved
from pq.git.objects import CommitId, Person, printable, summary_of
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.model import diff as diffs
from pq.model import layers, patchfile
from pq.model.series import PATCHES_DIR, SERIES_FILE, new_series
from pq.oplog.txn import Transaction
from pq.queue import ops, topics
from pq.queue import stack as stack_mod
from pq.queue.bookkeeping import bookkeeping_commit
from pq.queue.copies import CopyProposal
from pq.queue.copies import propose as propose_copies
from pq.queue.files import (
    Queue,
    is_queue_path,
    move_branch_to_queue,
    require_no_folder_at,
    require_no_untracked_in_the_way,
    require_no_upstream_files,
    stray_patch_files,
    write_worktree,
)
from pq.queue.reach import no_shared_history, shallow_commits, upstream_name
from pq.queue.split import part_trees
from pq.quoting import from_here, list_paths, shell_args

# (path, line, code) of each added line that looks like a workaround, for one file's diff.
Detector = Callable[[diffs.FileDiff], Sequence[tuple[str, int, str]]]
REVIEW = "manual: review this draft written by pq import"


@dataclass(frozen=True)
class Candidate:
    patch: str
    path: str
    line: int
    code: str


@dataclass(frozen=True)
class ImportedPatch:
    name: str
    layer: str
    summary: str
    files: tuple[str, ...]
    added: int
    removed: int
    kept_from: str | None  # the fork commit whose message it keeps


@dataclass(frozen=True)
class ImportResult:
    upstream: str
    base: CommitId
    branch: str
    original: CommitId  # the branch tip that was imported
    mode: str  # "topics" or "commits"
    reason: str  # why that mode ran
    patches: tuple[ImportedPatch, ...]
    candidates: tuple[Candidate, ...]
    tip: CommitId | None  # the new branch tip; None for a dry run
    copies: tuple[CopyProposal, ...] = ()  # proposed `copies:` declarations

    def layer_totals(self) -> dict[str, tuple[int, int, int]]:
        """{layer: (files, added, removed)} in layer order."""
        out: dict[str, tuple[int, int, int]] = {}
        for layer in topics.ORDER:
            mine = [p for p in self.patches if p.layer == layer]
            if mine:
                out[layer] = (len({f for p in mine for f in p.files}),
                              sum(p.added for p in mine), sum(p.removed for p in mine))
        return out


def import_fork(git: Git, upstream: str, branch: str | None = None, *, dry_run: bool = False,
                keep_commits: bool = False, detect: Detector | None = None) -> ImportResult:
    with Transaction(git, f"pq import --upstream {upstream}", mutating=False) as t:
        upstream_id = git.resolve(upstream, "upstream ref")
        upstream = upstream_name(git, upstream, "pq import")
        current = ops.require_branch(git)
        name = current.removeprefix("refs/heads/")
        if branch is not None and branch.removeprefix("refs/heads/") != name:
            short = branch.removeprefix("refs/heads/")
            if not git.ref_exists(f"refs/heads/{short}"):
                raise ConfigError(f"no branch {short} (pq import works on the checked-out "
                                  f"branch, {name})", hint="check the name (`git branch` "
                                  "lists them), or leave it out to import " + name)
            raise ConfigError(f"pq import works on the checked-out branch; {branch} is not "
                              f"checked out ({name} is)", hint=f"`git switch {short}` first")
        queue_paths = new_series(upstream, upstream_id).queue_paths
        tip = git.head()
        base = fork_base(git, tip, upstream_id)
        if base is None:
            raise no_shared_history(git, name, upstream, "run `pq import` again")
        # Before "already has a series": upstream's own series.yaml is no series of pq's.
        require_no_upstream_files(git, base, queue_paths, f"the fork's base on {upstream}")
        tracked = sorted({path.split("/", 1)[0] for *_, path in
                          git.ls_tree(tip, [SERIES_FILE, PATCHES_DIR])})
        if SERIES_FILE not in tracked:  # a folder of the user's: `rm` cannot remove it
            require_no_folder_at(git.root / SERIES_FILE, "run `pq import` again")
        if (git.root / SERIES_FILE).exists() or SERIES_FILE in tracked:
            steps = ([f"`git rm -r -q {shell_args(from_here(git.root, tracked), True)}`"]
                     if tracked else [])
            if SERIES_FILE not in tracked:
                steps.append(f"`rm {shell_args(from_here(git.root, [SERIES_FILE]))}`")
            again = " and ".join(steps) + (" and commit" if tracked else "") + " first"
            raise ConfigError(f"already exists: {name} already has a series",
                              path=SERIES_FILE,
                              hint=f"`pq export` refreshes it; {again} to import again")
        ops.require_clean(git, queue_paths, "pq import")
        target = git.tree_of(tip)
        if target == git.tree_of(base):
            # `pq init` refuses merges: there, the branch goes to the base first (its tree
            # is the base's, so no file changes), or init would send the user back here.
            reset = (f"`git reset --keep {base[:12]}`, which leaves every file as it is, then "
                     if git.count(f"{base}..{tip}", "--merges") else "")
            raise ConfigError(f"{name} has no changes against {upstream} (base {base[:12]}); "
                              "there is nothing to import",
                              hint=f"start a series with {reset}`pq init --upstream {upstream}`")
        own = [p for p in git.changed_paths(base, tip)
               if is_queue_path(p, queue_paths)]
        if own:
            raise ConfigError(f"{name} changes {own[0]}"
                              + (f" and {len(own) - 1} more" if len(own) > 1 else "")
                              + f" under pq's own paths ({', '.join(queue_paths)}), which a "
                              "patch cannot carry", path=own[0],
                              hint="move those files elsewhere (`git mv`) and commit, then "
                                   "run `pq import` again")
        committer = git.committer_now()
        log = git.log_files(f"{base}..{tip}")  # what the patches must carry: base to tip
        mode, reason, last, names = "topics", "", base, None
        kept: dict[str, CommitId | None] = {}
        replayed: dict[CommitId, CommitId] = {}
        if keep_commits:
            found, replayed, reason = _replay(git, base, target, [c for c, _ in log],
                                              committer)
            if found is not None:
                mode, last = "commits", found
        if mode == "topics":
            last, names, kept = _regroup(git, base, tip, log, name, committer)
            reason = ((reason + "; regrouped by layer and topic instead") if keep_commits
                      else "regrouped by layer and topic (--keep-commits keeps the fork's "
                           "commits when they replay cleanly)")
        stack = stack_mod.read_stack(git, base, last, queue_paths)
        if mode == "commits":
            reason = _kept(len(log), len(replayed), len(stack))
        queue = stack_mod.export(git, stack, new_series(upstream, base), base, names=names)
        queue, candidates = _drafts(git, stack, queue, detect)
        _verify(git, queue, base, target, committer, name)
        if mode == "commits":  # each patch keeps its fork commit (one of queue files alone
            kept = {e.name: replayed.get(sc.commit)  # is no patch: the stack leaves it out)
                    for e, sc in zip(queue.series.patches, stack, strict=True)}
        patches = _summaries(stack, queue, kept)
        result = ImportResult(upstream, base, name, tip, mode, reason, patches, candidates,
                              None, tuple(propose_copies(git, queue)))
        if dry_run:
            return result
        last = _as_branch_commits(git, base, [sc.commit for sc in stack]) or last
        new_tip = bookkeeping_commit(git, last, None, queue, (git.author_now(), committer),
                                     f"pq: import {name} as a series on {base[:12]}\n")
        require_unmoved(git, current, tip, "pq import")
        names = [e.name for e in queue.series.patches]
        require_no_untracked_in_the_way(git, queue, names, "pq import")
        stray_patch_files(git, set(names), "pq import")  # a draft of the user's is refused
        t.begin()
        move_branch_to_queue(git, current, tip, new_tip, queue_paths, "pq import")
        git.set_orig_head(current, tip, "pq import: previous tip")  # once it moved
        write_worktree(git, queue)
        t.done()
    return replace(result, tip=new_tip)


def _as_branch_commits(git: Git, base: CommitId, commits: Sequence[CommitId]
                       ) -> CommitId | None:
    """The import's commits (written as scratch, so that a dry run or a replay that falls
    back signs nothing) written again on `base` as the branch's: signed where the
    configuration asks; None when it does not (they are the branch's as they are)."""
    if not commits or not git.signing():
        return None
    parent = base
    for commit in commits:
        info = git.commit(commit)
        parent = git.write_commit(info.tree, [parent], info.author, info.committer,
                                  info.message, info.encoding, branch=True)
    return parent


def _replay(git: Git, base: CommitId, target: str, commits: Sequence[CommitId],
            committer: Person) -> tuple[CommitId | None, dict[CommitId, CommitId], str]:
    """The fork's non-merge commits cherry-picked in order onto the base (a three-way
    merge each, as `git rebase` replays them), one commit each: the last and {each commit
    written: the fork commit it replays} (one whose change the base and the commits before
    it carry already is left out, as `git rebase` drops it; one empty on the fork stays an
    empty patch); (None, {}, why not) when one conflicts or misses the branch's tree."""
    if not commits:
        return None, {}, "--keep-commits: the branch has no non-merge commits of its own"
    parent, tree = base, git.tree_of(base)
    trees = Trees(git)
    origin: dict[CommitId, CommitId] = {}
    cut = shallow_commits(git)
    for commit in commits:
        if commit in cut:  # its parent is not here: nothing to replay it from
            return None, {}, (f"--keep-commits: this shallow clone cuts off the parent of "
                              f"fork commit {commit[:12]} (`git fetch --unshallow` first to "
                              "keep the commits)")
        info = git.commit(commit)
        if len(info.parents) != 1:
            return None, {}, (f"--keep-commits: fork commit {commit[:12]} has no parent to "
                              "replay it from (a root commit)")
        pre = git.tree_of(info.parents[0])
        if info.tree == pre:  # empty on the fork: a patch with no diff, as `pq init` keeps
            merged = tree
        elif pre == tree:  # made on what the replay has: nothing to merge
            merged = info.tree
        else:
            result = git.merge_trees(info.parents[0], parent, commit, ours_tree=tree,
                                     attributes=trees.attributes(
                                         tree, git.attribute_paths(tree)))
            if not result.clean:
                where = (f"in {list_paths(list(result.conflicted_paths))}"
                         if result.conflicted_paths else "; ".join(result.notes))
                return None, {}, (f"--keep-commits: fork commit {commit[:12]} conflicts when "
                                  f"replayed onto the base and the commits before it, {where} "
                                  "(a merge of the fork resolved it, or changed that file "
                                  "itself)")
            if result.tree == tree:
                continue  # its change is there already (upstream took it, say)
            merged = result.tree
        parent = git.write_commit(merged, [parent], info.author, committer, info.message,
                                  info.encoding, branch=False)
        tree = merged
        origin[parent] = commit
    if tree != target:
        return None, {}, ("--keep-commits: the fork's commits replayed linearised do not "
                          "rebuild the branch's tree (merges changed it too)")
    return parent, origin, ""


def _kept(commits: int, written: int, patches: int) -> str:
    """Why: of `commits`, `written` replayed (the rest carried already) and `patches` are
    patches (the rest change only the queue's own files)."""
    left, own = commits - written, written - patches
    kept = f"{patches} of the {commits}" if patches < commits else (
        f"the {commits}" if commits > 1 else "the 1")
    return (f"kept {kept} non-merge commit{'s' * (commits > 1)}: "
            f"{'they replay' if patches > 1 else 'it replays'} linearised onto the base and "
            "rebuild the branch's tree exactly" + (
                f"; {left} whose change the base and the commits before it carry already "
                f"{'is' if left == 1 else 'are'} left out" if left else "") + (
                f"; {own} that change{'s' * (own == 1)} only the series' own files (series.yaml, "
                f"patches/) {'is' if own == 1 else 'are'} no patch" if own else ""))


def _regroup(git: Git, base: CommitId, tip: CommitId,
             log: Sequence[tuple[CommitId, frozenset[str]]], branch: str, committer: Person
             ) -> tuple[CommitId, list[str], dict[str, CommitId | None]]:
    """One commit per part (pq.queue.topics) on the base; the last one and the names."""
    whole = git.write_commit(git.tree_of(tip), [base], committer, committer,
                             "pq import: the whole migration\n", branch=False)
    diff = git.commit_patches([whole])[whole]
    files = diffs.parse(diff, f"{base[:12]}..{tip[:12]}")
    sc = stack_mod.StackCommit(whole, base, diff, None, "", committer)
    decisions = layers.together(files, layers.classify_hunks(files, stack_mod.post_image(git, sc)))
    grouping = topics.group(files, decisions, log)
    order = [p.key for p in grouping.parts]
    trees = part_trees(git, base, whole, files, grouping.where, order)
    if trees[-1] != git.tree_of(tip):
        raise OperationFailed(f"the parts of {branch}'s migration do not rebuild its tree "
                              "exactly; nothing was written",
                              hint="import with `--keep-commits`, or linearise the branch "
                                   "(`git rebase`) and run `pq init`")
    parent = base
    kept: dict[str, CommitId | None] = {}
    for part, tree in zip(grouping.parts, trees, strict=True):
        kept[part.name] = None
        if part.kept_from is not None and _maps_onto(git, part.kept_from, base, tip,
                                                     part.files):
            info, kept[part.name] = git.commit(part.kept_from), part.kept_from
            # A `Pq-Patch:` trailer of earlier pq use names another patch than this part.
            author, encoding = info.author, info.encoding
            message = patchfile.strip_trailer(info.message)[0]
        else:
            # A part only merges made (`-s ours`, a resolution) has no fork commit: its
            # author is the tip's committer, then, not the clock (patch files stay the same).
            author = git.commit(part.commits[-1]).author if part.commits else \
                git.commit(tip).committer
            message = topics.part_message(part, branch, _subject(git))
            encoding = None
        parent = git.write_commit(tree, [parent], author, committer, message, encoding,
                                  branch=False)
    return parent, [p.name for p in grouping.parts], kept


def _maps_onto(git: Git, commit: CommitId, base: CommitId, tip: CommitId,
               paths: Sequence[str]) -> bool:
    """Whether `commit`'s diff is the part's (`paths`, base to tip): it leaves them as the
    branch has them (no merge changed them since) and found them as the base has them (no
    merge kept them from upstream's changes, as `-s ours` does: the part's diff would then
    undo upstream's, under the commit's message)."""
    parents = git.commit(commit).parents  # a shallow clone may have cut them off
    return bool(parents) and commit not in shallow_commits(git) and git.ls_tree(
        commit, paths) == git.ls_tree(tip, paths) and (
        git.ls_tree(parents[0], paths) == git.ls_tree(base, paths))


def _subject(git: Git) -> Callable[[CommitId], str]:
    def subject(c: CommitId) -> str:
        info = git.commit(c)
        return summary_of(info.message, info.encoding)

    return subject


def _drafts(git: Git, stack: Sequence[stack_mod.StackCommit], queue: Queue,
            detect: Detector | None) -> tuple[Queue, tuple[Candidate, ...]]:
    """The queue with a draft `workaround` block on each patch whose added lines look like
    a workaround, and those lines."""
    if detect is None:
        return queue, ()
    entries, found = [], []
    for entry, sc in zip(queue.series.patches, stack, strict=True):
        sigs = [s for f in diffs.parse(sc.diff, f"{PATCHES_DIR}/{entry.name}")
                for s in detect(f)]
        sigs = sorted(set(sigs))
        found += [Candidate(entry.name, p, n, code.strip()) for p, n, code in sigs]
        if sigs:
            p, n, code = sigs[0]
            # series.yaml is UTF-8 text: a path or line whose bytes are not is shown with
            # escapes in the reason, and left out of `covers`, which must name real paths.
            where = printable(f"{p}:{n} `{' '.join(code.split())}`")
            entry = replace(entry, workaround={
                "kind": "compat-gap",
                "covers": sorted({s[0] for s in sigs if printable(s[0]) == s[0]}),
                "reason": f"DRAFT by pq import, review: {where}",
                "remove_when": [REVIEW],
            })
        entries.append(entry)
    if not found:
        return queue, ()
    series = replace(queue.series, patches=tuple(entries))
    fresh = stack_mod.export(git, stack, series, series.base, names=[e.name for e in entries])
    return fresh, tuple(found)


def _verify(git: Git, queue: Queue, base: CommitId, target: str, committer: Person,
            branch: str) -> None:
    """The rendered patch files, applied onto the base, rebuild the branch's tree."""
    try:
        applied = stack_mod.materialise(git, queue, base, committer, branch=False)
    except OperationFailed as exc:
        raise OperationFailed(f"import of {branch} not verified: {exc.path}: {exc.message}; "
                              "nothing was "
                              "written", hint="report this as a pq bug, with the branch") \
            from exc
    tree = git.tree_of(applied[-1][1]) if applied else git.tree_of(base)
    if tree != target:
        differ = git.diff_names(tree, target)
        raise OperationFailed(
            f"import of {branch} not verified: the patches applied onto {base[:12]} differ "
            f"from the branch in {', '.join(differ[:3]) or 'its tree'}; nothing was written",
            hint="report this as a pq bug; meanwhile `pq import --keep-commits` or "
                 "linearise the branch and `pq init`")


def _summaries(stack: Sequence[stack_mod.StackCommit], queue: Queue,
               kept: dict[str, CommitId | None]) -> tuple[ImportedPatch, ...]:
    """What each patch holds, and the fork commit whose message it keeps (`kept`)."""
    out = []
    for entry, sc in zip(queue.series.patches, stack, strict=True):
        files = diffs.parse(sc.diff, f"{PATCHES_DIR}/{entry.name}")
        source = kept.get(entry.name)
        out.append(ImportedPatch(entry.name, entry.layer, entry.summary,
                                 tuple(f.path for f in files),
                                 sum(len(f.added()) for f in files),
                                 sum(len(f.removed()) for f in files), source))
    return tuple(out)

