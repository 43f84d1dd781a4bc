"""Snapshots: everything pq can change, taken as data and put back file by file.

A snapshot (a plain dict, see `take`) holds HEAD, every `refs/heads/*` and `refs/pq/*` ref,
the queue files (`series.yaml`, `patches/`; their bytes stored as blobs) with their index
entries, pq's own state files in `.git/pq`, and while a rebase is in progress the conflict
in the working tree. `pq.oplog.log` stores snapshots in log entries; `pq.oplog.undo` puts
one back with the `write_*` functions here."""

from __future__ import annotations

import json
import os
import re
import stat
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pq.atomic import write_atomic
from pq.background import Background
from pq.errors import ConfigError, GitError
from pq.faults import checkpoint
from pq.git.objects import HEX_ID
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.model.series import DEFAULT_QUEUE_PATHS, PATCHES_DIR, SERIES_FILE
from pq.quoting import shell_args

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

QUEUE_PATHS = DEFAULT_QUEUE_PATHS  # series.yaml, patches/, mre/, .pq/
LOG_REF = "refs/pq/oplog"  # the log's own ref (pq.oplog.log): no snapshot records it
STATE_SKIP = ("oplog", "lock", "sealed", "tmp", "gate")  # .git/pq entries no snapshot
# carries: a legacy log, the lock, sealed copies, temporary indexes and the gate's stage logs
STATE_MAX_BYTES = 1024 * 1024
REBASE_STATE = "rebase/state.json"  # under .git/pq: a rebase in progress (pq.rebase.state)
CONFLICT_WRITES = "tmp/conflict-writes"  # under .git/pq: where a conflict's files are written
_LITERAL = {"GIT_LITERAL_PATHSPECS": "1"}
_SAFE_PATH = re.compile(r"^(?!/)(?!.*(?:^|/)\.\.?(?:/|$))[^\0]+$")

Snapshot = dict[str, Any]


def take(git: Git, commits: set[str] | None = None,
         queue_paths: tuple[str, ...] = QUEUE_PATHS) -> Snapshot:
    """Everything pq can change: HEAD, every branch and refs/pq/* ref, the queue files
    (bytes stored as blobs) and their index entries, and pq's own state files.

    `commits`, when given, receives the ids of the commits the snapshot names (the log
    keeps those reachable)."""
    # While a rebase is in progress the conflict is read too: git looks at the working
    # tree for it while the refs and the queue files are read.
    changed = (Background(lambda: git.changed_from(env=_LITERAL), "pq git diff")
               if (git.pq_dir() / REBASE_STATE).is_file() else None)
    try:
        return _take(git, commits, queue_paths, changed)
    finally:
        if changed is not None:
            changed.wait()


def _take(git: Git, commits: set[str] | None, queue_paths: tuple[str, ...],
          changed: Background[set[str]] | None) -> Snapshot:
    head_ref = None
    refs: dict[str, str] = {}
    named = commits if commits is not None else set()
    for name, kind, sha, is_head in _listed_refs(git):
        if name != LOG_REF and not name.startswith(LOG_REF + "/"):
            refs[name] = sha
            if kind == "commit":
                named.add(sha)
            if is_head:
                head_ref = name
    head_commit = refs.get(head_ref) if head_ref else None
    if head_ref is None:
        head_ref = git.current_branch()  # an unborn branch, or (usually) a detached HEAD
        if head_ref is None:
            head_commit = git.try_resolve("HEAD")
            if head_commit:
                named.add(head_commit)
    known = _committed_blobs(git, head_commit, queue_paths)
    files: dict[str, str] = {}
    for qp in queue_paths:
        keep = is_pqs if qp in (SERIES_FILE, PATCHES_DIR) else _carried(git, qp).__contains__
        files.update(_store_tree(git, [(git.root / qp, qp)], known=known, keep=keep))
    index = sorted(git.ls_files(queue_paths, stage=True))
    state = _store_tree(git, [(child, child.name) for child in state_children(git.pq_dir())],
                        STATE_MAX_BYTES)
    worktree = (_conflict(git, queue_paths, changed.result())
                if changed is not None and REBASE_STATE in state else {})
    if REBASE_STATE in state:
        named.update(_made_by_the_rebase(git))
    return {"head": head_ref or "HEAD", "head_commit": head_commit, "refs": refs,
            "files": files, "index": [e for e in index if e], "state": state,
            "worktree": worktree, "checkout": git.worktree(), "scope": list(queue_paths)}


def _made_by_the_rebase(git: Git) -> set[str]:
    """The commits a rebase in progress wrote (its stack so far, the finished stack not
    landed yet), which only its state file names: the log keeps them from `git gc` too."""
    try:  # (a state pq did not write names none: `pq status` says what is wrong with it)
        data = json.loads((git.pq_dir() / REBASE_STATE).read_bytes())
        ids = {data["tip"], data.get("new_tip"), *(s.get("new_commit") for s in data["steps"])}
    except (OSError, ValueError, LookupError, TypeError, AttributeError, RecursionError):
        return set()
    found = sorted(i for i in ids if isinstance(i, str) and HEX_ID.fullmatch(i))
    return {i for i, got in zip(found, git.odb.read_many(found), strict=True)
            if got is not None and got[1] == "commit"}


def narrow(snap: Snapshot, scope: Sequence[str]) -> Snapshot:
    """`snap` with only the queue files and index entries under `scope`: snapshots of older
    versions recorded series.yaml and patches/ only, and say nothing of mre/ or .pq/."""
    return {**snap, "scope": list(scope),
            "files": {p: v for p, v in snap["files"].items() if in_queue(p, scope)},
            "index": [e for e in snap["index"] if in_queue(e.split("\t", 1)[-1], scope)]}


def require_same_checkout(git: Git, snap: Snapshot, what: str, command: str) -> None:
    """Refuse to put back, in this worktree, a snapshot another worktree took: its HEAD,
    index and files are that one's (snapshots of older versions do not say)."""
    elsewhere = git.other_worktree(snap.get("checkout"))
    if elsewhere is not None:
        gone = git.worktree_gone(snap.get("checkout"))
        raise ConfigError(f"{what} ran in the worktree {elsewhere}" + (
            ", which is gone: its HEAD, index and files went with it" if gone else
            ": its HEAD, index and files are that one's, not this one's"), hint=(
            "`pq undo --op <id> --force` goes back to before one that ran here (`pq log`)"
            if gone else f"run `{command}` there (`cd {shell_args([elsewhere])}`)"))


def _conflict(git: Git, queue_paths: tuple[str, ...], changed: set[str]) -> dict[str, Any]:
    """While a rebase is in progress: every path but the queue's whose index entry or file
    differs from HEAD (`changed`: a conflict shown in the working tree, a resolution being
    staged), exactly."""
    paths = sorted(p for p in changed
                   if not any(p == q or p.startswith(q + "/") for q in queue_paths))
    if not paths:
        return {}
    listed = git.ls_files(paths, stage=True, env=_LITERAL)
    files = _store_tree(git, [(f"{git.root}/{p}", p) for p in paths])
    return {"paths": paths, "index": sorted(e for e in listed if e), "files": files}


def stored_blob(git: Git, data: bytes) -> str:
    """The blob id of `data`, written only if the repository does not have it yet."""
    sha = git.hash_blob(data)
    try:
        kind = git.read_object(sha)[1]
    except GitError:
        kind = None
    if kind == "blob":
        # The checkpoint a write would have: whether the blob exists can depend on the
        # clock (a record's time equal to the previous one's), the checkpoints may not.
        checkpoint("write blob")
        return sha
    return git.write_blob(data)


def state_children(pq_dir: Path) -> list[Path]:
    """The entries of .git/pq that snapshots carry: all but the log, the lock and caches."""
    if not pq_dir.is_dir():
        return []
    return sorted(p for p in pq_dir.iterdir()
                  if not p.name.startswith(STATE_SKIP) and "cache" not in p.name)


def _committed_blobs(git: Git, commit: str | None, paths: tuple[str, ...]) -> frozenset[str]:
    """The ids of the blobs at or under `paths` in `commit`, read through the object
    reader: the repository has a commit's blobs (an index entry's it may lack: one added
    with `--info-only`, an intent-to-add)."""
    trees = Trees(git)
    try:
        files = trees.files_under(trees.tree_of(commit), paths) if commit else {}
    except GitError:
        return frozenset()
    return frozenset(oid for mode, oid in files.values() if mode != "160000")  # (a gitlink)


def in_queue(path: str, scope: Sequence[str] = QUEUE_PATHS) -> bool:
    """Whether `path` is at or under one of the queue's paths (those of `scope`)."""
    return any(path == qp or path.startswith(qp + "/") for qp in scope)


def _carried(git: Git, folder: str, untracked: bool = True) -> set[str]:
    """The files under one of the queue's other folders (mre/, .pq/) that a bookkeeping
    commit carries: tracked, or untracked and not ignored (an MRE's build output is not)."""
    if not (git.root / folder).is_dir():
        return set()
    return set(git.ls_files([folder], cached=True, others=untracked, literal=True))


def is_pqs(rel: str) -> bool:
    """Whether a file under the queue's paths is pq's to put back: in patches/, only the
    `*.patch` files are; the others there are the user's (untracked ones are left alone,
    tracked ones move with the commits like any file)."""
    return not rel.startswith(PATCHES_DIR + "/") or rel.endswith(".patch")


def _store_tree(git: Git, roots: Sequence[tuple[str | Path, str]], max_bytes: int | None = None,
                known: frozenset[str] = frozenset(),
                keep: Callable[[str], bool] | None = None) -> dict[str, str]:
    """Regular files and links at or under each of `roots` ((path, its name in the result))
    that `keep` takes, as {relative path: "mode blob"}; the blobs in `known` are not looked
    up (an unchanged queue file is HEAD's)."""
    found: list[tuple[str, str, bytes]] = []
    for where, name in roots:
        _collect(where, name, max_bytes, found)
    found = found if keep is None else [f for f in found if keep(f[0])]
    ids = [git.hash_blob(data) for _, _, data in found]
    # Which other blobs the repository has already: asked in one stream, not one by one.
    asked = [oid for oid in ids if oid not in known]
    have = {oid for oid, got in zip(asked, git.odb.read_many(asked), strict=True)
            if got is not None and got[1] == "blob"}
    stored = {}
    for (r, mode, data), oid in zip(found, ids, strict=True):
        if oid in known or oid in have:
            checkpoint("write blob")  # as stored_blob's, for a blob it finds
        else:
            oid = stored_blob(git, data)
        stored[r] = f"{mode} {oid}"
    return stored


def _collect(path: str | Path, rel: str, max_bytes: int | None,
             found: list[tuple[str, str, bytes]]) -> None:
    """(relative path, mode, bytes) of the regular files and links at or under `path`."""
    try:
        st = os.lstat(path)
    except OSError:
        return
    if stat.S_ISLNK(st.st_mode):
        found.append((rel, "120000", os.readlink(path).encode("utf-8", "surrogateescape")))
    elif stat.S_ISREG(st.st_mode):
        if ((name := os.path.basename(path)).endswith(".tmp") and name.startswith(".")) or (
                max_bytes is not None and st.st_size > max_bytes):
            return  # an atomic write's temporary file (never part of the state), or too big
        with open(path, "rb") as f:  # (not pathlib: a conflict's thousands of files)
            found.append((rel, "100755" if st.st_mode & 0o111 else "100644", f.read()))
    elif stat.S_ISDIR(st.st_mode):
        for child in sorted(os.listdir(path)):
            _collect(os.path.join(path, child), f"{rel}/{child}", max_bytes, found)


def check_paths(snap: Snapshot, rid: int) -> None:
    """Refuse a log entry whose snapshot names paths outside what pq restores (edited by
    hand): the queue's, pq's state files, a stopped rebase's working-tree paths."""
    paths = list(snap["files"]) + [e.split("\t", 1)[-1] for e in snap["index"]]
    for p in paths:
        if not _SAFE_PATH.match(p) or not in_queue(p):
            raise ConfigError(f"operation {rid}'s log entry names {p!r}, outside the queue",
                              hint="the entry was edited by hand; pq will not restore it")
    for p in snap["state"]:
        if not _SAFE_PATH.match(p) or p.split("/")[0] in ("oplog", "lock"):
            raise ConfigError(f"operation {rid}'s log entry names state file {p!r}")
    worktree = snap.get("worktree") or {}
    for p in [*worktree.get("paths", []), *worktree.get("files", {})]:
        if not _SAFE_PATH.match(p) or p.split("/")[0].lower() == ".git":
            raise ConfigError(f"operation {rid}'s log entry names {p!r}, outside the "
                              "working tree")


# -- putting it back -------------------------------------------------------------------


def read_refs(git: Git) -> dict[str, str]:
    return {name: sha for name, _, sha, _ in _listed_refs(git)}


def _listed_refs(git: Git) -> list[tuple[str, str, str, bool]]:
    """The branches and pq's refs (Git.list_refs); a ref whose object is gone (a damaged
    or pruned repository) is named with its fix."""
    try:
        return git.list_refs("refs/heads/", "refs/pq/")
    except GitError as exc:
        missing = re.search(r"missing object (\w+) for (\S+)", exc.message)
        if missing is None:
            raise
        raise ConfigError(f"{missing[2]} points at {missing[1][:12]}, an object this "
                          "repository does not have",
                          hint=f"`git update-ref -d {missing[2]}` removes the ref (a pq ref "
                               "holds undo history or an old tip), or fetch the object") from None


def clear_queue(git: Git, commit: str, current: Snapshot) -> None:
    """Make the queue files clean against `commit`, so moving HEAD never trips over them:
    their index entries become the commit's and the files go (they are in `current`)."""
    entries = [f"{mode} {obj} 0\t{path}" for mode, _, obj, path in git.ls_tree(
        commit, current.get("scope", QUEUE_PATHS))]
    git.set_index_entries(current["index"], entries, refresh=False)
    for rel in current["files"]:
        checkpoint("unlink " + rel)
        (git.root / rel).unlink(missing_ok=True)


def write_queue(git: Git, files: dict[str, str], index: list[str],
                scope: Sequence[str] = QUEUE_PATHS) -> None:
    """The queue's files (series.yaml, patches/, mre/, .pq/) exactly as recorded: files
    written, extra files removed."""
    root = git.root
    written: set[str] = set()
    for rel, spec in sorted(files.items()):
        mode, blob = spec.split()
        if write_file(git, root / rel, mode, blob):
            written.add(rel)
    for rel in sorted(_present_files(git, scope) - set(files)):
        checkpoint("unlink " + rel)
        (root / rel).unlink(missing_ok=True)
    for folder in (root / qp for qp in scope if qp != SERIES_FILE):
        if folder.is_dir() and not folder.is_symlink():
            for d in sorted((p for p in folder.rglob("*") if p.is_dir() and not p.is_symlink()),
                            key=lambda p: -len(p.parts)):
                if not any(d.iterdir()) and d != git.here:  # as git keeps the folder
                    d.rmdir()  # it was started in, pq keeps the one it was
            if not any(folder.iterdir()) and folder != git.here:
                folder.rmdir()
    now = git.ls_files(scope, stage=True)
    git.set_index_entries(now, index, refresh=False, rewritten=written)
    git.refresh_index()


def _present_files(git: Git, scope: Sequence[str]) -> set[str]:
    """The queue files in the working tree now, plus leftovers of interrupted writes."""
    root = git.root
    present: set[str] = set()
    for p in root.glob(f".{SERIES_FILE}.*.tmp"):
        present.add(p.name)
    sp = root / SERIES_FILE
    if sp.is_file() or sp.is_symlink():
        present.add(SERIES_FILE)
    for qp in (q for q in scope if q != SERIES_FILE):
        folder = root / qp
        if folder.is_dir() and not folder.is_symlink():
            # Untracked files there are no longer the queue's: `clear_queue` took those away
            # before the move (what the move left, a commit's .gitignore gone, is the user's).
            keep = is_pqs if qp == PATCHES_DIR else _carried(git, qp, False).__contains__
            for p in folder.rglob("*"):
                if (p.is_symlink() or p.is_file()) and keep(
                        rel := p.relative_to(root).as_posix()):
                    present.add(rel)
        elif folder.is_symlink() or folder.is_file():
            present.add(qp)
    return present


def holds(path: Path, data: bytes, mode: str) -> bool:
    """Whether `path` is a regular file holding `data`, with `mode`'s executable bit."""
    try:
        st = path.lstat()
        return stat.S_ISREG(st.st_mode) and bool(st.st_mode & 0o111) == (
            mode == "100755") and path.read_bytes() == data
    except OSError:
        return False


def write_file(git: Git, path: Path, mode: str, blob: str) -> bool:
    """Whether the file was written (it did not hold the blob)."""
    data = git.blob(blob)
    if mode == "120000":
        if path.is_symlink() and os.readlink(path).encode("utf-8", "surrogateescape") == data:
            return False
        checkpoint("symlink " + path.name)
        path.unlink(missing_ok=True)
        path.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(data.decode("utf-8", "surrogateescape"), path)
        return True
    if holds(path, data, mode):
        return False
    if path.is_symlink() or path.is_dir():
        checkpoint("unlink " + path.name)
        if path.is_dir() and not path.is_symlink():
            raise ConfigError(f"{path} is a folder; pq would restore a file there",
                              hint="move it away, then run it again")
        path.unlink()
    write_atomic(path, data)
    os.chmod(path, 0o755 if mode == "100755" else 0o644)
    return True


def write_state(git: Git, files: dict[str, str]) -> None:
    """pq's own state in .git/pq (a rebase in progress, ...) as recorded."""
    base = git.pq_dir()
    for rel, spec in sorted(files.items()):
        mode, blob = spec.split()
        write_file(git, base / rel, mode, blob)
    for child in state_children(base):
        if child.is_dir() and not child.is_symlink():
            present = sorted(p for p in child.rglob("*") if p.is_file() or p.is_symlink())
            dirs = sorted((p for p in child.rglob("*") if p.is_dir() and not p.is_symlink()),
                          key=lambda p: -len(p.parts)) + [child]
        else:
            present, dirs = [child], []
        for p in present:
            if p.relative_to(base).as_posix() not in files:
                checkpoint("unlink " + p.name)
                p.unlink()
        for d in dirs:
            if not any(d.iterdir()):
                d.rmdir()
