"""`pq split <patch> --by-layer`: one series patch becomes one patch per layer.

The patch's hunks are classified (pq.model.layers); hunks of one layer form one new patch,
the parts in the order their first hunk has in the patch. Documentation hunks go with the
part that keeps the patch's name. The part of the declared layer (the first part when no
part has it) keeps the patch's name, summary and every other field; the others are named
`<stem>-<layer>.patch` and summarised `<summary> (<layer> part)`. Each part is a commit
whose files are the pre-image with the hunks of that part and the parts before it applied
by their line numbers to the real blobs, so the last part's tree is the original commit's
tree, byte for byte (checked), and the patches after it keep their trees. The branch is
rewritten (a bookkeeping commit on top, as `pq apply` leaves it) inside a transaction;
`pq undo` brings the old branch and queue back.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from pq.errors import ConfigError
from pq.git.objects import CommitId, Entry, TreeId
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.model import diff as diffs
from pq.model import layers, patchfile
from pq.model.series import NAME_RE, PATCHES_DIR, SERIES_FILE, PatchEntry
from pq.oplog.txn import Transaction
from pq.queue import rewrite
from pq.queue import stack as stack_mod
from pq.queue.files import read_worktree

GITLINK = "160000"


@dataclass(frozen=True)
class Part:
    name: str
    layer: str
    hunks: int  # how many hunks (files without hunks count one)
    files: tuple[str, ...]


@dataclass(frozen=True)
class SplitResult:
    patch: str
    parts: tuple[Part, ...]
    tip: CommitId
    branch: str
    notes: tuple[str, ...] = ()


def part_name(stem: str, layer: str, taken: set[str]) -> str:
    """`<stem>-<layer>.patch`, with `-2`, `-3`... when that name is taken; the stem cut
    short where the name would be longer than a patch name may be."""
    name, n = f"{stem}-{layer}.patch", 2
    while name in taken or not NAME_RE.match(name):
        suffix = f"-{layer}-{n}.patch"
        name, n = f"{stem[:200 - len(suffix)]}{suffix}", n + 1
    return name


def _patch_name(arg: str) -> str:
    return arg.rsplit("/", 1)[-1] if arg.startswith(f"{PATCHES_DIR}/") else arg


def _lines(data: bytes) -> list[bytes]:
    """`data` as git's lines, each with its newline (the last one may have none)."""
    parts = data.split(b"\n")
    return [p + b"\n" for p in parts[:-1]] + ([parts[-1]] if parts[-1] else [])


def apply_hunks(old: bytes, new: bytes, hunks: tuple[diffs.Hunk, ...], keep: set[int]) -> bytes:
    """`old` with the hunks whose index is in `keep` applied: each replaces its old lines
    by its lines of `new`, taken by number from the real blobs, so bytes (CR, a missing
    final newline) are exact."""
    a, b, out, pos = _lines(old), _lines(new), [], 0
    for i, h in enumerate(hunks):
        start = h.old_start if h.old_count == 0 else h.old_start - 1
        out += a[pos:start]
        if i in keep:
            nstart = h.new_start if h.new_count == 0 else h.new_start - 1
            out += b[nstart:nstart + h.new_count]
        else:
            out += a[start:start + h.old_count]
        pos = start + h.old_count
    return b"".join(out + a[pos:])


def _group(files: tuple[diffs.FileDiff, ...], decisions: list[layers.HunkDecision],
           declared: str) -> tuple[list[str], dict[tuple[str, int | None], str]]:
    """The parts' layers in order of first appearance, and each hunk's part."""
    order: list[str] = []
    for d in decisions:
        if d.layer != layers.DOCS and d.layer not in order:
            order.append(d.layer)
    home = declared if declared in order else (order[0] if order else declared)
    where = {(d.path, d.hunk): home if d.layer == layers.DOCS else d.layer for d in decisions}
    return order or [home], where


def split(git: Git, patch: str) -> SplitResult:
    name = _patch_name(patch)
    with Transaction(git, f"pq split {name} --by-layer", mutating=False) as t:
        queue = read_worktree(git)
        series = queue.series
        entry = series.entry(name)
        if entry is None:
            raise ConfigError(f"{name} is not a patch of the series", path=SERIES_FILE,
                              hint="`pq series` lists the patches; give one of those names")
        branch, head, stack = rewrite.series_stack(git, queue, "pq split", "splitting")
        index = series.index_of(name)
        sc = stack[index]
        files = diffs.parse(sc.diff, f"{PATCHES_DIR}/{name}")
        decisions = layers.together(files, layers.classify_hunks(files, stack_mod.post_image(
            git, sc)))
        order, where = _group(files, decisions, entry.layer)
        if len(order) < 2:
            raise ConfigError(f"{PATCHES_DIR}/{name} has one layer ({order[0]}); there is "
                              "nothing to split", hint="`pq classify` shows each hunk's layer")
        taken = {e.name for e in series.patches}
        stem = name.removesuffix(".patch")
        home = entry.layer if entry.layer in order else order[0]
        names = [name if layer == home else part_name(stem, layer, taken) for layer in order]
        trees = _part_trees(git, name, sc, files, where, order)
        committer = git.committer_now()
        parent = sc.parent
        info = git.commit(sc.commit)
        for layer, pname, tree in zip(order, names, trees, strict=True):
            message = info.message if pname == name else patchfile.add_trailer(
                _part_message(sc.message, layer), pname)
            parent = git.write_commit(tree, [parent], sc.author, committer, message,
                                      sc.encoding, branch=True)
        for later in stack[index + 1:]:
            c = git.commit(later.commit)
            parent = git.write_commit(c.tree, [parent], c.author, committer, c.message,
                                      c.encoding, branch=True)
        entries = list(series.patches)
        new = [replace(entry, layer=layer) if n == name else PatchEntry(
            n, layer, f"{entry.summary} ({layer} part)") for layer, n in zip(order, names)]
        entries[index:index + 1] = new
        new_series = replace(series, patches=tuple(entries))
        tip = rewrite.land(git, t, branch, head, parent, new_series,
                           [e.name for e in entries], committer, "pq split",
                           f"pq: split {name} by layer\n")
    parts = tuple(Part(n, layer, sum(1 for w in where.values() if w == layer),
                       tuple(dict.fromkeys(p for (p, _), w in where.items() if w == layer)))
                  for layer, n in zip(order, names))
    others = [n for n in names if n != name]
    notes = (f"the workaround block stays with {name}; {', '.join(others)} "
             f"get{'s' if len(others) == 1 else ''} none: declare one where a part holds "
             "workaround code (`pq audit workarounds` names it), and keep the block's "
             "`covers` to the files its part still changes",) if entry.workaround else ()
    return SplitResult(name, parts, tip, branch.removeprefix("refs/heads/"), notes)


def _part_message(message: str, layer: str) -> str:
    subject, nl, rest = message.partition("\n")
    return f"{subject} ({layer} part){nl}{rest}"


def _part_trees(git: Git, name: str, sc: stack_mod.StackCommit, files: tuple[diffs.FileDiff, ...],
                where: dict[tuple[str, int | None], str], order: list[str]) -> list[TreeId]:
    """The tree after each part: every file as the parts up to it leave it."""
    trees = part_trees(git, sc.parent, sc.commit, files, where, order)
    if trees[-1] != git.tree_of(sc.commit):
        raise ConfigError(f"splitting {PATCHES_DIR}/{name} by layer "
                          "would not rebuild its tree exactly; nothing was changed",
                          hint="split it by hand: `git rebase -i` and `pq export`")
    return trees


def part_trees(git: Git, parent: str, commit: str, files: tuple[diffs.FileDiff, ...],
               where: dict[tuple[str, int | None], str], order: list[str]) -> list[TreeId]:
    """The tree after each part of the change parent..commit (`files`, its parsed diff):
    part `order[k]` holds the hunks `where` gives it ((path, hunk index or None for a file
    without hunks) -> part); every file is as the parts up to it leave it, its hunks applied
    by line number to the real blobs (`apply_hunks`). The last tree is `commit`'s when every
    hunk has a part in `order`; callers check."""
    base_tree = git.tree_of(parent)
    paths = sorted({p for f in files for p in (f.old, f.new) if p is not None})
    before = {p: (m, o) for m, _k, o, p in git.ls_tree(parent, paths)} if paths else {}
    after = {p: (m, o) for m, _k, o, p in git.ls_tree(commit, paths)} if paths else {}
    editor = Trees(git)  # trees edited in memory: no process per part
    trees = []
    for k in range(len(order)):
        upto = set(order[:k + 1])
        changes: dict[str, Entry | None] = {}
        for f in files:
            mine = [i for i in range(len(f.hunks)) if where[(f.path, i)] in upto]
            if not (mine or (not f.hunks and where[(f.path, None)] in upto)):
                continue
            if f.old is not None:
                changes[f.old] = None
            if f.new is None:
                continue
            mode, obj = after[f.new]
            if len(mine) < len(f.hunks) and mode != GITLINK:
                old = git.blob(before[f.old][1]) if f.old in before else b""
                obj = git.write_blob(apply_hunks(old, git.blob(obj), f.hunks, set(mine)))
            changes[f.new] = (mode, obj)
        # What a file (or folder) of this part replaces goes with it, whatever part its
        # layer gives it (layers.together keeps most such pairs in one part already; files
        # of several layers under one new folder need this): no tree holds both.
        for path in [p for p, v in changes.items() if v is not None]:
            for f in files:
                if f.old is not None and f.old not in changes and f.old != f.new and (
                        f.old.startswith(path + "/") or path.startswith(f.old + "/")):
                    changes[f.old] = None
        trees.append(TreeId(editor.edit(base_tree, changes)))
    return trees
