"""`pq status`: what is in progress (a stopped or running pq rebase, or an operation of
git's own), else the series summary line."""

from __future__ import annotations

from pq.cli.common import base_label, echo, emit_json, open_repo, plural
from pq.cli.failure import failure_of
from pq.errors import PqError
from pq.git.failures import lock_reason, lock_step
from pq.model.series import SERIES_FILE
from pq.oplog import undo as undo_mod
from pq.queue import files as queuefiles
from pq.quoting import shell_args, shown
from pq.rebase import status as rebase_status


def show_status(as_json: bool) -> None:
    """`pq status`."""
    with open_repo() as git:
        st = rebase_status.status(git)
        summary = unread = cut = None
        by_git = git.operation_in_progress()  # (with a stopped rebase: it blocks that too)
        # A lock git (or a git killed with pq) left: every command that writes fails on it.
        lock = str(git.git_dir / "index.lock") if (git.git_dir / "index.lock").exists() \
            else None
        if st is None:
            try:
                cut = undo_mod.stopped_half_way(git)
            except PqError:  # a damaged log: `pq log` says so
                cut = None
            try:
                series = queuefiles.read_worktree(git).series
                summary = (f"{base_label(series.base, series.upstream_ref)}: "
                           f"{plural(len(series.patches), 'patch', 'patches')}")
            except (PqError, PermissionError) as exc:  # said, not the command's failure
                unread = failure_of(exc)
    if as_json:
        emit_json({"rebase": st.to_json() if st else None, "series": summary,
                   "series_error": unread.data()["error"] if unread else None,
                   "git_operation": by_git[0] if by_git else None,
                   "interrupted": {"operation": cut[0], "command": cut[1]} if cut else None,
                   "index_lock": lock})
        return
    if lock is not None:
        echo(f"note: {lock_reason(lock)}; {lock_step(lock)}")
    if st is None:
        echo(f"no pq rebase in progress; git has a {by_git[0]} in progress ({by_git[1]})"
             if by_git else "no rebase in progress")
        if cut is not None:  # before the series' state, which may be the cut one's half-way
            echo(f"operation {cut[0]} (`{cut[1]}`) stopped half-way: `pq undo` puts back the "
                 "state before it")
        echo(summary or f"{SERIES_FILE} does not read: {unread.message if unread else ''}")
        if by_git:
            echo("next: finish or abort it with git (`git status` says how)")
        return
    echo(st.line())
    for c in st.conflicted:
        echo(f"  conflicted  {shown(c.path)}  ({c.kind}: {c.fix})")
    for path in st.resolved:
        echo(f"  resolved    {shown(path)}")
    for note in st.notes:
        echo(f"  git reports {note}")
    if st.blocked:
        echo(f"next: {st.blocked}")
    elif st.phase == "conflict":
        first = "resolve the conflicted files, then " if st.conflicted else ""
        echo(f"next: {first}`pq rebase --continue`; or `pq rebase --skip` drops this "
             "patch; or `pq rebase --abort` goes back to before the rebase")
    elif st.landed:
        echo("next: `pq rebase --continue` removes the state; or `pq rebase --abort` "
             "goes back to before the rebase" if "pq rebase --abort" in st.next else
             "next: `pq rebase --continue` removes the state, keeping what was committed "
             "on the branch since")
    elif st.phase == "stopped":
        echo("next: `pq rebase --continue` (where git named files in the way, move them "
             "aside first; nothing resolved is lost); or `pq rebase --abort`")
    elif st.phase == "running":
        echo("next: wait for it to finish; `pq status` says where it stands then")
    elif st.phase == "elsewhere":
        gone = st.next == ["pq rebase --abort"]
        echo(f"next: `pq rebase --abort` ends it here: its worktree {st.worktree} is gone"
             if gone else f"next: `cd {shell_args([st.worktree or ''])}`: the rebase's "
             "index and files are there")
    else:
        echo("next: `pq rebase --abort` restores the branch; then run the rebase again")

