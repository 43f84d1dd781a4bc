"""The queue on disk: `series.yaml` and `patches/` in a working tree or in a commit's tree.

Reading is strict (every listed patch exists, every patch file is listed); writing is
atomic per file (temporary file, fsync, rename) and removes only patch files the new
series no longer lists, so an interrupted write never leaves a half-written file."""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from pq.atomic import write_atomic
from pq.errors import ConfigError
from pq.faults import checkpoint
from pq.git.branchmove import checkout_moved, refused, swap_branch
from pq.git.objects import CommitId
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.model import series as series_mod
from pq.model.series import PATCHES_DIR, SERIES_FILE, Series
from pq.oplog.snapshot import REBASE_STATE
from pq.queue.cleanform import clean_forms


@dataclass(frozen=True)
class Queue:
    """A series and the bytes of each of its patch files (as git stores them)."""

    series: Series
    files: dict[str, bytes]
    series_bytes: bytes | None = None  # series.yaml as read; None for a queue built in memory


def read_worktree(where: Git | Path, missing_ok: bool = False) -> Queue:
    """The queue in the working tree, each file in its clean form (see `clean_forms`);
    `missing_ok`: a listed patch file that is not there is left out of its files (`pq
    export` writes it again from its commit)."""
    if isinstance(where, Path):
        with Git.open(where) as git:
            return read_worktree(git, missing_ok)
    root = where.root
    path = root / SERIES_FILE
    require_no_folder_at(path)
    if not path.is_file():
        if (where.pq_dir() / REBASE_STATE).is_file():  # a stop takes the queue out
            raise ConfigError(f"a pq rebase is in progress: {SERIES_FILE} and {PATCHES_DIR}/ "
                              "are out of the working tree until it ends",
                              hint="`pq status` says where it stands; `pq rebase --continue` "
                                   "or `pq rebase --abort` ends it")
        raise _no_series(where)
    pdir = root / PATCHES_DIR
    if pdir.is_symlink():  # git keeps a link, not the files behind it: commits lack them
        raise ConfigError(f"{PATCHES_DIR} is a link; pq keeps patch files in a folder",
                          hint=f"put the folder it names in its place (`rm {PATCHES_DIR}`, "
                               f"then `cp -R` it there)")
    if pdir.exists() and not pdir.is_dir():  # (every patch file read as missing, else)
        raise ConfigError(f"{PATCHES_DIR} is a file, where pq keeps the patch files' folder",
                          hint=f"move it aside (`mv {PATCHES_DIR} {PATCHES_DIR}.txt`), then `git "
                               f"checkout -- {PATCHES_DIR}` restores the committed patch files")
    names = sorted(p.name for p in pdir.iterdir() if p.is_file() or p.is_symlink()) \
        if pdir.is_dir() else []
    raw = {SERIES_FILE: _read(path)}
    for name in names:
        p = pdir / name
        if name.endswith(".patch") and not p.is_symlink():
            raw[f"{PATCHES_DIR}/{name}"] = _read(p)
    clean = clean_forms(where, raw)
    series = series_mod.loads(clean[SERIES_FILE], SERIES_FILE, where.pq_dir())
    for entry in series.patches:  # (a link is refused below)
        require_no_folder_at(pdir / entry.name, rel=f"{PATCHES_DIR}/{entry.name}")
    gone = {e.name for e in series.patches if missing_ok and not os.path.lexists(pdir / e.name)}
    if gone:  # not gone, only out of a sparse checkout: not written there
        _require_checked_out(where, series)
    try:
        series_mod.check_files(series, [*names, *gone])
    except ConfigError:
        _require_checked_out(where, series)
        raise
    files = {}
    for entry in (e for e in series.patches if e.name not in gone):
        if (pdir / entry.name).is_symlink() or f"{PATCHES_DIR}/{entry.name}" not in clean:
            raise ConfigError("a patch file must be a regular file, not a link",
                              path=f"{PATCHES_DIR}/{entry.name}")
        files[entry.name] = clean[f"{PATCHES_DIR}/{entry.name}"]
    return Queue(series, files, clean[SERIES_FILE])


def require_no_folder_at(path: Path, then: str | None = None, rel: str = SERIES_FILE) -> None:
    """Refuse a folder (a pipe, a device) where a queue file goes (`rel`: the series file,
    or a listed patch file): no file is there to read, nor can pq write one."""
    if not path.exists() or path.is_file():
        return
    kind = "a folder" + " (a link to one)" * path.is_symlink() if path.is_dir() else \
        "not a regular file"
    series = rel == SERIES_FILE  # `then`: what to run once it is aside
    keeps = "its series file" if series else "that patch file"
    raise ConfigError(f"{rel} is {kind}, where pq keeps {keeps}",
                      hint=f"move it aside (`mv {rel} {rel}.d`), then " + (
                          then or f"`git checkout -- {rel}` restores a committed " + (
                              "series, or `pq init` starts one" if series else "patch file, "
                              "or `pq export` writes it again from its commit")))


def _no_series(git: Git) -> ConfigError:
    """Why the working tree has no series.yaml: a git operation stopped on a commit under
    the series' bookkeeping commit, a sparse checkout that leaves it out, a deletion (HEAD
    has it); else the fork has no series yet."""
    if (found := git.operation_in_progress()) is not None:
        return ConfigError(f"no {SERIES_FILE} in the working tree while git's {found[0]} is "
                           f"in progress (the commit it stopped at has none)",
                           hint=f"finish or abort the {found[0]} first (`git status` says how), "
                                "then run pq again")
    if git.outside_sparse_checkout([SERIES_FILE]):
        return ConfigError("outside the sparse checkout: pq reads the series from the "
                           "working tree", path=SERIES_FILE,
                           hint=f"`git sparse-checkout add /{SERIES_FILE} /{PATCHES_DIR}/`, "
                                "then run it again")
    if git.ls_files([SERIES_FILE], cached=True, literal=True):
        return ConfigError("deleted from the working tree (git tracks it)", path=SERIES_FILE,
                           hint=f"`git checkout -- {SERIES_FILE}` brings it back")
    return ConfigError(f"no {SERIES_FILE} in {git.root}", hint="run `pq init --upstream "
                       "<upstream ref>` first")


def _require_checked_out(git: Git, series: Series) -> None:
    """Refuse patch files a sparse checkout leaves out of the working tree: they are
    there, in the index and in HEAD, just not on disk."""
    if absent := git.outside_sparse_checkout([f"{PATCHES_DIR}/{e.name}" for e in series.patches]):
        more = f" and {len(absent) - 1} more" if len(absent) > 1 else ""
        raise ConfigError(f"{absent[0]}{more} {'are' if more else 'is'} outside the sparse "
                          "checkout: pq reads the series from the working tree",
                          path=SERIES_FILE,
                          hint=f"`git sparse-checkout add {PATCHES_DIR}`, then run it again")


def read_tree(git: Git, rev: str) -> Queue | None:
    """The queue as committed in `rev`, or None when `rev` has no series file."""
    entries = git.ls_tree(rev, [SERIES_FILE, PATCHES_DIR])
    blobs = {path: obj for _, kind, obj, path in entries if kind == "blob"}
    if SERIES_FILE not in blobs:
        return None
    if any(mode == "120000" and path == SERIES_FILE for mode, _, _, path in entries):
        raise ConfigError(f"{SERIES_FILE} is committed as a symbolic link, and pq reads the "
                          "series from the file itself", path=f"{SERIES_FILE} (in {rev})",
                          hint="replace the link by the file it points to (`cp "
                               f"--remove-destination \"$(readlink -f {SERIES_FILE})\" "
                               f"{SERIES_FILE}`) and commit that")
    text = git.blob(blobs[SERIES_FILE])
    series = series_mod.loads(text, f"{SERIES_FILE} (in {rev})", git.pq_dir())
    names = [p[len(PATCHES_DIR) + 1:] for p in blobs if p.startswith(PATCHES_DIR + "/")]
    names = [n for n in names if "/" not in n]
    series_mod.check_files(series, names)
    git.odb.read_many([blobs[f"{PATCHES_DIR}/{e.name}"] for e in series.patches])  # one stream
    return Queue(series, {e.name: git.blob(blobs[f"{PATCHES_DIR}/{e.name}"])
                          for e in series.patches}, text)


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except PermissionError:  # the one error handler says what to do (pq.cli.failure)
        raise
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=str(path)) from None


def is_queue_path(path: str, queue_paths: Sequence[str]) -> bool:
    """Whether `path` is one of `queue_paths` or under one of them."""
    return any(path == q or path.startswith(q + "/") for q in queue_paths)


def require_no_upstream_files(git: Git, commit: str, queue_paths: Sequence[str],
                              label: str, since: tuple[str, str] | None = None,
                              hint: str | None = None) -> None:
    """Refuse an upstream commit with files of its own where pq keeps the queue
    (series.yaml, patches/, mre/, .pq/, the series' queue_paths): bookkeeping commits carry
    those paths as the branch has them, so upstream's files there would be dropped or
    reverted without a word. With `since` (the old base, the branch's tip), only the files
    upstream added, changed or removed since the old base and the branch does not have
    as upstream now does (a series set up before this check, a branch merged upstream)."""
    trees = Trees(git)  # through the object reader: a rebase runs no process for this
    now = trees.files_under(trees.tree_of(commit), queue_paths)
    if since is None:
        names, what, way = sorted(now), "has its own files", _NO_WAY
    else:
        then, carried = (trees.files_under(trees.tree_of(c), queue_paths) for c in since)
        names = sorted(p for p in now.keys() | then.keys()
                       if now.get(p) != then.get(p) and now.get(p) != carried.get(p))
        what, way = "changed its own files", _ADOPT_THEM
    if names:
        more = f" and {len(names) - 5} more" if len(names) > 5 else ""
        raise ConfigError(f"{label} ({commit[:12]}) {what} where pq keeps the queue: "
                          f"{', '.join(names[:5])}{more}; pq's bookkeeping commits would "
                          "drop or revert them", hint=hint or way)


def require_own_queue_paths(git: Git, series: Series) -> None:
    """Refuse a `queue_paths` entry of series.yaml where the series base has files: listed
    after `pq init` checked the base, it would take those files out of every patch."""
    if series.queue_extra:
        require_no_upstream_files(
            git, series.base, series.queue_extra, "the series base",
            hint="take those folders out of queue_paths in series.yaml: it names folders "
                 "of the fork's own, which upstream does not have")


_NO_WAY = ("pq cannot keep its queue (series.yaml, patches/, mre/, .pq/) beside upstream "
           "files there; keep this fork's edits with plain git")
_ADOPT_THEM = ("pq carries those paths as the branch has them: commit upstream's version of "
               "them on the branch (a commit of those files alone), or keep this fork's "
               "edits with plain git")


def is_queue_file(path: str) -> bool:
    """series.yaml, or a patch file (patches/*.patch); other files in patches/ are the
    user's, and pq leaves them alone."""
    return path == SERIES_FILE or (path.startswith(PATCHES_DIR + "/") and path.endswith(
        ".patch") and "/" not in path[len(PATCHES_DIR) + 1:])


def index_entries(git: Git) -> list[str]:
    """The index entries (`git ls-files -s` lines, all stages) of the queue files."""
    return sorted(e for e in git.ls_files([SERIES_FILE, PATCHES_DIR], stage=True)
                  if is_queue_file(e.split("\t", 1)[1]))


def reset_to_head(git: Git, paths: list[str]) -> None:
    """Make the files `paths` as HEAD has them, in the index and the working tree, so that
    moving HEAD neither refuses nor leaves them behind: HEAD's are checked out again by git
    (CRLF under core.autocrlf, fresh stat data), the others leave the index and the
    working tree. The caller keeps what they held (a transaction, a rebase's state)."""
    if not paths:
        return
    head = {path for *_, path in git.ls_tree("HEAD", paths)} & set(paths)
    gone = sorted(set(paths) - head)
    if gone:
        git.set_index_entries(git.ls_files(gone, stage=True, literal=True), [], refresh=False)
        for path in gone:
            if os.path.lexists(git.root / path):
                checkpoint("unlink " + path)
                (git.root / path).unlink()
    if head:
        git.checkout_paths(sorted(head), "HEAD")


def move_branch_to_queue(git: Git, branch: str, old: CommitId, new: CommitId,
                         queue_paths: tuple[str, ...], action: str,
                         create: bool = False) -> None:
    """Move `branch` (HEAD's, at `old`) with its index and working tree to `new`, a commit
    that carries the queue (`create`: `branch` is a new branch made at `new`, checked out
    from HEAD at `old`). The queue files that are staged, modified or untracked and that
    `new` carries otherwise than HEAD go back to HEAD's first, so that the checkout does not
    refuse them (the others, a notes file beside the patches say, the checkout carries as
    they are); when the move is refused all the same (another file in the way, a commit made
    meanwhile), they come back as they were, staged or not: a refused command changes
    nothing. Call it inside a Transaction; `new` holds what the queue files become."""
    paths = sorted({path for _code, path in git.status_porcelain(
        paths=queue_paths, all_untracked=True, renames=False)})
    if paths:
        in_new = {p: (m, o) for m, _k, o, p in git.ls_tree(new, paths)}
        in_head = {p: (m, o) for m, _k, o, p in git.ls_tree(old, paths)}
        paths = [p for p in paths if p in in_new and in_new[p] != in_head.get(p)]
    held = _hold(git, paths)
    reset_to_head(git, paths)
    try:
        if create:
            done, stderr = git.try_move_head(new, branch.removeprefix("refs/heads/"),
                                             create=True, env={"GIT_REFLOG_ACTION": action})
            if not done:
                raise refused(action, stderr)
        else:
            swap_branch(git, branch, old, new, action)
            checkout_moved(git, branch, old, new, action)
    except ConfigError:
        _put_back(git, held)
        raise


@dataclass(frozen=True)
class _Held:
    entries: list[str]  # their index entries, `git ls-files -s` lines
    # In the working tree: (bytes, mode), or (link target, 0) for a symbolic link; None: absent
    files: dict[str, tuple[bytes, int] | None]


def _hold(git: Git, paths: list[str]) -> _Held:
    files: dict[str, tuple[bytes, int] | None] = {}
    for path in paths:
        full = git.root / path
        if full.is_symlink():
            files[path] = (os.fsencode(os.readlink(full)), 0)
        elif full.is_file():
            files[path] = (full.read_bytes(), full.stat().st_mode)
        else:
            files[path] = None
    return _Held(git.ls_files(paths, stage=True, literal=True) if paths else [], files)


def _put_back(git: Git, held: _Held) -> None:
    if not held.files:
        return
    for path, kept in held.files.items():
        full = git.root / path
        if kept is None:
            if os.path.lexists(full) and not full.is_dir():
                full.unlink()
            continue
        full.parent.mkdir(parents=True, exist_ok=True)
        if kept[1] == 0:  # a symbolic link
            if os.path.lexists(full):
                full.unlink()
            os.symlink(os.fsdecode(kept[0]), full)
            continue
        write_atomic(full, kept[0], durable=False)
        os.chmod(full, kept[1] & 0o7777)
    git.set_index_entries(git.ls_files(sorted(held.files), stage=True, literal=True),
                          held.entries)


def write_worktree(git: Git, queue: Queue, current: Queue | None = None) -> list[str]:
    """Write the queue into the working tree; return the paths that changed.

    A file is rewritten only when its clean form differs (a CRLF checkout of the same blob
    is left alone); `current`, the queue just read from the working tree, saves reading it
    again."""
    root = git.root
    pdir = root / PATCHES_DIR
    sp = root / SERIES_FILE
    if current is not None and current.series_bytes is not None:
        now = {f"{PATCHES_DIR}/{n}": d for n, d in current.files.items()}
        now[SERIES_FILE] = current.series_bytes
    else:
        raw = {f"{PATCHES_DIR}/{e.name}": (pdir / e.name).read_bytes()
               for e in queue.series.patches
               if (pdir / e.name).is_file() and not (pdir / e.name).is_symlink()}
        if sp.is_file() and not sp.is_symlink():
            raw[SERIES_FILE] = sp.read_bytes()
        now = clean_forms(git, raw)
    changed = []
    series_bytes = queue.series.dumps()  # before any write: it may be refused
    for entry in queue.series.patches:
        rel = f"{PATCHES_DIR}/{entry.name}"
        data = queue.files[entry.name]
        if not ((pdir / entry.name).is_file() and now.get(rel) == data):
            write_atomic(pdir / entry.name, data)
            changed.append(rel)
    if not (sp.is_file() and now.get(SERIES_FILE) == series_bytes):
        write_atomic(sp, series_bytes)
        changed.append(SERIES_FILE)
    for name in _unlisted(git, {e.name for e in queue.series.patches}):
        checkpoint("unlink " + name)
        (pdir / name).unlink()
        changed.append(f"{PATCHES_DIR}/{name}")
    return changed


def _unlisted(git: Git, listed: set[str]) -> list[str]:
    """The `*.patch` files in patches/ that `listed` does not name, sorted: what writing a
    queue of those patches removes."""
    pdir = git.root / PATCHES_DIR
    return sorted(p.name for p in pdir.iterdir() if p.name.endswith(".patch")
                  and p.name not in listed and p.is_file()) if pdir.is_dir() else []


def stray_patch_files(git: Git, listed: set[str], command: str) -> list[str]:
    """The `*.patch` files in patches/ that neither the series before nor the one about to
    be written lists (`listed`), which writing the queue removes: refused when HEAD does not
    hold one (the user's own draft, never committed), else their names, to be reported."""
    stray = _unlisted(git, listed)
    if not stray:
        return []
    paths = [f"{PATCHES_DIR}/{n}" for n in stray]
    committed = {p for *_, p in git.ls_tree("HEAD", paths)}  # staged only: still the user's
    own = [p for p in paths if p not in committed]
    if own:
        more = f", and {len(own) - 1} more beside it," if len(own) > 1 else ""
        raise ConfigError(f"not a patch of the series and not committed{more}: "
                          f"{command} would delete it", path=own[0],
                          hint=f"move it out of {PATCHES_DIR}/, where pq keeps only its "
                               f"series' patch files, then run {command} again")
    return [p.split("/", 1)[1] for p in paths]


def require_no_untracked_in_the_way(git: Git, queue: Queue, names: list[str],
                                    command: str) -> None:
    """Refuse before writing new patch files over untracked files of the user's with other
    bytes (git checkout refuses the same way); nothing is written."""
    clash = [p for p in git.untracked([f"{PATCHES_DIR}/{n}" for n in names])
             if not (git.root / p).is_file()
             or (git.root / p).read_bytes() != queue.files.get(p.split("/", 1)[1])]
    if clash:
        more = f" and {len(clash) - 1} more" if len(clash) > 1 else ""
        raise ConfigError(f"an untracked file{more} stands where a new patch file goes; "
                          "writing it would overwrite the file", path=clash[0],
                          hint=f"move it aside (it is not pq's), then run {command} again")
