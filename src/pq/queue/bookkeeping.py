"""The bookkeeping commit: a commit that carries the queue (series.yaml, patches/*.patch,
the other queue folders such as mre/), built in memory with pq.git.trees.

`queue.ops` (export --commit, apply) and the rebase both make it here; the folders other
than series.yaml and patches/ come from a commit, or from the working tree
(`commit_queue`: the queue just written there, as `pq export --commit` commits it).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Callable

from pq.errors import ConfigError, GitError
from pq.git.objects import CommitId, Entry, Person
from pq.git.odb import is_tree_mode
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.model.series import PATCHES_DIR, SERIES_FILE
from pq.model.subjects import is_bookkeeping
from pq.queue.files import Queue, index_entries


def only_queue_files(git: Git, commit: str, parent: str, diff: bytes) -> bool:
    """Whether `commit`, whose change outside the queue's files is `diff`, changes only
    those files: bookkeeping, not a patch (a commit that changes nothing is a patch)."""
    return not diff.strip() and git.commit(commit).tree != git.tree_of(parent)


def written_by_pq(git: Git, commit: str) -> bool:
    """Whether `commit` is one of pq's bookkeeping commits, by its subject
    (pq.model.subjects)."""
    return is_bookkeeping(git.commit(commit).message)


def queue_blobs(trees: Trees, commit: str) -> dict[str, str]:
    """{path: blob} of series.yaml and patches/* as committed in `commit`."""
    tree = trees.tree_of(commit)
    blobs: dict[str, str] = {}
    series = trees.lookup(tree, SERIES_FILE)
    if series is not None and not is_tree_mode(series[0].encode()):
        blobs[SERIES_FILE] = series[1]
    patches = trees.lookup(tree, PATCHES_DIR)
    if patches is not None and is_tree_mode(patches[0].encode()):
        for name, (mode, obj) in trees.entries(patches[1]).items():
            if not is_tree_mode(mode) and name.endswith(b".patch"):
                blobs[f"{PATCHES_DIR}/{name.decode('utf-8', 'surrogateescape')}"] = obj
    return blobs


def bookkeeping_commit(git: Git, last: str, source: str | None, queue: Queue,
                       who: tuple[Person, Person], message: str, trees: Trees | None = None,
                       series_bytes: bytes | None = None) -> CommitId:
    """A commit on `last` carrying `queue`'s files, with the other queue folders (mre/) as
    they are in the commit `source`, or in the working tree when `source` is None; `last`
    itself when that changes nothing. The user's own files in patches/ (not *.patch) stay
    as `source` (or HEAD) has them. `series_bytes`: `queue.series.dumps()`, where the
    caller has it already (for 10,000 patches the dump takes a second). `who`: (author,
    committer), as `git commit` would take them now."""
    trees = trees or Trees(git)
    qp = queue.series.queue_paths
    last_tree = trees.tree_of(last)
    source_tree = trees.tree_of(source if source is not None else git.head())
    known = set(queue_blobs(trees, source).values()) if source is not None else set()
    changes: dict[str, Entry | None] = {p: None for p in qp
                                        if trees.lookup(last_tree, p) is not None}
    others = [p for p in qp if p not in (SERIES_FILE, PATCHES_DIR)]
    if source is not None:
        for p in others:
            entry = trees.lookup(source_tree, p)
            if entry is not None:
                changes[p] = entry
    else:
        changes.update(worktree_entries(git, others))
    kept = trees.lookup(source_tree, PATCHES_DIR)
    kept_entries = (trees.entries(kept[1]) if kept is not None and is_tree_mode(kept[0].encode())
                    else {})
    patches = {}
    for name, data in queue.files.items():
        raw = name.encode("utf-8", "surrogateescape")
        executable = kept_entries.get(raw, (b"", ""))[0] == b"100755"  # kept as committed
        patches[raw] = (b"100755" if executable else b"100644", _blob(git, data, known))
    for raw, item in kept_entries.items():
        if is_tree_mode(item[0]) or not raw.endswith(b".patch"):
            patches.setdefault(raw, item)
    if patches:
        changes[PATCHES_DIR] = ("40000", trees.write_tree(patches))
    series_entry = trees.lookup(source_tree, SERIES_FILE)
    if series_bytes is None:
        series_bytes = queue.series.dumps()
    changes[SERIES_FILE] = ("100755" if series_entry and series_entry[0] == "100755"
                            else "100644", _blob(git, series_bytes, known))
    tree = trees.edit(last_tree, changes)
    if tree == last_tree:
        return CommitId(last)
    return git.write_commit(tree, [last], *who, message, branch=True)


def worktree_entries(git: Git, paths: list[str]) -> dict[str, Entry]:
    """{path: (mode, blob)} for the files under `paths` in the working tree, tracked or
    not (ignored files excepted); blobs are written. A file's mode is what `git add` would
    stage: under `core.fileMode=false`, its index entry's, not the executable bit."""
    if not paths:
        return {}
    indexed = None if git.config_bool("core.fileMode") is not False else {
        path: meta.split(" ", 1)[0]
        for meta, path in (r.split("\t", 1) for r in git.ls_files(paths, stage=True))}
    entries: dict[str, Entry] = {}
    for rel in sorted(set(git.ls_files(paths, cached=True, others=True))):
        p = git.root / rel
        if p.is_symlink():
            entries[rel] = ("120000", git.write_blob(os.fsencode(os.readlink(p))))
        elif p.is_file():
            executable = os.access(p, os.X_OK) if indexed is None else (
                indexed.get(rel) == "100755")
            mode = "100755" if executable else "100644"
            entries[rel] = (mode, git.write_blob(p.read_bytes()))
    return entries


def _blob(git: Git, data: bytes, known: set[str]) -> str:
    oid = git.hash_blob(data)
    return oid if oid in known else git.write_blob(data)


def commit_queue(git: Git, message: str, queue: Queue, expect: CommitId,
                 who: tuple[Person, Person]) -> CommitId | None:
    """Commit the queue's files, just written to the working tree as `queue`, on `expect`
    as a bookkeeping commit by `who` (author, committer), if they changed anything.

    series.yaml and the patch files are committed with the bytes pq wrote (their clean
    form): `git add` under core.autocrlf would strip the CR bytes of a patch of a CRLF
    file, and a .gitignore that names them does not stop pq (as with `pq apply`); where it
    names mre/ or .pq/, the files git tracks there are committed, the ones it ignores are not.
    Only the queue's paths are committed; other staged changes stay staged."""
    qp = queue.series.queue_paths
    others = [p for p in qp if p not in (SERIES_FILE, PATCHES_DIR)  # mre/, .pq/, ...
              and ((git.root / p).exists() or _tracked(git, p))]
    ignored = git.ignored(others)  # a .gitignore names the folder: its tracked files only
    git.add([p for p in others if p not in ignored], all=True)
    git.add([p for p in others if p in ignored], tracked=True)
    before = index_entries(git)
    modes = _staged_modes(git, before)
    exact = [f"{modes(f'{PATCHES_DIR}/{name}')} {git.write_blob(data)} 0\t{PATCHES_DIR}/{name}"
             for name, data in queue.files.items()]
    assert queue.series_bytes is not None
    exact.append(f"{modes(SERIES_FILE)} {git.write_blob(queue.series_bytes)} 0\t{SERIES_FILE}")
    git.set_index_entries(before, exact)
    staged = []
    for rec in git.ls_files(qp, stage=True):
        meta, path = rec.split("\t", 1)
        mode, obj, _stage = meta.split()
        staged.append((mode, obj, path))
    tree = git.build_tree(git.tree_of(expect), remove=list(qp), add=staged)
    if tree == git.tree_of(expect):
        return None
    commit = git.write_commit(tree, [expect], *who, message + "\n", branch=True)
    branch = git.current_branch() or "HEAD"
    try:
        git.update_ref("HEAD", commit, expect, f"commit: {message}")
    except GitError:
        if (now := git.try_resolve("HEAD")) == expect:
            raise
        # A commit made meanwhile (it may hold the queue files pq had just staged).
        raise ConfigError(f"{branch.removeprefix('refs/heads/')} moved to "
                          f"{(now or '(none)')[:12]} while pq committed the series "
                          "(a commit made meanwhile?); that commit is kept, and series.yaml "
                          "and patches/ are written and staged",
                          hint="check what that commit holds (`git show --stat HEAD`), then "
                               "run the command again; `pq undo` refuses to drop that commit "
                               "(`pq undo --force` would, and `pq redo` brings it back)"
                          ) from None
    return commit


def _staged_modes(git: Git, entries: list[str]) -> Callable[[str], str]:
    """The mode `git add` would stage for a queue file pq just wrote: its executable bit
    on disk, or, under `core.fileMode=false`, the one its index entry has; else 100644."""
    indexed = {path: meta.split(" ", 1)[0] for meta, path in (e.split("\t", 1) for e in entries)}
    trust_disk = git.config_bool("core.fileMode") is not False

    def mode(path: str) -> str:
        if trust_disk:
            try:
                st = (git.root / path).lstat()
            except OSError:
                return "100644"
            return "100755" if stat.S_ISREG(st.st_mode) and st.st_mode & 0o100 else "100644"
        return "100755" if indexed.get(path) == "100755" else "100644"
    return mode


def _tracked(git: Git, path: str) -> bool:
    return bool(git.ls_files([path]))
