"""`pq log`, `pq undo`, `pq redo`: the operation log and the way back through it."""

from __future__ import annotations

import shlex
from typing import Any

import click

from pq.cli.common import emit_json, open_repo, plural, short
from pq.git.repo import Git
from pq.oplog import log as oplog
from pq.oplog import undo as undo_mod
from pq.oplog.lock import lock_holder
from pq.rebase import rrnotes
from pq.rebase import status as rebase_status
from pq.rebase.state import require_no_git_operation


def register(main: click.Group) -> None:
    for command in (log, undo, redo):
        main.add_command(command)


def _status(record: dict[str, Any], h: undo_mod.History, holder: dict[str, Any] | None) -> str:
    status = str(record.get("status"))
    if status == "started":
        return "interrupted" if undo_mod.cut_off(record, holder) else "running"
    if h.undone(int(record["id"])):
        return "undone"
    return status


def _changes(record: dict[str, Any]) -> dict[str, Any]:
    """What an operation changed: refs old -> new, HEAD, files added/removed/modified."""
    before = record.get("before") or {}
    after = record.get("after")
    if not isinstance(after, dict) or not before:
        return {"refs": [], "head": None, "files": []}
    refs = []
    for name in sorted(set(before.get("refs", {})) | set(after.get("refs", {}))):
        old, new = before["refs"].get(name), after["refs"].get(name)
        if old != new:
            refs.append({"ref": name, "old": old, "new": new})
    head = None
    if before.get("head") != after.get("head"):
        head = {"old": before.get("head"), "new": after.get("head")}
    elif before.get("head") == "HEAD" and before.get("head_commit") != after.get("head_commit"):
        # A detached HEAD that moved: listed with the refs, as `HEAD`.
        refs.append({"ref": "HEAD", "old": before.get("head_commit"),
                     "new": after.get("head_commit")})
    files = []
    bf, af = before.get("files", {}), after.get("files", {})
    for path in sorted(set(bf) | set(af)):
        if path not in bf:
            files.append({"path": path, "change": "added"})
        elif path not in af:
            files.append({"path": path, "change": "removed"})
        elif bf[path] != af[path]:
            files.append({"path": path, "change": "modified"})
    return {"refs": refs, "head": head, "files": files}


@click.command()
@click.option("-n", "--max-count", "limit", type=click.IntRange(min=0), default=None, metavar="N",
              help="Show only the N most recent operations.")
@click.option("--json", "as_json", is_flag=True, help="Print the operations as JSON.")
def log(limit: int | None, as_json: bool) -> None:
    """List pq's operations, newest first: what each changed, and which are undone."""
    with open_repo() as git:
        records = oplog.read(git)  # every entry: an entry's status rests on later ones
        # Newest first; only the ones shown need their snapshots.
        newest = [oplog.load(git, r) for r in records[::-1][:limit]]
        holder = lock_holder(git)
        st = rebase_status.status(git)
    h = undo_mod.history(records)
    rows = []
    for record in newest:
        rows.append({"id": int(record["id"]), "time": record.get("time"),
                     "command": record.get("command"), "kind": record.get("kind", "command"),
                     "target": record.get("target"), "status": _status(record, h, holder),
                     **_changes(record),
                     **({"note": record.get("note")} if record.get("kind") == "note" else {})})
    # While a rebase is stopped undo and redo refuse: the way out is the rebase's own.
    can_undo = st is None and bool(h.view)
    if as_json:
        emit_json({"operations": rows, "undo": h.view[-1] if can_undo else None,
                   "redo": h.records[h.redo[-1]].get("target")
                   if undo_mod.redo_allowed(h, st is not None) else None,
                   "rebase": st.to_json() if st else None})
        return
    if st is not None:
        click.echo(st.line())
    if not records:
        click.echo("no operations logged yet")
        return
    for row in rows:
        what = row["command"]
        if row["kind"] == "undo":
            what += f"  (undid {row['target']})"
        elif row["kind"] == "redo":
            what += f"  (redid {h.records[row['target']].get('target')})" \
                if row["target"] in h.records else ""
        elif row["kind"] == "restore":
            what += f"  (back to before {row['target']})"
        elif row["kind"] == "note":  # (one cut off as it was written has no text)
            what += f"  ({row['note'] or 'its text was not written: pq was stopped'})"
        click.echo(f"{row['id']:>5}  {row['time']}  {row['status']:<11}  {what}")
        if row["head"]:
            click.echo(f"         HEAD  {row['head']['old']} -> {row['head']['new']}")
        for ref in row["refs"]:
            click.echo(f"         {ref['ref']}  {short(ref['old'])} -> {short(ref['new'])}")
        if row["files"]:
            shown = ", ".join(f"{f['path']} ({f['change']})" for f in row["files"][:3])
            more = f", and {len(row['files']) - 3} more" if len(row["files"]) > 3 else ""
            click.echo(f"         files  {shown}{more}")
    if st is not None and st.phase == "running":
        click.echo(f"a pq rebase is running ({st.holder}); `pq undo` works again once it "
                   "is done")
    elif st is not None:
        back = ("`pq rebase --abort` goes back to before it (`pq rebase --continue` finishes "
                "it)" if "pq rebase --continue" in st.next else
                f"{rebase_status.ways_out(st)} goes back to before it")  # (interrupted)
        click.echo(f"a pq rebase is in progress: {back}; `pq undo` works again after that")
        if undo_mod.redo_allowed(h, True):
            click.echo(f"`pq redo` reverts operation {h.redo[-1]} (it brought this rebase "
                       "back)")
    elif can_undo and rows:
        click.echo(f"`pq undo` restores the state before operation {h.view[-1]}")


def forget_command(paths: list[str]) -> str | None:
    """The command that forgets the recorded resolutions of `paths`."""
    if not paths:
        return None
    return "pq rebase " + " ".join(f"--forget {shlex.quote(p)}" for p in paths)


def _rerere_paths(git: Git, result: undo_mod.UndoResult) -> list[str]:
    """Paths whose resolutions the operations taken back recorded or reused (git rerere
    keeps them): `pq rebase --forget` removes them."""
    return sorted({path for rid in result.taken_back
                   for path in rrnotes.paths_of_operation(git, rid)})


def _rebase_next(git: Git, result: undo_mod.UndoResult) -> list[str]:
    """What ends the rebase an undo or redo brought back (where its worktree is gone, only
    the abort), as `pq status` offers it."""
    st = rebase_status.status(git) if result.rebase else None
    return st.next if st is not None else []


def _render(result: undo_mod.UndoResult, rerere_paths: list[str], as_json: bool,
            rebase_next: list[str]) -> None:
    if as_json:
        emit_json({"operation": result.record_id, "kind": result.kind,
                   "target": result.target_id, "target_command": result.target_command,
                   "refs": [{"ref": r, "old": o, "new": n} for r, o, n in result.refs],
                   "head": {"old": result.head[0], "new": result.head[1]}
                   if result.head else None,
                   "files": result.files, "rebase_in_progress": result.rebase,
                   "rerere_paths": rerere_paths,
                   "rerere_forget": forget_command(rerere_paths)})
        return
    verb = {"undo": "undid", "redo": "redid", "restore": "restored the state before"}
    click.echo(f"{verb[result.kind]} operation {result.target_id} "
               f"(`{result.target_command}`)")
    if result.head:
        click.echo(f"  HEAD  {result.head[0]} -> {result.head[1]}")
    for ref, old, new in result.refs:
        click.echo(f"  {ref}  {short(old)} -> {short(new)}")
    if result.files:
        click.echo(f"  {plural(len(result.files), 'queue file')} restored")
    if result.rebase:
        click.echo("  a pq rebase is in progress again, stopped where it was: " + " or ".join(
            f"`{n}`" for n in rebase_next or ["pq rebase --continue", "pq rebase --abort"]))
    if rerere_paths:
        click.echo(f"  git rerere keeps the resolution(s) of {', '.join(rerere_paths)} "
                   "that it recorded or reused, and will reuse them; "
                   f"`{forget_command(rerere_paths)}` forgets them")
    if result.kind == "redo":
        click.echo("  `pq undo` takes it back again")
    elif result.kind == "undo":
        click.echo(f"  logged as operation {result.record_id}; `pq redo` (or `pq undo --op "
                   f"{result.record_id}`) reverts this")
    else:  # a restore is no undo that redo reverts
        click.echo(f"  logged as operation {result.record_id}; `pq undo --op "
                   f"{result.record_id}` reverts this")


@click.command()
@click.option("--op", "op", type=int, default=None, metavar="ID",
              help="Return to the state just before operation ID (see `pq log`), undoing it "
                   "and everything after it; ID may be an undo, to revert that undo.")
@click.option("--force", is_flag=True,
              help="Restore even if refs or queue files changed outside pq since.")
@click.option("--json", "as_json", is_flag=True, help="Print what was restored as JSON.")
def undo(op: int | None, force: bool, as_json: bool) -> None:
    """Restore the state before the last operation that is still in effect.

    Run it again to go further back. Branches, HEAD, series.yaml and patches/ come back
    exactly; uncommitted changes to other files are kept, and pq refuses rather than
    overwrite them. The undo is itself logged: `pq redo` reverts it.
    """
    with open_repo() as git:
        require_no_git_operation(git)  # git's reset would refuse halfway, mid-merge
        result = _run(git, "undo", op, force)
        paths, then = _rerere_paths(git, result), _rebase_next(git, result)
    _render(result, paths, as_json, then)


@click.command()
@click.option("--force", is_flag=True,
              help="Redo even if refs or queue files changed outside pq since the undo.")
@click.option("--json", "as_json", is_flag=True, help="Print what was restored as JSON.")
def redo(force: bool, as_json: bool) -> None:
    """Revert the most recent `pq undo` (repeatable while only undos happened since)."""
    with open_repo() as git:
        require_no_git_operation(git)  # git's reset would refuse halfway, mid-merge
        result = _run(git, "redo", None, force)
        paths, then = _rerere_paths(git, result), _rebase_next(git, result)
    _render(result, paths, as_json, then)


def _run(git: Git, kind: str, op: int | None, force: bool) -> undo_mod.UndoResult:
    """`undo_mod.run`; refused for a rebase in progress, the ways out `pq status` names (an
    interrupted rebase has no `--continue`)."""
    try:
        return undo_mod.run(git, kind, op, force)
    except undo_mod.RebaseInProgress as exc:
        st = rebase_status.status(git)
        if st is not None and "pq rebase --continue" not in st.next:
            exc.hint = f"end it with {rebase_status.ways_out(st)}{exc.past}"
        raise
