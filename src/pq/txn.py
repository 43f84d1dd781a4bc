"""Transactions: the repository lock and the operation log around every mutating command.

A command that changes refs, `series.yaml` or `patches/` runs inside `Transaction`: it
holds `.git/pq/lock`, records the state before (ref targets, queue file contents stored as
blobs) and after under `.git/pq/oplog/`, so `pq undo` can always bring the earlier state back.
"""

from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pq.errors import PqError
from pq.gitio import Git

LOCK_WAIT_S = float(os.environ.get("PQ_LOCK_WAIT", "3"))


class LockBusy(PqError):
    exit_code = 2


@dataclass
class Lock:
    path: Path
    command: str
    held: bool = False

    def acquire(self, wait_s: float = LOCK_WAIT_S) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        deadline = time.monotonic() + wait_s
        info = json.dumps({"pid": os.getpid(), "command": self.command,
                           "started": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                           "host": socket.gethostname()})
        while True:
            try:
                fd = os.open(self.path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o644)
            except FileExistsError:
                holder = self._holder()
                if holder is not None and self._stale(holder):
                    self._clear_stale()
                    continue
                if time.monotonic() >= deadline:
                    raise LockBusy(self._busy_message(holder),
                                   hint="wait for it to finish; if that process is gone, "
                                        f"remove {self.path}")
                time.sleep(0.05)
                continue
            with os.fdopen(fd, "w") as f:
                f.write(info)
                f.flush()
                os.fsync(f.fileno())
            self.held = True
            return

    def release(self) -> None:
        if self.held:
            try:
                self.path.unlink()
            except FileNotFoundError:
                pass
            self.held = False

    def _holder(self) -> dict[str, Any] | None:
        try:
            data = json.loads(self.path.read_text())
            return data if isinstance(data, dict) else {}
        except (OSError, ValueError):
            return {}

    def _stale(self, holder: dict[str, Any]) -> bool:
        pid = holder.get("pid")
        if not isinstance(pid, int) or holder.get("host") != socket.gethostname():
            # An unreadable lock older than a minute is a leftover of a crash mid-write.
            try:
                return not holder and time.time() - self.path.stat().st_mtime > 60
            except OSError:
                return False
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        except PermissionError:
            return False
        return False

    def _clear_stale(self) -> None:
        # Rename first: of two processes clearing the same stale lock, only one succeeds.
        aside = self.path.with_name(f"lock.stale.{os.getpid()}")
        try:
            os.rename(self.path, aside)
            aside.unlink()
        except OSError:
            pass

    def _busy_message(self, holder: dict[str, Any] | None) -> str:
        if not holder:
            return f"another pq command holds {self.path}"
        return (f"another pq command is running in this repository: `{holder.get('command')}` "
                f"(pid {holder.get('pid')}, started {holder.get('started')})")


def snapshot(git: Git, queue_paths: tuple[str, ...] = ("series.yaml", "patches")) -> dict[str, Any]:
    """Ref targets and the working tree's queue files (stored as blobs, by digest)."""
    head_ref = git.current_branch()
    refs: dict[str, str | None] = {}
    if head_ref:
        refs[head_ref] = git.try_resolve(head_ref)
    else:
        refs["HEAD"] = git.try_resolve("HEAD")
    for line in git.text("for-each-ref", "--format=%(refname) %(objectname)",
                         "refs/pq/").splitlines():
        name, _, sha = line.partition(" ")
        if not name.startswith("refs/pq/oplog"):
            refs[name] = sha
    files: dict[str, str | None] = {}
    for qp in queue_paths:
        p = git.root / qp
        if p.is_file():
            files[qp] = git.write_blob(p.read_bytes())
        elif p.is_dir():
            for f in sorted(p.rglob("*")):
                if f.is_file():
                    rel = f.relative_to(git.root).as_posix()
                    files[rel] = git.write_blob(f.read_bytes())
    return {"head": head_ref or "HEAD", "refs": refs, "files": files}


@dataclass
class Transaction:
    """`with Transaction(git, "pq export") as t:` ... `t.done()` marks success."""

    git: Git
    command: str
    mutating: bool = True
    lock: Lock = field(init=False)
    record_path: Path | None = None
    record: dict[str, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.lock = Lock(self.git.pq_dir() / "lock", self.command)

    def __enter__(self) -> Transaction:
        self.lock.acquire()
        if self.mutating:
            try:
                self._begin()
            except BaseException:
                self.lock.release()
                raise
        return self

    def _begin(self) -> None:
        logdir = self.git.pq_dir() / "oplog"
        logdir.mkdir(parents=True, exist_ok=True)
        existing = sorted(int(p.stem) for p in logdir.glob("*.json") if p.stem.isdigit())
        number = (existing[-1] + 1) if existing else 1
        self.record = {"id": number, "command": self.command,
                       "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                       "status": "started", "before": snapshot(self.git), "after": None}
        self.record_path = logdir / f"{number:06d}.json"
        self._write()

    def _write(self) -> None:
        from pq.queuefiles import write_atomic

        assert self.record_path is not None
        write_atomic(self.record_path,
                     (json.dumps(self.record, indent=1, sort_keys=True) + "\n").encode())

    def done(self, status: str = "done") -> None:
        if self.mutating and self.record_path is not None:
            self.record["status"] = status
            self.record["after"] = snapshot(self.git)
            self._write()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        try:
            if self.mutating and self.record_path is not None and self.record["status"] == \
                    "started":
                if exc_type is None:
                    self.done()
                else:
                    self.done("failed")
        finally:
            self.lock.release()
