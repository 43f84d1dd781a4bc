"""Undo and redo: put the repository back into a state that the operation log recorded.

`pq undo` walks back through the operations in effect, `pq redo` reverts the undos, and
`pq undo --op N` returns to the state just before operation N; each is itself recorded.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

from pq.errors import ConfigError
from pq.git.branchmove import BranchMoved
from pq.git.process import pid_alive
from pq.git.repo import Git
from pq.oplog import log
from pq.oplog.lock import lock_holder
from pq.oplog.moved import left_by, refs_moved
from pq.oplog.putback import restore
from pq.oplog.snapshot import (
    REBASE_STATE,
    Snapshot,
    check_paths,
    narrow,
    require_same_checkout,
    take,
)
from pq.oplog.txn import Transaction

Record = dict[str, Any]


# -- the history: which operations are in effect ----------------------------------------


@dataclass
class History:
    records: dict[int, Record]
    view: list[int] = field(default_factory=list)  # in effect, oldest first: undo walks back
    redo: list[int] = field(default_factory=list)  # undo records that redo reverts, newest last
    before: dict[int, tuple[list[int], list[int]]] = field(default_factory=dict)

    def undone(self, rid: int) -> bool:
        return acts_as_command(self.records[rid]) and rid not in self.view


def cut_off(record: Record, holder: dict[str, Any] | None) -> bool:
    """Whether `record`, logged `started`, is no longer running: the lock's `holder` is not
    its process, alive (it was killed, or interrupted past its handler)."""
    running = holder is not None and holder.get("pid") == record.get("pid")
    return not (running and pid_alive(record.get("pid")))


def stopped_half_way(git: Git) -> tuple[int, str] | None:
    """(id, command) of the newest operation where it stopped half-way: logged `failed`
    (git refused half-way, a Ctrl-C) or `started` and `cut_off` (killed); else None."""
    _, next_id, _ = log.newest(git)
    last = log.read(git, next_id - 1)[-1:] if next_id > 1 else []
    if not last or last[0].get("kind") == "note" or not (last[0].get("status") == "failed" or (
            last[0].get("status") == "started" and cut_off(last[0], lock_holder(git)))):
        return None
    return int(last[0]["id"]), str(last[0].get("command", ""))


def acts_as_command(record: Record) -> bool:
    """Commands, and undos that did not finish: the next undo puts back their `before`
    (not a note, which changes nothing: one cut off as it was written is no operation)."""
    kind = record.get("kind", "command")
    return kind == "command" or (kind != "note" and record.get("status") != "done")


def history(records: list[Record]) -> History:
    h = History({int(r["id"]): r for r in records})
    for record in records:
        rid = int(record["id"])
        h.before[rid] = (list(h.view), list(h.redo))
        kind = record.get("kind", "command")
        target = record.get("target")
        if acts_as_command(record):
            h.view.append(rid)
            h.redo.clear()
        elif kind == "undo":
            h.view = [v for v in h.view if v != target]
            h.redo.append(rid)
        elif kind in ("redo", "restore") and target in h.before:
            view, redo = h.before[target]  # a restore, like any operation, clears redo
            h.view, h.redo = list(view), list(redo) if kind == "redo" else []
    return h


# -- planning: what to put back ------------------------------------------------------------


def _components(snap: Snapshot, ref_names: set[str]) -> dict[str, Any]:
    comps: dict[str, Any] = {
        "HEAD": (snap["head"], snap["head_commit"] if snap["head"] == "HEAD" else None),
        "queue": (snap["files"], snap["index"]),
        "state": snap["state"],
        "worktree": snap.get("worktree") or {},
    }
    for name in ref_names:
        comps["ref " + name] = snap["refs"].get(name)
    return comps


def _without_exec_bit(queue: tuple[dict[str, str], Any]) -> tuple[dict[str, str], Any]:
    """The queue component with every file's mode 100755 read as 100644."""
    files, index = queue
    return {p: v.replace("100755 ", "100644 ", 1) for p, v in files.items()}, index


@dataclass
class Plan:
    """Put the record's `before` back, for the parts that differ from `reference`."""

    kind: str  # undo | redo | restore
    record: Record
    target: Snapshot
    changed: list[str]  # component names to restore
    drift: list[str] = field(default_factory=list)  # parts changed by someone else since
    forced: bool = False  # --force: what changed since goes (the present state is logged)

    @property
    def again(self) -> str:
        """The command that makes this plan, to run again once what refused it is fixed."""
        return {"redo": "pq redo", "undo": "pq undo"}.get(
            self.kind, f"pq undo --op {self.record['id']}") + " --force" * self.forced

    @property
    def refs(self) -> dict[str, str | None]:
        return {c[4:]: self.target["refs"].get(c[4:]) for c in self.changed
                if c.startswith("ref ")}


class RebaseInProgress(ConfigError):
    """A rebase in progress: undo and redo wait for its end. `past`: how to go back past it
    once it ended (the hint's tail; the CLI names the ways out `pq status` gives)."""

    def __init__(self, message: str, past: str, hint: str) -> None:
        super().__init__(message, hint=hint)
        self.past = past


def plan(git: Git, kind: str, op: int | None, current: Snapshot, force: bool) -> Plan:
    """Choose the record to restore and check that nothing else changed since it ran."""
    records = log.read(git)
    if records:
        log.load(git, records[-1])  # whether it brought a rebase back (_reverts_a_stop)
    h = history(records)
    if REBASE_STATE in current["state"] and not _reverts_a_stop(h, kind, op):
        past = _past_the_rebase(git, h)
        raise RebaseInProgress(f"a pq rebase is in progress; pq {kind} would step into the "
                               "middle of it", past, hint="finish it with `pq rebase "
                               f"--continue` or end it with `pq rebase --abort`{past}")
    if kind == "undo" and op is None:
        if not h.view:
            raise ConfigError("nothing to undo", hint="`pq log` lists the operations")
        rid = h.view[-1]
    elif kind == "redo":
        if not h.redo:
            raise ConfigError("nothing to redo: redo only follows `pq undo`",
                              hint="`pq log` lists the operations; `pq undo --op N` "
                                   "returns to the state before any of them")
        rid = h.redo[-1]
    else:
        assert op is not None
        if op not in h.records:
            raise ConfigError(f"no operation {op} in the log", hint="`pq log` lists them")
        rid = op
        kind = "restore"
    record = log.load(git, h.records[rid])
    before: Snapshot = record["before"]
    check_paths(before, rid)
    require_same_checkout(git, before, f"operation {rid}", f"pq {kind}")
    # Undone against what it left; a restore against what pq's last operation left (not a note).
    last = record if kind != "restore" else log.load(git, next(
        (r for r in reversed(records) if r.get("kind") != "note"), records[-1]))
    reference = left_by(git, records, int(last["id"])) or current
    # What all three record of the queue (an older version's snapshot: no mre/ or .pq/).
    scope = [q for q in current["scope"] if q in before["scope"] and q in reference["scope"]]
    before, reference, now = (narrow(s, scope) for s in (before, reference, current))
    names = set(before["refs"]) | set(reference["refs"]) | set(now["refs"])
    b, r, c = (_components(s, names) for s in (before, reference, now))
    # Only refs the operations put back moved (a branch the user made or moved with git
    # meanwhile, which none of them touched, stays as it is).
    moved, doubted = refs_moved(git, records, rid if kind != "restore" else None, rid,
                                 current)
    changed = sorted(k for k in b if b[k] != (c if kind == "restore" else r)[k] and (
        not k.startswith("ref ") or k[4:] in moved))
    if git.config_bool("core.fileMode") is False:  # git sees no executable bit: nor does pq
        c = {**c, "queue": _without_exec_bit(c["queue"])}
        r = {**r, "queue": _without_exec_bit(r["queue"])}
    drift = [k for k in changed if c[k] != r[k] or k.removeprefix("ref ") in doubted]
    if changed and "HEAD" not in changed and c["HEAD"] != r["HEAD"]:
        # HEAD left the branch the operation ran on (a detached checkout, another branch):
        # the index and files put back are the branch's, so HEAD goes back with them.
        changed = sorted([*changed, "HEAD"])
        drift.insert(0, "HEAD")
    result = Plan(kind, record, before, changed, drift, force)
    if drift and not force:
        again = f"pq {kind}" if kind != "restore" else f"pq undo --op {rid}"
        back = "pq redo" if kind == "undo" else f"pq undo --op {int(records[-1]['id']) + 1}"
        elsewhere = git.other_worktree(reference.get("checkout"))
        there = f", in the worktree {elsewhere}" if elsewhere is not None else ""
        ref = drift[0].removeprefix("ref ")
        said = (f"{ref} has moved (it is {_short(now['refs'].get(ref))}, a commit no pq "
                "command wrote)" if ref in doubted else _describe_drift(drift[0], now, reference))
        raise ConfigError(
            f"{said} since operation {last['id']} "
            f"(`{last.get('command')}`{there}); `{again}` would throw that away",
            hint=(f"undo operation {last['id']} in {elsewhere} first; or " if there and not
                  git.worktree_gone(reference.get("checkout")) else "")
            + f"`{again} --force` does it anyway; the present state is logged first, and "
              f"`{back}` brings it back")
    return result


def _past_the_rebase(git: Git, h: History) -> str:
    """What goes back past the rebase in progress once it is aborted: a plain `pq undo`
    after `--abort` (or a finished `--continue`) brings the stopped rebase back, so it is
    `pq undo --op` of the operation in effect before the rebase started, if any."""
    try:
        started = json.loads((git.pq_dir() / REBASE_STATE).read_bytes()).get("log_id")
    except (OSError, ValueError, AttributeError, RecursionError):
        started = None
    earlier = h.before[started][0] if isinstance(started, int) and started in h.before else []
    if not earlier:
        return ""
    record = h.records[earlier[-1]]
    return (f"; a `pq undo` after that brings this rebase back: after the abort, `pq undo "
            f"--op {earlier[-1]}` goes further back, to before `{record.get('command')}`")


def brought_back_a_rebase(record: Record) -> bool:
    """Whether `record` is an undo/redo/restore that left a stopped rebase in progress
    (undoing a finished `--continue` or an `--abort`): reverting it ends that rebase again,
    so redo (and `pq undo --op` of it) may run while that rebase is in progress."""
    before, after = record.get("before"), record.get("after")
    return (record.get("kind", "command") != "command" and record.get("status") == "done"
            and isinstance(before, dict) and isinstance(after, dict)
            and REBASE_STATE not in before.get("state", {})
            and REBASE_STATE in after.get("state", {}))


def _reverts_a_stop(h: History, kind: str, op: int | None) -> bool:
    """While a rebase is in progress: whether this redo (or undo --op) reverts the undo that
    brought the rebase back, and nothing ran since (any later change refuses as drift)."""
    rid = h.redo[-1] if kind == "redo" and h.redo else op if kind == "undo" else None
    return (rid is not None and rid in h.records and rid == max(h.records)
            and brought_back_a_rebase(h.records[rid]))


def redo_allowed(h: History, rebasing: bool) -> bool:
    """Whether `pq redo` would run now (`pq log` offers it only then)."""
    return bool(h.redo) and (not rebasing or _reverts_a_stop(h, "redo", None))


def _describe_drift(component: str, now: Snapshot, then: Snapshot) -> str:
    if component.startswith("ref "):
        name = component[4:]
        return (f"{name} has moved (it is {_short(now['refs'].get(name))}, was "
                f"{_short(then['refs'].get(name))})")
    if component == "HEAD":
        return f"HEAD has changed (it is {_head(now)}, was {_head(then)})"
    if component == "queue":
        return "series.yaml, patches/, mre/ or .pq/ changed"
    if component == "worktree":
        a, b = ((s.get("worktree") or {}).get("files", {}) for s in (now, then))
        changed = sorted(p for p in set(a) | set(b) if a.get(p) != b.get(p)) or sorted(
            (now.get("worktree") or {}).get("paths", []))
        return (f"the stopped rebase's {', '.join(changed[:3]) or 'conflicted files'}"
                f"{' and more' if len(changed) > 3 else ''} changed (staged or not)")
    return "pq's state in .git/pq changed"


def _head(snap: Snapshot) -> str:
    name: str = snap["head"].removeprefix("refs/heads/")
    return f"detached at {_short(snap['head_commit'])}" if name == "HEAD" else name


def _short(sha: str | None) -> str:
    return sha[:12] if sha else "(none)"


# -- doing it ---------------------------------------------------------------------------------


@dataclass
class UndoResult:
    kind: str
    target_id: int
    target_command: str
    record_id: int
    refs: list[tuple[str, str | None, str | None]]  # (ref, from, to)
    head: tuple[str, str] | None  # (from, to) when HEAD was moved to another branch
    files: list[str]
    rebase: bool = False  # a rebase is in progress again (stopped where it was)
    # Operations taken back (none for a redo): git rerere keeps their resolutions.
    taken_back: list[int] = field(default_factory=list)


def run(git: Git, kind: str = "undo", op: int | None = None, force: bool = False) -> UndoResult:
    command = "pq " + kind + (f" --op {op}" if op is not None else "")
    with Transaction(git, command, mutating=False) as t:
        commits: set[str] = set()
        current = take(git, commits)
        p = plan(git, kind, op, current, force)
        if not force:
            _refuse_past_an_unlogged_kill(git, t.lock.stale_holder, p)
        t.begin(kind=p.kind, target=int(p.record["id"]), before=current, commits=commits)
        try:
            restore(git, p, narrow(current, p.target["scope"]))
        except BranchMoved:  # a commit made meanwhile: kept, and everything put back
            t.unchanged()
            raise
        t.done()
        final = p.target["files"] if "queue" in p.changed else current["files"]
        files = sorted(f for f in set(final) | set(current["files"])
                       if final.get(f) != current["files"].get(f))
        refs = [(ref, current["refs"].get(ref), new) for ref, new in sorted(p.refs.items())
                if current["refs"].get(ref) != new]
        if "HEAD" in p.changed and current["head"] == p.target["head"] == "HEAD":
            refs.append(("HEAD", current["head_commit"], p.target["head_commit"]))  # detached
        head = (current["head"], p.target["head"]) if "HEAD" in p.changed and \
            current["head"] != p.target["head"] else None
        result = UndoResult(p.kind, int(p.record["id"]), str(p.record.get("command")),
                            int(t.record["id"]), refs, head, files,
                            REBASE_STATE in p.target["state"] and "state" in p.changed)
        if p.kind != "redo":
            result.taken_back = [result.target_id] if p.kind == "undo" else [
                rid for rid in history(log.read(git)).records if rid >= result.target_id]
    return result


def _refuse_past_an_unlogged_kill(git: Git, holder: dict[str, Any] | None, p: Plan) -> None:
    """The lock a killed pq left names it: killed before it logged, it changed nothing, and
    undo would reach past it to an older operation. Say so once (this undo drops the lock)."""
    if not holder or not isinstance(holder.get("command"), str):
        return
    command = holder["command"]
    if command.split()[:2] in (["pq", "undo"], ["pq", "redo"]):
        return  # an undo killed early: running it again is what the user wants
    started = str(holder.get("started", ""))
    if any(r.get("pid") == holder.get("pid") and str(r.get("time", "")) >= started
           for r in log.read(git)):
        return  # it logged a record: that record is what undo (or --abort) handles
    verb = "redo" if p.kind == "redo" else "undo"
    raise ConfigError(
        f"`{command}` (pid {holder.get('pid')}, started {started or '?'}) was killed before "
        f"it logged anything, so it changed nothing; pq {verb} would now {verb} operation "
        f"{p.record['id']} (`{p.record.get('command')}`), which ran before it",
        hint="there is nothing to undo for the killed command; run the same command again "
             "if you do mean that operation (or `pq log` to check)")
