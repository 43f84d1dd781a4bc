"""Transactions: the repository lock and the operation log around every mutating command.

A command that changes refs, `series.yaml` or `patches/` runs inside `Transaction`: it holds
`.git/pq/lock` and records the complete state before and after it under `.git/pq/oplog/`,
so `pq undo` can always bring the earlier state back (see `pq.oplog.undo`).
"""

from __future__ import annotations

import errno
import fcntl
import json
import os
import re
import socket
import stat
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Self

from pq.errors import GitError, PqError
from pq.faults import checkpoint
from pq.git.repo import Git, Person

LOCK_WAIT_S = float(os.environ.get("PQ_LOCK_WAIT", "3"))
QUEUE_PATHS = ("series.yaml", "patches")
LOG_REF = "refs/pq/oplog"  # pins every object a record names, so `git gc` keeps them
STATE_SKIP = ("oplog", "lock", "sealed", "tmp", "gate")  # .git/pq entries no snapshot
# carries: the log, the lock, sealed copies, temporary indexes and the gate's stage logs
STATE_MAX_BYTES = 1024 * 1024
REBASE_STATE = "rebase/state.json"  # pq.rebase.state keeps a rebase in progress there

Snapshot = dict[str, Any]




class LockBusy(PqError):
    exit_code = 2


# -- the lock ----------------------------------------------------------------------


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
                               hint="check the permissions of .git/pq") from None
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
                               "host": socket.gethostname()}).encode()
            os.ftruncate(fd, 0)
            os.pwrite(fd, info, 0)
            os.fsync(fd)
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
    except (UnicodeDecodeError, ValueError):
        return {}
    return holder if isinstance(holder, dict) else {}


def lock_holder(git: Git) -> dict[str, Any] | None:
    """The live holder of the repository lock, or None when nobody holds it."""
    path = git.pq_dir() / "lock"
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


# -- snapshots ---------------------------------------------------------------------


def snapshot(git: Git, queue_paths: tuple[str, ...] = QUEUE_PATHS) -> Snapshot:
    """Everything pq can change: HEAD, every branch and refs/pq/* ref, the queue files
    (bytes stored as blobs) and their index entries, and pq's own state files."""
    head_ref = None
    refs: dict[str, str] = {}
    scan = _scans.setdefault(str(git.common_dir), _RefScan())
    scan.commits.clear()
    scan.log_tip = None
    out = git.text("for-each-ref", "--format=%(HEAD)\t%(objecttype)\t%(objectname)\t%(refname)",
                   "refs/heads/", "refs/pq/")
    for line in out.splitlines():
        current, kind, sha, name = line.split("\t", 3)
        if name == LOG_REF:
            scan.log_tip = sha
        elif not name.startswith(LOG_REF + "/"):
            refs[name] = sha
            if kind == "commit":
                scan.commits.add(sha)
            if current == "*":
                head_ref = name
    head_commit = refs.get(head_ref) if head_ref else None
    if head_ref is None:
        head_ref = git.current_branch()  # an unborn branch, or (usually) a detached HEAD
        if head_ref is None:
            head_commit = git.try_resolve("HEAD")
            if head_commit:
                scan.commits.add(head_commit)
    files: dict[str, str] = {}
    for qp in queue_paths:
        files.update(_store_tree(git, git.root / qp, qp))
    index = sorted(git.text("ls-files", "-s", "-z", "--", *queue_paths).split("\0"))
    state: dict[str, str] = {}
    for child in state_children(git.pq_dir()):
        state.update(_store_tree(git, child, child.name, STATE_MAX_BYTES))
    worktree = _conflict(git, queue_paths) if REBASE_STATE in state else {}
    return {"head": head_ref or "HEAD", "head_commit": head_commit, "refs": refs,
            "files": files, "index": [e for e in index if e], "state": state,
            "worktree": worktree}


def _conflict(git: Git, queue_paths: tuple[str, ...]) -> dict[str, Any]:
    """While a rebase is in progress: every other path whose index entry or file differs
    from HEAD (a conflict shown in the working tree, a resolution being staged), exactly."""
    env = {"GIT_LITERAL_PATHSPECS": "1"}
    changed = set()
    for args in (("diff-index", "--cached", "--name-only", "-z", "HEAD"),
                 ("diff-files", "--name-only", "-z")):
        out = git.run_proc(*args, env=env).stdout
        changed |= {p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p}
    paths = sorted(p for p in changed
                   if not any(p == q or p.startswith(q + "/") for q in queue_paths))
    if not paths:
        return {}
    listed = git.text("ls-files", "-s", "-z", "--", *paths, env=env).split("\0")
    files: dict[str, str] = {}
    for p in paths:
        files.update(_store_tree(git, git.root / p, p))
    return {"paths": paths, "index": sorted(e for e in listed if e), "files": files}


@dataclass
class _RefScan:
    """What the last snapshot's ref scan saw besides the snapshot: the log's tip, and
    which of the ref targets are commits (a pin makes those its parents)."""

    log_tip: str | None = None
    commits: set[str] = field(default_factory=set)


_scans: dict[str, _RefScan] = {}


def _blob(git: Git, data: bytes) -> str:
    """The blob id of `data`, written only if the repository does not have it yet."""
    sha = git.hash_blob(data)
    try:
        kind = git.read_object(sha)[1]
    except GitError:
        kind = None
    return sha if kind == "blob" else git.write_blob(data)


def state_children(pq_dir: Path) -> list[Path]:
    """The entries of .git/pq that snapshots carry: all but the log, the lock and caches."""
    if not pq_dir.is_dir():
        return []
    return sorted(p for p in pq_dir.iterdir()
                  if not p.name.startswith(STATE_SKIP) and "cache" not in p.name)


def _store_tree(git: Git, path: Path, rel: str, max_bytes: int | None = None
                ) -> dict[str, str]:
    """Regular files and links at or under `path`, as {relative path: "mode blob"}."""
    out: dict[str, str] = {}
    try:
        st = path.lstat()
    except OSError:
        return out
    if stat.S_ISLNK(st.st_mode):
        target = os.readlink(path).encode("utf-8", "surrogateescape")
        out[rel] = f"120000 {_blob(git, target)}"
    elif stat.S_ISREG(st.st_mode):
        if path.name.endswith(".tmp") and path.name.startswith("."):
            return out  # an atomic write's temporary file, never part of the state
        if max_bytes is not None and st.st_size > max_bytes:
            return out
        mode = "100755" if st.st_mode & 0o111 else "100644"
        out[rel] = f"{mode} {_blob(git, path.read_bytes())}"
    elif stat.S_ISDIR(st.st_mode):
        for child in sorted(path.iterdir()):
            out.update(_store_tree(git, child, f"{rel}/{child.name}", max_bytes))
    return out


def _blobs(snap: Snapshot) -> set[str]:
    worktree = snap.get("worktree") or {}
    blobs = {v.split()[1] for v in [*snap["files"].values(), *snap["state"].values(),
                                    *worktree.get("files", {}).values()]}
    for entry in [*snap["index"], *worktree.get("index", [])]:
        mode, obj, _ = entry.split("\t", 1)[0].split()
        if mode != "160000":
            blobs.add(obj)
    return blobs


def pin(git: Git, label: str, snap: Snapshot) -> None:
    """Make every object `snap` names reachable from LOG_REF, so that gc never drops them.

    Call it right after `snapshot()`, whose ref scan it uses; each pin is a commit whose
    parents are the previous pin and the snapshot's commits, and whose tree has its blobs.
    """
    scan = _scans.get(str(git.common_dir), _RefScan())
    entries = b"".join(b"100644 %06d\0" % i + bytes.fromhex(sha)
                       for i, sha in enumerate(sorted(_blobs(snap))))
    tree = git.write_object("tree", entries)
    parents = [scan.log_tip] if scan.log_tip else []
    parents += sorted(scan.commits - set(parents))
    who = Person("pq", "pq@localhost", f"{int(time.time())} +0000")
    commit = git.write_commit(tree, parents, who, who, f"pq oplog: {label}\n")
    git.update_ref(LOG_REF, commit, scan.log_tip or git.null_id(), message="pq oplog")
    scan.log_tip = commit


_TEMP_NAME = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")  # queuefiles.write_atomic's


def sweep_temporary_files(git: Git) -> None:
    """Remove what atomic writes of a killed pq left behind (only the lock holder may)."""
    candidates = list(git.root.glob(".series.yaml.*.tmp"))
    for place in [git.root / "patches", git.pq_dir()]:
        if place.is_dir() and not place.is_symlink():
            candidates += place.rglob(".*.tmp")
    for p in candidates:
        if _TEMP_NAME.match(p.name) and p.is_file() and not p.is_symlink():
            checkpoint("unlink " + p.name)
            p.unlink()


# -- the operation log -------------------------------------------------------------


def log_dir(git: Git) -> Path:
    return git.pq_dir() / "oplog"


def read_records(git: Git) -> list[dict[str, Any]]:
    """Every record, oldest first; an unreadable one appears as status `unreadable`."""
    records = []
    directory = log_dir(git)
    if not directory.is_dir():
        return []
    for p in directory.glob("*.json"):
        if not p.stem.isdigit():
            continue
        try:
            record = json.loads(p.read_bytes())
            if not _well_formed(record, int(p.stem)):
                raise ValueError("not a record")
        except (OSError, ValueError):
            record = {"id": int(p.stem), "status": "unreadable", "command": "?",
                      "kind": "command", "time": "", "before": None, "after": None}
        records.append(record)
    return sorted(records, key=lambda r: int(r["id"]))


def _well_formed(record: Any, rid: int) -> bool:
    if not isinstance(record, dict) or record.get("id") != rid:
        return False
    for key in ("before", "after"):
        snap = record.get(key)
        if snap is None and key == "after":
            continue
        if not (isinstance(snap, dict) and isinstance(snap.get("head"), str)
                and isinstance(snap.get("refs"), dict) and isinstance(snap.get("files"), dict)
                and isinstance(snap.get("index"), list) and isinstance(snap.get("state"), dict)
                and isinstance(snap.get("worktree", {}), dict)):
            return False
        specs = [*snap["files"].values(), *snap["state"].values()]
        if not all(isinstance(v, str) and _SPEC.match(v) for v in specs) or not all(
                isinstance(v, str) for v in [*snap["refs"].values(), *snap["index"]]):
            return False
    return True


_SPEC = re.compile(r"^(?:100644|100755|120000) [0-9a-f]{40}(?:[0-9a-f]{24})?$")


_active: dict[str, Transaction] = {}
_invocation: list[str | None] = [None]  # the command line as the user typed it


def set_invocation(command: str | None) -> None:
    """Log records and the lock name the command line the CLI was given, flags and all,
    rather than the library's name for the operation."""
    _invocation[0] = command


def settle_stopped(git: Git, status: str) -> None:
    """A rebase logged `stopped` (at a conflict) becomes `done` or `aborted` when it ends."""
    directory = log_dir(git)
    for record in read_records(git):
        if record.get("status") == "stopped":
            record["status"] = status
            from pq.queue.files import write_atomic

            write_atomic(directory / f"{int(record['id']):06d}.json",
                         (json.dumps(record, indent=1, sort_keys=True) + "\n").encode())


def log_note(git: Git, command: str, note: str) -> int:
    """Log a change pq made outside what snapshots hold (a hook file it replaced) as a
    record of kind `note`: `pq log` lists it; undo and redo step over it."""
    with Transaction(git, command, mutating=False) as t:
        if t.nested:
            raise AssertionError("log_note inside a transaction")
        t.begin(kind="note")
        t.record.update(status="done", after=t.record["before"], note=note)
        t._write()
        return int(t.record["id"])


def current_record_id(git: Git) -> int | None:
    """The log record id of the operation running in this process, if one is."""
    t = _active.get(str(git.common_dir))
    return int(t.record["id"]) if t is not None and "id" in t.record else None


@dataclass
class Transaction:
    """`with Transaction(git, "pq export") as t:` ... `t.done()` marks success.

    With `mutating=False` it only takes the lock; `begin()` starts the record later (undo
    plans under the lock before it records anything). A Transaction opened while another is
    active in this process joins the outer one: one command, one record.
    """

    git: Git
    command: str
    mutating: bool = True
    lock: Lock = field(init=False)
    record_path: Path | None = None
    record: dict[str, Any] = field(default_factory=dict)
    nested: bool = False

    def __post_init__(self) -> None:
        self.command = _invocation[0] or self.command
        self.lock = Lock(self.git.pq_dir() / "lock", self.command)

    def __enter__(self) -> Self:
        key = str(self.git.common_dir)
        if key in _active:
            self.nested = True
            return self
        self.lock.acquire()
        _active[key] = self
        if self.mutating:
            try:
                self.begin()
            except BaseException:
                del _active[key]
                self.lock.release()
                raise
        return self

    def begin(self, kind: str = "command", target: int | None = None,
              before: Snapshot | None = None) -> None:
        """Record the state before anything changes: nothing may change until this returns."""
        if self.nested:
            return
        logdir = log_dir(self.git)
        logdir.mkdir(parents=True, exist_ok=True)
        sweep_temporary_files(self.git)
        existing = [int(p.stem) for p in logdir.glob("*.json") if p.stem.isdigit()]
        number = max(existing, default=0) + 1
        snap = before if before is not None else snapshot(self.git)
        pin(self.git, f"{number} {self.command} (before)", snap)
        self.record = {"id": number, "command": self.command, "kind": kind, "target": target,
                       "pid": os.getpid(), "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
                       "status": "started", "before": snap, "after": None}
        self.record_path = logdir / f"{number:06d}.json"
        self._write()

    def _write(self) -> None:
        from pq.queue.files import write_atomic

        assert self.record_path is not None
        write_atomic(self.record_path,
                     (json.dumps(self.record, indent=1, sort_keys=True) + "\n").encode())

    def done(self, status: str = "done") -> None:
        if self.nested or self.record_path is None or self.record.get("status") != "started":
            return
        after = snapshot(self.git)
        if after == self.record["before"] and (self.record["kind"] == "command"
                                              or status == "failed"):
            self.record_path.unlink()  # nothing changed: nothing to log or undo
            self.record["status"] = status
            self.record_path = None
            return
        pin(self.git, f"{self.record['id']} {self.command} (after)", after)
        self.record["status"] = status
        self.record["after"] = after
        self._write()

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        if self.nested:
            return
        try:
            if self.record_path is not None and self.record.get("status") == "started":
                self.done("done" if exc_type is None else "failed")
        finally:
            _active.pop(str(self.git.common_dir), None)
            self.lock.release()
