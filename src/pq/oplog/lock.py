"""The repository lock: an exclusive `flock` on `.git/pq/lock` that also names its holder.

Every mutating command holds it (through `pq.oplog.txn.Transaction`); `lock_holder` tells
`pq log` which command, if any, holds it now.
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pq.errors import PqError
from pq.git.repo import Git

LOCK_WAIT_S = float(os.environ.get("PQ_LOCK_WAIT", "3"))
LOCK_FILE = "lock"  # in .git/pq


class LockBusy(PqError):
    exit_code = 2


@dataclass
class Lock:
    """An exclusive `flock` on `.git/pq/lock`, which also names its holder.

    The kernel drops the lock when its process dies, however it dies, so a lock left by a
    killed pq is never mistaken for a live one: the next command takes it over at once.
    """

    path: Path
    command: str
    held: bool = False
    stale_holder: dict[str, Any] | None = None  # what a dead previous holder left behind
    _fd: int | None = None

    def acquire(self, wait_s: float | None = None) -> None:
        wait_s = float(os.environ.get("PQ_LOCK_WAIT", LOCK_WAIT_S)) if wait_s is None \
            else wait_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + wait_s
        while True:
            try:
                fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            except OSError as exc:
                raise LockBusy(f"cannot open the lock {self.path}: {exc.strerror}",
                               hint=f"move the folder {self.path} aside (pq's lock is a "
                                    "file)" if exc.errno == errno.EISDIR else
                               "check the permissions of .git/pq") from None
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                os.close(fd)
                if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise LockBusy(f"cannot lock {self.path}: {exc.strerror}") from None
                if time.monotonic() >= deadline:
                    raise LockBusy(self._busy_message(self._holder()),
                                   hint="wait for it to finish, then run your command "
                                        "again") from None
                time.sleep(0.05)
                continue
            # A holder that released unlinks the file: make sure ours is still the lock.
            try:
                same = os.stat(self.path).st_ino == os.fstat(fd).st_ino
            except FileNotFoundError:
                same = False
            if not same:
                os.close(fd)
                continue
            previous = _parse_holder(os.pread(fd, 4096, 0))
            self.stale_holder = previous or None
            info = json.dumps({"pid": os.getpid(), "command": self.command,
                               "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                               "host": os.uname().nodename}).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, info, 0)  # not fsynced: the flock dies with the machine anyway
            self._fd = fd
            self.held = True
            return

    def release(self) -> None:
        if self.held and self._fd is not None:
            # Unlinked while still locked, so that nobody locks a dead inode.
            self.path.unlink(missing_ok=True)
            os.close(self._fd)
            self._fd = None
            self.held = False

    def _holder(self) -> dict[str, Any]:
        try:
            return _parse_holder(self.path.read_bytes())
        except OSError:
            return {}

    def _busy_message(self, holder: dict[str, Any]) -> str:
        if not holder:
            return f"another pq command holds {self.path}"
        return (f"another pq command is running in this repository: `{holder.get('command')}` "
                f"(pid {holder.get('pid')}, started {holder.get('started')})")


def _parse_holder(data: bytes) -> dict[str, Any]:
    try:
        holder = json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError, RecursionError):
        return {}
    return holder if isinstance(holder, dict) else {}


def lock_holder(git: Git) -> dict[str, Any] | None:
    """The live holder of the repository lock, or None when nobody holds it."""
    path = lock_path(git)
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return None
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return _parse_holder(os.pread(fd, 4096, 0))
        fcntl.flock(fd, fcntl.LOCK_UN)
        return None
    finally:
        os.close(fd)


def lock_path(git: Git) -> Path:
    return git.pq_dir() / LOCK_FILE

