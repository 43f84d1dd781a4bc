"""How one patch commit lands on the stack so far, in memory: directly where upstream left
its files as the patch found them (unless git's directory renames could move one), else
by git's three-way merge (`merge-tree`), many such merges batched into one run
(BatchMerge).
"""

from __future__ import annotations

from pq.errors import GitError
from pq.git.merge import MergeResult
from pq.git.objects import MERGER, Change, Entry, TreeId
from pq.git.repo import Git
from pq.git.trees import TreeCollision, Trees
from pq.queue.files import is_queue_path
from pq.rebase.state import Step


def cherry_pick(git: Git, trees: Trees, batch: BatchMerge, step: Step, tip: str
                ) -> tuple[str, str | None]:
    """(outcome, new tree) of one patch on `tip`, in memory."""
    tip_tree = trees.tree_of(tip)
    own = batch.own(step)
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
    merged = batch.result(step, tip_tree)
    if merged is not None:
        tree, clean = merged, True
    elif batch.conflicts_onto(step, tip, tip_tree):
        return "conflict", None
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
    result = batch.merge(step, tip, tip_tree)
    return result.tree, result.clean


class BatchMerge:
    """The three-way content merges of many patches, in one `git merge-tree` run.

    A patch that only modifies files, each of which the tip still has at the same path,
    merges file by file: its merge on the tip is git's content merge of (its parent's
    blob, the tip's blob, its own blob) for each file, and the tip elsewhere. That merge
    is the same one wherever the tip still holds those blobs, so it is done ahead, for
    many patches at once, in trees holding just their files: first for every patch onto
    the tip the replay starts from; then, when the replay reaches a patch the batch could
    not take (an earlier patch changed one of its files since), for it and the patches
    after it (WINDOW of them) onto the tip of that moment. A patch that touches a file an
    earlier patch of the same batch touches waits for a later batch: a file edited by N
    patches takes N batches, which the patches of other files share. Renames, additions and
    deletions are left to the per-patch merge. Renames cannot move such a patch's files:
    every one exists on all three sides (no rename source or target), and git's directory
    renames only move paths one side adds into a folder the other side no longer has.
    """

    WINDOW = 200  # patches a batch started mid-replay looks ahead at

    def __init__(self, git: Git, trees: Trees, steps: list[Step],
                 changes: dict[str, list[Change]], tip: str, qp: tuple[str, ...]) -> None:
        self.git = git
        self.trees = trees
        self._steps = steps
        self._at = {step.commit: i for i, step in enumerate(steps)}
        self._own = {step.commit: [c for c in changes.get(step.commit, [])
                                   if not is_queue_path(c[0], qp)] for step in steps}
        # A conflicted merge of (commit, tip), kept for its next reader (replay's rerere
        # reuse) so that it is not merged again.
        self._kept: dict[tuple[str, str], MergeResult] = {}
        # Where .gitattributes files can be in the trees merged onto from here on: the
        # tip's, and those the patches still to replay touch (one process for the run).
        self._attribute_paths = git.attribute_paths(trees.tree_of(tip)) | {
            path for cs in changes.values() for path, _, _ in cs
            if path.rpartition("/")[2] == ".gitattributes"}
        self.merged: dict[str, dict[str, Entry | None]] = {}
        # The patches a batch found in conflict: their merged files, the conflicted ones,
        # and each conflicted file's entries on the two sides (the tip's, the patch's).
        self._in_conflict: dict[str, tuple[dict[str, Entry | None], tuple[str, ...],
                                           dict[str, tuple[Entry, Entry]]]] = {}
        self._sides: dict[tuple[str, str], dict[str, tuple[Entry, Entry]]] = {}
        self._read_ahead: set[str] = set()  # patches whose conflicted blobs were read
        self._onto: dict[str, str] = {}  # patch commit: the tree its batch merged onto
        self._refused = False  # git refused a batch: each patch is merged on its own
        self._batch(steps, trees.tree_of(tip))

    def own(self, step: Step) -> list[Change]:
        """The patch's changes to files other than the queue's."""
        return self._own[step.commit]

    def _files(self, step: Step, tree: str) -> list[tuple[str, Entry, Entry, Entry]] | None:
        """(path, parent's, tree's, own entry) of each file of a patch that merges file by
        file onto `tree` and needs a merge there; None for any other patch."""
        files = []
        for path, old, new in self.own(step):
            now = self.trees.lookup(tree, path)
            if old is None or new is None or now is None or not all(
                    e[0].startswith(("100", "120")) for e in (old, new, now)):
                return None
            files.append((path, old, now, new))
        return files if any(now != old for _, old, now, _ in files) else None

    def _batch(self, steps: list[Step], tree: str) -> None:
        """Merge onto `tree`, in one run, each of `steps` that merges file by file there
        and whose files no earlier one of `steps` touches (unless it has a merge already)."""
        if self._refused:
            return
        wanted: dict[str, list[tuple[str, Entry, Entry, Entry]]] = {}
        touched: set[str] = set()
        for step in steps:
            paths = [path for path, _, _ in self.own(step)]
            first = touched.isdisjoint(paths)
            touched.update(paths)
            if first and not self._ahead(step.commit, tree):
                files = self._files(step, tree)
                if files is not None:
                    wanted[step.commit] = files
        if len(wanted) < 2:
            return  # one merge costs the same either way
        trees = self.trees
        sides = [trees.edit_new({p: e[i] for f in wanted.values() for p, *e in f})
                 for i in range(3)]
        base = self.git.write_commit(sides[0], [], MERGER, MERGER, "pq rebase: base\n",
                                     branch=False)
        ours, theirs = (self.git.write_commit(t, [base], MERGER, MERGER, "pq rebase\n",
                                              branch=False) for t in sides[1:])
        try:
            merged = self.git.merge_commits(ours, theirs, self.attributes(tree))
        except GitError:
            self._refused = True  # and would refuse the next one: no batch from here on
            return
        if merged.notes:  # a conflict outside the files (none known): each merges on its own
            return
        conflicted = set(merged.conflicted_paths)
        for commit, files in wanted.items():
            entries = {p: trees.lookup(merged.tree, p) for p, *_ in files}
            hit = tuple(p for p, *_ in files if p in conflicted)
            self.merged.pop(commit, None)
            self._in_conflict.pop(commit, None)
            if hit:  # the same content conflict, conflict markers and all, as on its own
                self._in_conflict[commit] = (entries, hit, {p: (now, new) for p, _, now, new
                                                            in files if p in conflicted})
            else:
                self.merged[commit] = entries
            self._onto[commit] = tree

    def _ahead(self, commit: str, tip_tree: str) -> bool:
        """Whether a batch merged the patch already, in a way that holds on `tip_tree`."""
        found = self.merged.get(commit)
        if found is None and commit in self._in_conflict:
            found = self._in_conflict[commit][0]
        return found is not None and self._holds(commit, found, tip_tree)

    def attributes(self, tree: str) -> bytes:
        """The attributes git's merge reads with `tree` checked out (see gitio)."""
        return self.trees.attributes(tree, self._attribute_paths)

    def merge(self, step: Step, tip: str, tip_tree: str) -> MergeResult:
        """git's merge of `step` cherry-picked onto `tip` (whose tree is `tip_tree`). A
        conflicted one is kept for the next call with the same step and tip (replay's
        rerere reuse after `cherry_pick`), which takes it instead of merging again."""
        found = self._kept.pop((step.commit, tip), None)
        if found is not None:
            return found
        result = self.git.merge_trees(step.parent, tip, step.pick, ours_tree=tip_tree,
                                      attributes=self.attributes(tip_tree))
        if not result.clean:
            self._kept[(step.commit, tip)] = result
        elif any(new is not None and path.rpartition("/")[2] == ".gitattributes"
                 and self.trees.lookup(result.tree, path) is None
                 for path, _, new in self.own(step)):
            # The patch's .gitattributes did not land where it says: a directory rename
            # moved it (merge.directoryRenames). Later merges read it where it is now.
            self._attribute_paths |= self.git.attribute_paths(result.tree)
        return result

    def result(self, step: Step, tip_tree: str) -> str | None:
        """The patch merged onto `tip_tree`, or None when it must be merged on its own (or
        a batch found it in conflict: `conflicts_onto`). A patch no batch has merged in a
        way that holds here starts a batch onto `tip_tree`, of it and the patches after it."""
        if not self._ahead(step.commit, tip_tree) and self._files(step, tip_tree) is not None:
            at = self._at[step.commit]
            self._batch(self._steps[at:at + self.WINDOW], tip_tree)
        files = self.merged.get(step.commit)
        if files is None or not self._holds(step.commit, files, tip_tree):
            return None
        return self.trees.edit(tip_tree, files)

    def notes(self, step: Step, tip: str) -> tuple[str, ...]:
        """git's notes of the conflicted merge of `step` onto `tip` (MergeResult.notes)."""
        found = self._kept.get((step.commit, tip))
        return found.notes if found is not None else ()

    def conflicts_onto(self, step: Step, tip: str, tip_tree: str) -> bool:
        """Whether the batch's merge found the patch in conflict on `tip_tree`; that merge
        (the tip with the patch's files merged, markers in the conflicted ones) is then
        what `merge` gives for it, without a merge of its own."""
        found = self._in_conflict.get(step.commit)
        if found is None or not self._holds(step.commit, found[0], tip_tree):
            return False
        files, paths, sides = found
        self._kept[(step.commit, tip)] = MergeResult(
            TreeId(self.trees.edit(tip_tree, files)), False, paths)
        self._sides[(step.commit, tip)] = sides
        return True

    def conflict_sides(self, step: Step, tip: str) -> dict[str, tuple[Entry, Entry]]:
        """{path: (the tip's entry, the patch's)} of each conflicted file of the patch's
        merge onto `tip`, where a batch merged it (else empty: look them up in the trees)."""
        return self._sides.pop((step.commit, tip), {})

    def read_conflicts_ahead(self) -> None:
        """Read the conflict-marker blobs of every patch the batches found in conflict, not
        read yet, in one stream (rerere reuse reads them next, one patch at a time)."""
        ahead = [e[1] for commit, (entries, paths, _) in self._in_conflict.items()
                 if commit not in self._read_ahead for p in paths
                 if (e := entries.get(p)) is not None]
        self._read_ahead.update(self._in_conflict)
        if len(ahead) > 1:
            self.git.odb.read_many(ahead)

    def _holds(self, commit: str, files: dict[str, Entry | None], tip_tree: str) -> bool:
        """Whether a batch's merge of `files` is theirs on `tip_tree`: the tip still has the
        blobs the batch merged onto there, and merges them with the same attributes."""
        onto = self._onto[commit]
        if any(self.trees.lookup(tip_tree, p) != self.trees.lookup(onto, p) for p in files):
            return False
        return self.attributes(tip_tree) == self.attributes(onto)
