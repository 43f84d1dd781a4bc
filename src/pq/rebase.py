"""`pq rebase`: replay the series' commits onto a new upstream commit, in memory.

Each patch commit is replayed with cherry-pick semantics into a new commit object: a patch
whose files upstream left alone is applied to the trees directly, others go through git's
three-way merge (`merge-tree`). HEAD and the working tree move only for a conflict and at
the end (rebase_state owns those moves), after the series is re-exported.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Callable

from pq import queueops, rangediff
from pq import rebase_state as rs
from pq import series as series_mod
from pq import stack as stack_mod
from pq.errors import ConfigError
from pq.gitio import DIFF_CONFIG, DIFF_OPTIONS, CommitId, Git, Person
from pq.queuefiles import Queue, read_worktree, write_worktree
from pq.rebase_state import RebaseState, Step
from pq.series import PATCHES_DIR, SERIES_FILE
from pq.txn import Transaction

Progress = Callable[[int, int, str], None]
Entry = tuple[str, str]  # (mode, object id) of one path in a tree
Change = tuple[str, "Entry | None", "Entry | None"]  # path, before, after (None: absent)
_COMMIT_LINE = re.compile(rb"^commit ([0-9a-f]{40,64})$", re.M)


@dataclass
class PatchReport:
    name: str
    layer: str
    outcome: str  # clean, merged, dropped, conflict, skipped; `pending` after a stop
    rerere: bool = False
    upstream_commit: str | None = None
    upstream_subject: str | None = None
    commit: str | None = None
    changed: bool = False
    range_diff: list[str] = field(default_factory=list)


@dataclass
class RebaseReport:
    status: str  # done, up-to-date, conflict, aborted
    branch: str
    upstream_ref: str
    old_base: str
    onto: str
    upstream_count: int
    orig_head: str
    head: str | None = None
    patches: list[PatchReport] = field(default_factory=list)
    conflict: PatchReport | None = None
    conflict_paths: list[str] = field(default_factory=list)
    gate: bool = False


# -- starting -------------------------------------------------------------------------


def start(git: Git, upstream: str | None = None, *, gate: bool = False,
          progress: Progress | None = None) -> RebaseReport:
    rs.require_none(git)
    branch = queueops.require_branch(git)
    queue = read_worktree(git.root)
    series = queue.series
    ref = upstream or series.upstream_ref
    onto = git.resolve(ref, "upstream ref")
    qp = series.queue_paths
    queueops.require_clean(git, qp, "pq rebase")
    _require_clean_queue_dirs(git, qp)
    head = git.head()
    old_base = git.resolve(series.base, "series base (upstream.base in series.yaml)")
    stack = stack_mod.read_stack(git, old_base, head, qp)
    fresh = stack_mod.export(git, stack, series, old_base)
    if fresh.files != queue.files or [e.name for e in fresh.series.patches] != [
            e.name for e in series.patches]:
        raise ConfigError(f"{branch.removeprefix('refs/heads/')} has commits that differ from "
                          f"{SERIES_FILE}; rebasing would lose them", hint="run `pq export` first")
    if onto == old_base:
        return RebaseReport("up-to-date", branch.removeprefix("refs/heads/"), ref, old_base,
                            onto, 0, head, head, [PatchReport(e.name, e.layer, "clean")
                                                  for e in series.patches])
    layers = {e.name: e.layer for e in series.patches}
    with Transaction(git, f"pq rebase {ref}"):
        trees = Trees(git)
        changes = trees.load_changes([sc.commit for sc in stack])
        steps = []
        for entry, sc in zip(fresh.series.patches, stack):
            pick = _queue_free_pick(git, trees, sc.commit, sc.parent, changes[sc.commit], qp)
            steps.append(Step(entry.name, layers[entry.name], sc.commit, sc.parent, pick))
        state = RebaseState(
            command=f"pq rebase {ref}", branch=branch, orig_head=head, old_base=old_base,
            onto=onto, onto_ref=ref, upstream_count=0,
            prev_orig_head=git.try_resolve(rs.ORIG_HEAD_REF),
            queue_before=rs.save_queue_files(git), steps=steps, tip=onto, gate=gate)
        rs.save(git, state)
        state.upstream_count, matches = _upstream_patch_ids(git, old_base, onto, stack)
        for step, sc in zip(steps, stack):
            step.upstream_match = matches.get(sc.commit)
        return _run(git, state, trees, changes, progress, queue)


def _require_clean_queue_dirs(git: Git, qp: tuple[str, ...]) -> None:
    """Tracked files in mre/ and the other queue folders leave the working tree during a
    conflict; uncommitted edits there would stop that, so refuse them up front."""
    others = [p for p in qp if p not in (SERIES_FILE, PATCHES_DIR)]
    out = git.run("diff", "--name-only", "-z", "HEAD", "--", *others)
    dirty = [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]
    if dirty:
        raise ConfigError(f"uncommitted changes in {dirty[0]}; pq rebase would not carry "
                          "them", hint="commit them first (`pq export --commit` or `git "
                                       "commit`), then run it again")


def _queue_free_pick(git: Git, trees: Trees, commit: str, parent: str,
                     changes: list[Change], qp: tuple[str, ...]) -> str:
    """`commit`, or for a commit that also edits queue files a copy that does not."""
    undo = {path: old for path, old, _ in changes if stack_mod.is_queue_path(path, qp)}
    if not undo:
        return commit
    info = git.commit(commit)
    tree = trees.edit(info.tree, undo)
    return git.write_commit(tree, [parent], info.author, info.committer, info.message)


def _upstream_patch_ids(git: Git, old_base: str, onto: str,
                        stack: list[stack_mod.StackCommit]) -> tuple[int, dict[str, str]]:
    """(commits in old_base..onto, {patch commit: upstream commit with the same patch-id})."""
    # `git log` reads diff.orderFile (empty is an error); --stable ids ignore file order.
    config = [c for c in DIFF_CONFIG if not c.startswith("diff.orderFile")]
    config = config[:-1] if config[-1] == "-c" else config
    log = git.run(*config, "log", "-p", "--format=commit %H", "--diff-merges=off",
                  "--no-show-signature", *DIFF_OPTIONS, f"{old_base}..{onto}")
    count = len(_COMMIT_LINE.findall(log))
    if not count or not stack:
        return count, {}
    ours = b"".join(b"commit " + sc.commit.encode() + b"\n" + sc.diff for sc in stack)
    out = git.text("patch-id", "--stable", input=log + ours)
    upstream: dict[str, str] = {}
    mine = {sc.commit for sc in stack}
    patch_ids: dict[str, str] = {}
    for line in out.splitlines():
        pid, _, commit = line.partition(" ")
        if commit in mine:
            patch_ids[commit] = pid
        else:
            upstream[pid] = commit  # log runs newest first: the oldest match wins
    return count, {c: upstream[pid] for c, pid in patch_ids.items() if pid in upstream}


# -- continuing -----------------------------------------------------------------------


def resume(git: Git, action: str, progress: Progress | None = None) -> RebaseReport:
    """`--continue` (take the staged resolution) or `--skip` (drop the conflicted patch)."""
    state = _load(git)
    if state.phase != "conflict":
        raise ConfigError(f"the last pq rebase was interrupted while {state.phase}",
                          hint="`pq rebase --abort` restores the branch; then run the "
                               "rebase again")
    step = state.steps[state.index]
    if action == "continue":
        unmerged, changed = rs.unstaged_paths(git)
        if unmerged:
            raise ConfigError(f"{_list(unmerged)} still unmerged",
                              hint=f"edit, `git add {' '.join(unmerged)}`, then "
                                   "`pq rebase --continue`")
        if changed:
            raise ConfigError(f"changes in {_list(changed)} are not added",
                              hint="`git add` what belongs to the patch (or `git checkout -- "
                                   "<file>`), then `pq rebase --continue`")
    old = _queue_before(git, state)
    with Transaction(git, f"pq rebase --{action}"):
        trees = Trees(git)
        changes = trees.load_changes([s.commit for s in state.steps[state.index + 1:]])
        if action == "continue":
            tree = rs.write_index_tree(git)
            clean_tree = trees.without(tree, old.series.queue_paths)
            if clean_tree == trees.tree_of(state.tip):
                step.outcome = "dropped"
            else:
                step.outcome = "conflict"
                step.new_commit = _commit(git, trees, clean_tree, state.tip, step.commit,
                                          git.committer_now())
                state.tip = step.new_commit
            state.index += 1
            state.phase = "replaying"
            rs.save(git, state)
            if clean_tree != tree:
                rs.reset_to(git, state.tip)
            else:
                rs.advance_head(git, state.tip)
        else:
            step.outcome = "skipped"
            state.index += 1
            state.phase = "replaying"
            rs.save(git, state)
            rs.reset_to(git, state.tip)
        return _run(git, state, trees, changes, progress, old)


def abort(git: Git) -> RebaseReport:
    state = _load(git)
    with Transaction(git, "pq rebase --abort"):
        rs.restore(git, state)
        rs.remove(git)
    return RebaseReport("aborted", state.short_branch, state.onto_ref, state.old_base,
                        state.onto, state.upstream_count, state.orig_head, state.orig_head)


def _load(git: Git) -> RebaseState:
    state = rs.load(git)
    if state is None:
        raise ConfigError("no pq rebase in progress",
                          hint="start one with `pq rebase <upstream-ref>`")
    return state


def _queue_before(git: Git, state: RebaseState) -> Queue:
    files = {path: git.blob(obj) for path, obj in state.queue_before.items()}
    series = series_mod.loads(files[SERIES_FILE], SERIES_FILE)
    return Queue(series, {e.name: files.get(f"{PATCHES_DIR}/{e.name}", b"")
                          for e in series.patches})


# -- the replay -----------------------------------------------------------------------


def _run(git: Git, state: RebaseState, trees: Trees, changes: dict[str, list[Change]],
         progress: Progress | None, old: Queue) -> RebaseReport:
    committer = git.committer_now()
    qp = old.series.queue_paths
    total = len(state.steps)
    while state.index < total:
        step = state.steps[state.index]
        if progress:
            progress(state.index, total, step.name)
        if step.upstream_match:
            step.outcome, step.upstream_commit = "dropped", step.upstream_match
            state.index += 1
            continue
        outcome, tree = _replay(git, trees, step, state.tip, changes[step.commit], qp)
        shown = False
        if outcome == "conflict":
            unmerged, rerere = rs.show_conflict(git, state, step.pick)
            if unmerged:
                state.phase = "conflict"
                state.conflict_paths = unmerged
                rs.save(git, state)
                return _report(git, state, "conflict", old, None)
            # git rerere resolved every conflict from a recorded resolution: take it.
            shown = True
            tree = trees.without(rs.write_index_tree(git), qp)
            outcome, step.rerere = "merged", rerere
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
    return _finish(git, state, old, committer)


def _replay(git: Git, trees: Trees, step: Step, tip: str, changes: list[Change],
            qp: tuple[str, ...]) -> tuple[str, str | None]:
    """(outcome, new tree) of one patch on `tip`, in memory."""
    tip_tree = trees.tree_of(tip)
    own = [c for c in changes if not stack_mod.is_queue_path(c[0], qp)]
    if all(trees.lookup(tip_tree, path) == old for path, old, _ in own):
        # Upstream left every file the patch touches as the patch found it: no merge needed.
        try:
            return "clean", trees.edit(tip_tree, {path: new for path, _, new in own})
        except TreeCollision:
            pass  # a file became a folder or the other way round: let git's merge decide
    result = git.merge_trees(CommitId(step.parent), CommitId(tip), CommitId(step.pick))
    if not result.clean:
        return "conflict", None
    if result.tree == tip_tree:
        return "dropped", None
    return "merged", result.tree


def _commit(git: Git, trees: Trees, tree: str, parent: str, original: str,
            committer: Person) -> str:
    info = git.commit(original)
    commit = git.write_commit(tree, [parent], info.author, committer, info.message)
    trees.commit_trees[commit] = tree
    return commit


def _finish(git: Git, state: RebaseState, old: Queue, committer: Person) -> RebaseReport:
    qp = old.series.queue_paths
    new_stack = stack_mod.read_stack(git, state.onto, state.tip, qp)
    queue = stack_mod.export(git, new_stack, old.series, state.onto)
    state.new_tip = queueops.bookkeeping_commit(
        git, state.tip, state.orig_head, queue, committer,
        f"pq: rebase series onto {state.onto[:12]}\n")
    rs.land(git, state)
    write_worktree(git.root, queue)
    rs.remove(git)
    return _report(git, state, "done", old, queue)


def _report(git: Git, state: RebaseState, status: str, old: Queue,
            new: Queue | None) -> RebaseReport:
    patches = []
    for i, step in enumerate(state.steps):
        outcome = step.outcome or "pending"
        if status == "conflict" and i == state.index:
            outcome = "conflict"
        p = PatchReport(step.name, step.layer, outcome, step.rerere, step.upstream_commit,
                        commit=step.new_commit)
        if step.upstream_commit:
            p.upstream_subject = git.commit(step.upstream_commit).subject
        if new is not None and step.name in new.files:
            p.range_diff = rangediff.summary(old.files.get(step.name, b""), new.files[step.name])
            p.changed = bool(p.range_diff)
        patches.append(p)
    report = RebaseReport(status, state.short_branch, state.onto_ref, state.old_base,
                          state.onto, state.upstream_count, state.orig_head, state.new_tip,
                          patches, gate=state.gate)
    if status == "conflict":
        report.conflict = patches[state.index]
        report.conflict_paths = list(state.conflict_paths)
    return report


def _list(paths: list[str]) -> str:
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


# -- trees in memory --------------------------------------------------------------------


class TreeCollision(Exception):
    """A path needs a folder where there is a file, or the other way round."""


class Trees:
    """Tree objects read through gitio's cat-file pipe and written in-process, cached."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.commit_trees: dict[str, str] = {}
        self._entries: dict[str, dict[bytes, tuple[bytes, str]]] = {}

    def load_changes(self, commits: list[str]) -> dict[str, list[Change]]:
        """What each commit changes against its first parent, path by path (one process)."""
        result: dict[str, list[Change]] = {c: [] for c in commits}
        if not commits:
            return result
        out = self.git.run("diff-tree", "--stdin", "-r", "-z", "--no-renames",
                           input="".join(c + "\n" for c in commits).encode())
        fields = out.split(b"\0")
        current = ""
        i = 0
        while i < len(fields):
            f = fields[i]
            if f.startswith(b":"):
                old_mode, new_mode, old, new, _ = f[1:].decode().split()
                path = fields[i + 1].decode("utf-8", "surrogateescape")
                result[current].append((path, None if old_mode == "000000" else (old_mode, old),
                                        None if new_mode == "000000" else (new_mode, new)))
                i += 2
                continue
            if f:
                current = f.decode().strip()
            i += 1
        return result

    def tree_of(self, commit: str) -> str:
        tree = self.commit_trees.get(commit)
        if tree is None:
            tree = self.commit_trees[commit] = self.git.commit(commit).tree
        return tree

    def entries(self, tree: str) -> dict[bytes, tuple[bytes, str]]:
        cached = self._entries.get(tree)
        if cached is None:
            data = self.git.read_object(tree)[2]
            size = len(tree) // 2
            cached = {}
            i = 0
            while i < len(data):
                sp = data.index(b" ", i)
                nul = data.index(b"\0", sp)
                cached[data[sp + 1:nul]] = (data[i:sp], data[nul + 1:nul + 1 + size].hex())
                i = nul + 1 + size
            self._entries[tree] = cached
        return cached

    def lookup(self, tree: str, path: str) -> Entry | None:
        parts = path.encode("utf-8", "surrogateescape").split(b"/")
        entries = self.entries(tree)
        for part in parts[:-1]:
            entry = entries.get(part)
            if entry is None or not _is_tree(entry[0]):
                return None
            entries = self.entries(entry[1])
        found = entries.get(parts[-1])
        return None if found is None else (found[0].decode(), found[1])

    def edit(self, tree: str, changes: dict[str, Entry | None]) -> str:
        """`tree` with each path set to (mode, object) or removed (None)."""
        encoded = {p.encode("utf-8", "surrogateescape"): v for p, v in changes.items()}
        return self._edit(tree, encoded) or self.git.empty_tree()

    def without(self, tree: str, paths: tuple[str, ...]) -> str:
        """`tree` without `paths` (files or folders)."""
        present: dict[str, Entry | None] = {p: None for p in paths
                                            if self.lookup(tree, p) is not None}
        return self.edit(tree, present) if present else tree

    def _edit(self, tree: str | None, changes: dict[bytes, Entry | None]) -> str | None:
        entries = dict(self.entries(tree)) if tree else {}
        direct: dict[bytes, Entry | None] = {}
        nested: dict[bytes, dict[bytes, Entry | None]] = {}
        for path, value in changes.items():
            head, sep, rest = path.partition(b"/")
            if sep:
                nested.setdefault(head, {})[rest] = value
            else:
                direct[head] = value
        for name, value in direct.items():
            if value is None:
                entries.pop(name, None)
        for name, sub in nested.items():
            current = entries.get(name)
            if current is not None and not _is_tree(current[0]):
                raise TreeCollision(name.decode("utf-8", "replace"))
            subtree = self._edit(current[1] if current else None, sub)
            if subtree is None:
                entries.pop(name, None)
            else:
                entries[name] = (b"40000", subtree)
        for name, value in direct.items():
            if value is not None:
                current = entries.get(name)
                if current is not None and _is_tree(current[0]):
                    raise TreeCollision(name.decode("utf-8", "replace"))
                entries[name] = (value[0].encode(), value[1])
        if not entries:
            return None
        ordered = sorted(entries.items(),
                         key=lambda kv: kv[0] + b"/" if _is_tree(kv[1][0]) else kv[0])
        data = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(obj)
                        for name, (mode, obj) in ordered)
        new = self.git.write_object("tree", data)
        self._entries[new] = entries
        return new


def _is_tree(mode: bytes) -> bool:
    return mode in (b"40000", b"040000")
