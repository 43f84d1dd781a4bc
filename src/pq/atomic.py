"""Atomic file writes: a reader sees the old file or the new one, never half of either.

The one writer of every file pq keeps (series.yaml, patches/, its own state under
`.git/pq/`): a temporary file in the same folder, fsync, rename, fsync of the folder; an
unchanged file is not rewritten. Each step is a fault-injection checkpoint (pq.faults).
A cache (`durable=False`: a file whose loss or damage only costs the work it saves, and
whose reader takes anything unreadable as a miss) skips the two fsyncs, which cost more
than the rest of the write on a busy disk. `oldest_first` lists a cache's entries for its
pruning.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path

from pq.faults import checkpoint


def write_atomic(path: Path, data: bytes, durable: bool = True) -> None:
    """Replace `path` with `data` so that readers see the old or the new file, never half;
    `durable`: on disk before this returns (see above for caches)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.is_file() and not path.is_symlink():
        try:
            if path.read_bytes() == data:
                return
        except OSError:
            pass
    checkpoint("write " + path.name)
    # A new file's mode is 0666 less the umask, as git checks files out (the kernel applies
    # the umask); a file replaced keeps its own.
    mode = path.stat().st_mode & 0o777 if path.exists() else None
    try:
        fd, tmp = _new_file(path, 0o600 if mode is not None else 0o666)
    except OSError as exc:  # the folder refuses a new file: name it, not the temporary one
        raise OSError(exc.errno, exc.strerror, str(path.parent)) from None
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            if durable:
                f.flush()
                os.fsync(f.fileno())
        checkpoint("rename " + path.name)
        if mode is not None:
            os.chmod(tmp, mode)
        os.replace(tmp, path)
    except BaseException as exc:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        if isinstance(exc, OSError) and exc.filename in (None, tmp):  # a full disk, say:
            raise OSError(exc.errno, exc.strerror, str(path)) from None  # name the file
        raise
    if durable:
        _fsync_dir(path.parent)


def _new_file(path: Path, mode: int) -> tuple[int, str]:
    """A new, empty file beside `path` (`mode`, less the umask), named as `tempfile.mkstemp`
    names one (`.<name>.<8 random characters>.tmp`: what pq.oplog.txn knows a leftover by),
    without that module's import (~5 ms) on every write."""
    flags = os.O_RDWR | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(
        os, "O_CLOEXEC", 0)
    for _ in range(100):
        tmp = os.path.join(path.parent, f".{path.name}.{os.urandom(4).hex()}.tmp")
        try:
            return os.open(tmp, flags, mode), tmp
        except FileExistsError:
            continue
    raise FileExistsError(errno.EEXIST, "no free temporary file name", str(path.parent))


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


def oldest_first(folder: Path, take: Callable[[os.stat_result, Path], bool]) -> list[Path]:
    """The entries of `folder` that `take` takes (given each one's lstat), oldest first by
    modification time, ties by name; [] without the folder. An entry gone between the
    listing and its stat (another pq pruning the same folder) is left out."""
    try:
        listed = list(folder.iterdir())
    except OSError:
        return []
    aged = []
    for entry in listed:
        try:
            st = entry.lstat()
        except OSError:
            continue
        if take(st, entry):
            aged.append((st.st_mtime_ns, entry.name, entry))
    return [entry for *_, entry in sorted(aged)]
