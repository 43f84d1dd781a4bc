"""Undo and redo: put the repository back into a state that the operation log recorded.

`pq undo` walks back through the operations in effect, `pq redo` reverts the undos, and
`pq undo --op N` returns to the state just before operation N; each is itself recorded.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pq.errors import ConfigError, GitError
from pq.git.repo import Git
from pq.oplog import log
from pq.oplog.snapshot import (
    REBASE_STATE,
    Snapshot,
    check_paths,
    clear_queue,
    in_queue,
    narrow,
    read_refs,
    require_same_checkout,
    take,
    write_conflict,
    write_queue,
    write_state,
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


def acts_as_command(record: Record) -> bool:
    """Commands, and undos that did not finish: the next undo puts back their `before`."""
    return record.get("kind", "command") == "command" or record.get("status") != "done"


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
            view, redo = h.before[target]
            h.view, h.redo = list(view), list(redo)
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


@dataclass
class Plan:
    """Put the record's `before` back, for the parts that differ from `reference`."""

    kind: str  # undo | redo | restore
    record: Record
    target: Snapshot
    changed: list[str]  # component names to restore
    drift: list[str] = field(default_factory=list)  # parts changed by someone else since

    @property
    def refs(self) -> dict[str, str | None]:
        return {c[4:]: self.target["refs"].get(c[4:]) for c in self.changed
                if c.startswith("ref ")}


def plan(git: Git, kind: str, op: int | None, current: Snapshot, force: bool) -> Plan:
    """Choose the record to restore and check that nothing else changed since it ran."""
    records = log.read(git)
    if records:
        log.load(git, records[-1])  # whether it brought a rebase back (_reverts_a_stop)
    h = history(records)
    if REBASE_STATE in current["state"] and not _reverts_a_stop(h, kind, op):
        raise ConfigError(f"a pq rebase is in progress; pq {kind} would step into the middle "
                          "of it", hint="finish it with `pq rebase --continue` or end it with "
                                        "`pq rebase --abort` (then `pq undo` goes further back)")
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
    reference = last["after"] if isinstance(last.get("after"), dict) else current
    # What all three record of the queue (an older version's snapshot: no mre/ or .pq/).
    scope = [q for q in current["scope"] if q in before["scope"] and q in reference["scope"]]
    before, reference, now = (narrow(s, scope) for s in (before, reference, current))
    names = set(before["refs"]) | set(reference["refs"]) | set(now["refs"])
    b, r, c = (_components(s, names) for s in (before, reference, now))
    changed = sorted(k for k in b if b[k] != (c if kind == "restore" else r)[k])
    drift = [k for k in changed if c[k] != r[k]]
    if changed and "HEAD" not in changed and c["HEAD"] != r["HEAD"]:
        # HEAD left the branch the operation ran on (a detached checkout, another branch):
        # the index and files put back are the branch's, so HEAD goes back with them.
        changed = sorted([*changed, "HEAD"])
        drift.insert(0, "HEAD")
    result = Plan(kind, record, before, changed, drift)
    if drift and not force:
        again = f"pq {kind}" if kind != "restore" else f"pq undo --op {rid}"
        back = "pq redo" if kind == "undo" else f"pq undo --op {int(records[-1]['id']) + 1}"
        raise ConfigError(
            f"{_describe_drift(drift[0], now, reference)} since operation {last['id']} "
            f"(`{last.get('command')}`); `{again}` would throw that away",
            hint=f"`{again} --force` does it anyway; the present state is logged first, and "
                 f"`{back}` brings it back")
    return result


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
        restore(git, p, narrow(current, p.target["scope"]))
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


def restore(git: Git, p: Plan, current: Snapshot) -> None:
    """Move refs, HEAD, index and working tree, then the queue files, to `p.target`.

    Each step is one git command or one file write, so a restore that is killed half-way
    leaves a state that the next `pq undo` (which first undoes this restore) can read.
    """
    target = p.target
    env = {"GIT_REFLOG_ACTION": f"pq {p.kind}: operation {p.record['id']}"}
    final_refs = dict(current["refs"])
    for ref, value in p.refs.items():
        if value is None:
            final_refs.pop(ref, None)
        else:
            final_refs[ref] = value
    head_now = current["head"]
    head_then = target["head"] if "HEAD" in p.changed else head_now
    commit_now = current["head_commit"]
    if head_then == "HEAD":
        commit_then = target["head_commit"] if "HEAD" in p.changed else commit_now
    else:
        commit_then = final_refs.get(head_then)
    moving = head_then != head_now or commit_then != commit_now
    elsewhere = git.branches_elsewhere()
    for ref in [*p.refs, *([head_then] if moving else [])]:
        if ref in elsewhere:  # git would move or delete it under that worktree's files
            raise ConfigError(f"{ref} is checked out in the worktree {elsewhere[ref]}; "
                              f"{_doing(p)} would move it there too",
                              hint="switch that worktree to another branch or remove it, "
                                   f"then run `pq {'redo' if p.kind == 'redo' else 'undo'}` "
                                   "again")
    if moving and (commit_now is None or commit_then is None):
        raise ConfigError("cannot undo: HEAD would have no commit",
                          hint="check `git status`; `pq log --json` has the recorded refs")
    queue = (target["files"], target["index"]) if "queue" in p.changed else (
        current["files"], current["index"])

    # 1. HEAD, index and working tree together, in one git command, before anything else
    #    changes: if it refuses (it would overwrite uncommitted work) nothing has.
    if moving:
        assert commit_now is not None and commit_then is not None
        _require_no_untracked_in_the_way(git, commit_now, commit_then, p)
        # Files whose stat data changed but whose bytes did not must not count as edits.
        git.refresh_index()
        conflict = current.get("worktree") or {}
        # Unmerged or resolved and staged, the conflict's work is in the snapshot this
        # operation logs: git moves no HEAD over it, so it is taken back first.
        took_back = bool(conflict)
        if took_back:
            _take_conflict_back(git, commit_now, p, env)
        clear_queue(git, commit_now, current)
        branch = None if head_then == "HEAD" else head_then.removeprefix("refs/heads/")
        moved, stderr = git.try_move_head(
            commit_then, branch, create=current["refs"].get(head_then) != commit_then, env=env)
        if not moved:
            if took_back:  # nothing changes when the move fails: the conflict goes back too
                write_conflict(git, conflict)
            write_queue(git, current["files"], current["index"], current["scope"])
            raise ConfigError(_checkout_failure(stderr, p),
                              hint="commit or stash those changes (`git stash`), then run it "
                                   "again")
    # 2. Every other ref, in one atomic update (the branch HEAD moved with is done).
    refs_now = read_refs(git) if moving else current["refs"]
    _update_refs(git, {ref: value for ref, value in p.refs.items()
                       if not (moving and ref == head_then)}, refs_now, env)
    # 3. The queue files and their index entries, byte for byte; then pq's state files.
    if "queue" in p.changed or moving:
        write_queue(git, *queue, target["scope"])
    if "state" in p.changed:
        write_state(git, target["state"])
    if "worktree" in p.changed:
        write_conflict(git, target.get("worktree") or {})


def _take_conflict_back(git: Git, head: str, p: Plan, env: dict[str, str]) -> None:
    """A stopped rebase's conflict (in the snapshot this operation logs) out of the index
    and its files, as `git cherry-pick --abort` takes one back: git moves no HEAD over
    unmerged entries."""
    try:
        git.reset("merge", head, env=env)
    except GitError as exc:
        raise ConfigError(f"{_doing(p)} failed: the stopped rebase's conflict cannot be "
                          f"taken back: {exc.message}",
                          hint="`pq rebase --continue` or `pq rebase --abort` ends the rebase"
                          ) from None


def _update_refs(git: Git, refs: dict[str, str | None], now: dict[str, str],
                 env: dict[str, str]) -> None:
    """One atomic `update-ref --stdin`, each update checked against the value we saw (two,
    deletions first, for `feat` going and `feat/x` coming: git refuses that in one)."""
    updates = [(ref, value, now.get(ref) or git.null_id())
               for ref, value in sorted(refs.items())
               if ((ref in now) if value is None else value != now.get(ref))]
    gone, come = [u for u in updates if u[1] is None], [u for u in updates if u[1]]
    if any(a.startswith(b + "/") or b.startswith(a + "/") for a, _, _ in gone for b, _, _ in come):
        git.update_refs(gone, env["GIT_REFLOG_ACTION"])
        updates = come
    git.update_refs(updates, env["GIT_REFLOG_ACTION"])


def _require_no_untracked_in_the_way(git: Git, now: str, then: str, p: Plan) -> None:
    """Untracked files where the restored commit has files: git's reset would refuse
    halfway with a bare `Could not reset index file`; say which, as `git checkout` does."""
    in_way = git.untracked([path for path in git.changed_paths(now, then, diff_filter="A")
                            if not in_queue(path)])
    if in_way:
        more = f" and {len(in_way) - 1} more" if len(in_way) > 1 else ""
        raise ConfigError(f"untracked {in_way[0]}{more} would be overwritten by {_doing(p)}",
                          hint="move it aside, then run `pq "
                               f"{'redo' if p.kind == 'redo' else 'undo'}` again")


def _checkout_failure(stderr: bytes, p: Plan) -> str:
    text = stderr.decode("utf-8", "replace")
    paths = [ln.strip() for ln in text.splitlines() if ln.startswith("\t")]
    paths += re.findall(r"^error: Entry '(.+)' not uptodate", text, re.MULTILINE)
    if paths:
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        return f"uncommitted changes in {paths[0]}{more} would be overwritten by {_doing(p)}"
    last = [ln for ln in text.splitlines() if ln.strip()]
    return f"{_doing(p)} failed: {last[-1] if last else 'git checkout failed'}"


def _doing(p: Plan) -> str:
    """`undoing operation 3 (`pq rebase upstream/main`)`: what the plan does, for errors."""
    verb = {"undo": "undoing", "redo": "redoing", "restore": "restoring"}[p.kind]
    return f"{verb} operation {p.record['id']} (`{p.record.get('command')}`)"
