"""The queue on disk: `series.yaml` and `patches/` in a working tree or in a commit's tree.

Reading is strict (every listed patch exists, every patch file is listed); writing is
atomic per file (temporary file, fsync, rename) and removes only patch files the new
series no longer lists, so an interrupted write never leaves a half-written file.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import dataclass
from pathlib import Path

from pq import series as series_mod
from pq.errors import ConfigError
from pq.faults import checkpoint
from pq.gitio import Git
from pq.series import PATCHES_DIR, SERIES_FILE, Series


@dataclass(frozen=True)
class Queue:
    """A series and the bytes of each of its patch files."""

    series: Series
    files: dict[str, bytes]

    def patch_bytes(self, name: str) -> bytes:
        return self.files[name]


def exists(root: Path) -> bool:
    return (root / SERIES_FILE).is_file()


def read_worktree(root: Path) -> Queue:
    path = root / SERIES_FILE
    if not path.is_file():
        raise ConfigError(f"no {SERIES_FILE} in {root}",
                          hint="run `pq init --upstream <upstream ref>` first")
    series = series_mod.loads(_read(path), SERIES_FILE)
    pdir = root / PATCHES_DIR
    names: list[str] = []
    if pdir.is_dir():
        names = sorted(p.name for p in pdir.iterdir() if p.is_file() or p.is_symlink())
    series_mod.check_files(series, names)
    files = {}
    for entry in series.patches:
        p = pdir / entry.name
        if p.is_symlink():
            raise ConfigError("a patch file must be a regular file, not a link",
                              path=f"{PATCHES_DIR}/{entry.name}")
        files[entry.name] = _read(p)
    return Queue(series, files)


def read_tree(git: Git, rev: str) -> Queue | None:
    """The queue as committed in `rev`, or None when `rev` has no series file."""
    entries = git.ls_tree(rev, [SERIES_FILE, PATCHES_DIR])
    blobs = {path: obj for _, kind, obj, path in entries if kind == "blob"}
    if SERIES_FILE not in blobs:
        return None
    series = series_mod.loads(git.blob(blobs[SERIES_FILE]), f"{SERIES_FILE} (in {rev})")
    names = [p[len(PATCHES_DIR) + 1:] for p in blobs if p.startswith(PATCHES_DIR + "/")]
    names = [n for n in names if "/" not in n]
    series_mod.check_files(series, names)
    return Queue(series, {e.name: git.blob(blobs[f"{PATCHES_DIR}/{e.name}"])
                          for e in series.patches})


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as exc:
        raise ConfigError(f"cannot read: {exc.strerror}", path=str(path)) from None


def write_atomic(path: Path, data: bytes) -> None:
    """Replace `path` with `data` so that readers see the old or the new file, never half."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and not path.is_symlink():
        try:
            if path.read_bytes() == data:
                return
        except OSError:
            pass
    checkpoint("write " + path.name)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        checkpoint("rename " + path.name)
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            os.chmod(tmp, 0o644)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def is_queue_file(path: str) -> bool:
    """series.yaml, or a patch file (patches/*.patch); other files in patches/ are the
    user's, and pq leaves them alone."""
    return path == SERIES_FILE or (path.startswith(PATCHES_DIR + "/") and path.endswith(
        ".patch") and "/" not in path[len(PATCHES_DIR) + 1:])


def index_entries(git: Git) -> list[str]:
    """The index entries (`git ls-files -s` lines, all stages) of the queue files."""
    out = git.text("ls-files", "-s", "-z", "--", SERIES_FILE, PATCHES_DIR)
    return sorted(e for e in out.split("\0") if e and is_queue_file(e.split("\t", 1)[1]))


def set_index(git: Git, now: list[str], entries: list[str], refresh: bool = True) -> None:
    """Replace the index entries `now` (`git ls-files -s` lines) with `entries`; with
    `refresh`, stat data is refreshed, so that unchanged files do not look modified."""
    if sorted(now) == sorted(entries):
        return
    zero = "0" * len((entries or now)[0].split()[1])
    lines = [f"0 {zero}\t{path}" for path in sorted({e.split("\t", 1)[1] for e in now})]
    git.run("update-index", "-z", "--index-info",
            input="".join(x + "\0" for x in lines + sorted(entries)).encode(
                "utf-8", "surrogateescape"))
    if refresh:
        git.run("update-index", "-q", "--refresh", ok_codes=(0, 1))


def write_worktree(root: Path, queue: Queue) -> list[str]:
    """Write the queue into the working tree; return the paths that changed."""
    changed = []
    pdir = root / PATCHES_DIR
    for entry in queue.series.patches:
        p = pdir / entry.name
        data = queue.files[entry.name]
        if not (p.is_file() and p.read_bytes() == data):
            write_atomic(p, data)
            changed.append(f"{PATCHES_DIR}/{entry.name}")
    series_bytes = queue.series.dumps()
    sp = root / SERIES_FILE
    if not (sp.is_file() and sp.read_bytes() == series_bytes):
        write_atomic(sp, series_bytes)
        changed.append(SERIES_FILE)
    listed = {e.name for e in queue.series.patches}
    if pdir.is_dir():
        for p in sorted(pdir.iterdir()):
            if p.name.endswith(".patch") and p.name not in listed and p.is_file():
                checkpoint("unlink " + p.name)
                p.unlink()
                changed.append(f"{PATCHES_DIR}/{p.name}")
    return changed
