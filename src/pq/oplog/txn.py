"""Transactions: the repository lock and the operation log around every mutating command.

A command that changes refs, `series.yaml` or `patches/` runs inside `Transaction`: it holds
`.git/pq/lock` (`pq.oplog.lock`) and writes its log entry (`pq.oplog.log`) with the complete
state before it and, when it ends, after it, so `pq undo` can always bring the earlier state
back (see `pq.oplog.undo`).

Process state, kept here and nowhere else: the transaction running in this process per
repository (a nested one joins it) and the command line the CLI was given.
"""

from __future__ import annotations

import glob
import os
import re
import time
from dataclasses import dataclass, field
from typing import Any, Self

from pq.errors import ConfigError
from pq.faults import checkpoint
from pq.git.branchmove import BranchMoved
from pq.git.repo import Git
from pq.model.series import PATCHES_DIR, SERIES_FILE
from pq.oplog import log
from pq.oplog.lock import Lock, lock_path
from pq.oplog.snapshot import CONFLICT_WRITES, REBASE_STATE, Snapshot, take

_active: dict[str, Transaction] = {}
_invocation: list[str | None] = [None]  # the command line as the user typed it
_TEMP_NAME = re.compile(r"^\..+\.[A-Za-z0-9_]{8}\.tmp$")  # pq.atomic.write_atomic's


def set_invocation(command: str | None) -> None:
    """Log records and the lock name the command line the CLI was given, flags and all,
    rather than the library's name for the operation."""
    _invocation[0] = command


def _require_own_index(git: Git, command: str) -> None:
    """A command that changes the repository works on its working tree's own index: git's
    commands run with GIT_INDEX_FILE set would read another, which pq leaves behind."""
    named = os.environ.get("GIT_INDEX_FILE")
    own = git.git_dir / "index"
    if named and os.path.realpath(git.root / named) != os.path.realpath(own):
        raise ConfigError(
            f"GIT_INDEX_FILE names the index {named}, not this working tree's own ({own}): "
            f"`{command}` reads and writes the working tree's own index, which git's "
            "commands would not see under that setting",
            hint="unset GIT_INDEX_FILE and run the command again (`env -u GIT_INDEX_FILE "
                 f"{command}`)")


def sweep_temporary_files(git: Git) -> None:
    """Remove what atomic writes of a killed pq left behind (only the lock holder may)."""
    candidates = list(git.root.glob(f".{SERIES_FILE}.*.tmp"))
    for place in [git.root / PATCHES_DIR, git.pq_dir()]:
        if place.is_dir() and not place.is_symlink():
            candidates += place.rglob(".*.tmp")
    writing = git.pq_dir() / CONFLICT_WRITES  # a conflict's files being written when pq
    if writing.is_file():  # was killed (pq.oplog.putback.write_conflict): only their own
        for rel in writing.read_bytes().decode("utf-8", "surrogateescape").split("\0"):
            folder, name = os.path.split(rel)
            if (place := git.root / folder).is_dir() and not place.is_symlink():
                candidates += place.glob(f".{glob.escape(name)}.*.tmp")
    for p in candidates:
        if _TEMP_NAME.match(p.name) and p.is_file() and not p.is_symlink():
            checkpoint("unlink " + p.name)
            p.unlink()
    writing.unlink(missing_ok=True)


def settle_stopped(git: Git, status: str, since: int | None) -> None:
    """A rebase logged `stopped` (at a conflict) becomes `done` or `aborted` when it ends:
    the running operation's entry records that (call it inside its transaction). `since`:
    the entry that started the rebase, where its stops begin (None: look through the whole
    log, for a rebase an older pq started)."""
    t = _active.get(str(git.common_dir))
    if t is None or not t.record:
        raise AssertionError("settle_stopped outside a transaction")
    stopped = {int(r["id"]): status for r in log.read(git, since) if r["status"] == "stopped"
               and r["id"] != t.record["id"]}
    if stopped:
        t.record.setdefault("settles", {}).update(stopped)


def log_note(git: Git, command: str, note: str) -> int:
    """Log a change pq made outside what snapshots hold (a hook file it replaced) as an
    entry of kind `note`: `pq log` lists it; undo and redo step over it."""
    with Transaction(git, command, mutating=False) as t:
        if t.nested:
            raise AssertionError("log_note inside a transaction")
        t.begin(kind="note")
        t.record.update(status="done", after=t.record["before"], note=note)
        t.write()
        return int(t.record["id"])


def current_record_id(git: Git) -> int | None:
    """The log entry id of the operation running in this process, if one is."""
    t = _active.get(str(git.common_dir))
    return int(t.record["id"]) if t is not None and "id" in t.record else None


def in_transaction(git: Git) -> bool:
    """Whether this process holds the repository's lock in a transaction now."""
    return str(git.common_dir) in _active


@dataclass
class Transaction:
    """`with Transaction(git, "pq export") as t:` ... `t.done()` marks success.

    With `mutating=False` it only takes the lock; `begin()` starts the entry later (undo
    plans under the lock before it records anything). A Transaction opened while another is
    active in this process joins the outer one: one command, one entry.
    """

    git: Git
    command: str
    mutating: bool = True
    index: bool = True  # it may read or write the index (not a gate's record, say)
    lock: Lock = field(init=False)
    record: dict[str, Any] = field(default_factory=dict)
    nested: bool = False
    entry: str | None = None  # this operation's log entry (a commit on refs/pq/oplog)
    commits: set[str] = field(default_factory=set)  # the commits its snapshots name
    previous: str | None = None  # the entry before this operation's
    ref_before: str | None = None  # refs/pq/oplog when it began (a legacy tip, maybe)
    settled: bool = False  # its entry holds its last record (done() wrote it to the end)

    def __post_init__(self) -> None:
        self.command = _invocation[0] or self.command
        self.lock = Lock(lock_path(self.git), self.command)

    def __enter__(self) -> Self:
        key = str(self.git.common_dir)
        if key in _active:
            self.nested = True
            return self
        if self.index:
            _require_own_index(self.git, self.command)
        self.lock.acquire()
        _active[key] = self
        self.git.holding_interrupts = True  # a Ctrl-C waits for the git command it hits
        if self.mutating:
            try:
                self.begin()
            except BaseException:
                del _active[key]
                self.git.holding_interrupts = False
                self.lock.release()
                raise
        return self

    def begin(self, kind: str = "command", target: int | None = None,
              before: Snapshot | None = None, commits: set[str] | None = None,
              command: str | None = None) -> None:
        """Record the state before anything changes: nothing may change until this returns.
        `before` (taken under the lock) comes with `commits`, the commits it names;
        `command`, the command as the lock's holder learnt it (`pq rebase upstream/main`
        once series.yaml named the ref), unless the command line typed is known."""
        if self.nested:
            return
        self.command = _invocation[0] or command or self.command
        sweep_temporary_files(self.git)
        if before is None:
            self.commits = set()
            before = take(self.git, self.commits)
        else:
            self.commits = set(commits or ())
        self.previous, number, self.ref_before = log.newest(self.git)
        if self.ref_before is not None and self.ref_before != self.previous:
            self.commits.add(self.ref_before)  # a legacy log's tip stays reachable
        self.record = {"id": number, "command": self.command, "kind": kind,
                       "target": target, "pid": os.getpid(),
                       "time": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "status": "started",
                       "before": before, "after": None}
        self.write()

    def write(self) -> None:
        """Write the record as this operation's log entry (replacing the one before)."""
        self.entry = log.write(self.git, self.record, self.commits, self.previous,
                               self.entry or self.ref_before)

    def done(self, status: str = "done") -> None:
        if self.nested or self.entry is None or self.record.get("status") != "started":
            return
        after = take(self.git, self.commits)
        if after == self.record["before"] and (self.record["kind"] == "command"
                                              or status == "failed"):
            self.record["status"] = status
            self._drop()  # nothing changed: nothing to log or undo
            return
        self.record["status"] = status
        self.record["after"] = after
        self.write()
        self.settled = True

    def unchanged(self) -> None:
        """The operation put back all it had changed (git refused its move over a commit
        made meanwhile): its entry goes, as one that changed nothing does; what differs
        from its first record is the user's, not the operation's."""
        if not self.nested and self.entry is not None and self.record.get("status") == \
                "started":
            self._drop()

    def _drop(self) -> None:
        """The log as before this operation's first record, which is no entry any more."""
        assert self.entry is not None
        log.drop(self.git, self.entry, self.previous, self.ref_before)
        self.entry = None

    def __exit__(self, exc_type: object, exc: BaseException | None, tb: object) -> None:
        if self.nested:
            return
        try:
            if self.entry is not None and self.record.get("status") == "started" and \
                    exc is None:
                self._finish()
            elif self.entry is not None and self.record.get("status") == "started" and \
                    isinstance(exc, BranchMoved):  # refused, all put back: what differs is
                self.unchanged()  # the commit made meanwhile, not this operation's
            elif self.entry is not None and self.record.get("status") == "started":
                self.done("failed")
                # It changed something (its entry stays), and no rebase holds the state
                # (whose way back is --continue or --abort: `pq undo` refuses then).
                after = self.record.get("after") or {}
                if exc is not None and self.entry is not None and (
                        REBASE_STATE not in after.get("state", {})):
                    exc.pq_failed_operation = self.record["id"]  # type: ignore[attr-defined]
                elif exc is not None and self.entry is not None:
                    exc.pq_rebase_left = True  # type: ignore[attr-defined]
            elif self.entry is not None and not self.settled and exc is not None:
                # Cut short (a Ctrl-C) while its last record was written: the operation is
                # over, and its entry still says "started". Written again (unless git had
                # written it: the log's ref moved to it), then said so.
                if _written_last(self.git, self.record["id"], self.record["status"]) is None:
                    self.write()
                self.settled = True
                self._said_finished(exc)
            elif self.entry is None and exc is not None and self.record.get("status") == \
                    "started" and (cut := _written_last(self.git, self.record["id"],
                                                        "started")) is not None:
                # Cut short as its first record was written, git done with it: nothing
                # changed, and the entry goes as one that changed nothing does.
                log.drop(self.git, cut, self.previous, self.ref_before)
            if exc is not None and self.entry is None:
                exc.pq_nothing_changed = True  # type: ignore[attr-defined]
        finally:
            _active.pop(str(self.git.common_dir), None)
            self.git.holding_interrupts = False
            self.lock.release()

    def _finish(self) -> None:
        """`done()` for an operation that ended well. A Ctrl-C while its last record is
        taken or written comes after the operation itself: the record is finished first,
        and the Ctrl-C raised after it says so ("as it finished", or, where the operation
        changed nothing after all, "before it changed anything")."""
        try:
            self.done("done")
        except BaseException as cut:
            if not isinstance(cut, Exception):  # not a failure of the record's: finish it
                if self.record.get("status") == "started":  # cut in the snapshot
                    self.done("done")
                elif not self.settled:  # cut in the write, unless git had written it
                    if _written_last(self.git, self.record["id"], "done") is None:
                        self.write()
                    self.settled = True
                if self.entry is None:
                    cut.pq_nothing_changed = True  # type: ignore[attr-defined]
                else:
                    self._said_finished(cut)
            raise

    def _said_finished(self, exc: BaseException) -> None:
        """Note on `exc` that the operation finished before it (`pq undo` takes it back),
        or, where it left a rebase stopped (whose way on is --continue or --abort: `pq undo`
        refuses then), that the rebase is left in progress."""
        if REBASE_STATE in (self.record.get("after") or {}).get("state", {}):
            exc.pq_rebase_left = True  # type: ignore[attr-defined]
        else:
            exc.pq_finished_operation = self.record["id"]  # type: ignore[attr-defined]


def _written_last(git: Git, record_id: int, status: str) -> str | None:
    """The log's newest entry, if it is record `record_id` with `status`: the write a
    Ctrl-C cut short after git moved the log's ref (pq did not learn the entry); else None."""
    try:
        tip, following, _ = log.newest(git)
        if tip is None or following != record_id + 1:  # the tip is another record's
            return None
        last = log.read(git, since=record_id)[-1]  # the tip alone: it is that record
    except log.LogCorrupt:
        return None
    return tip if last["status"] == status else None
