"""`pq rebase`: replay the series onto a new upstream commit; `--continue`, `--skip`,
`--abort`; and `pq status`: what is in progress and what to run next.

Only `register` imports click: a plain `pq rebase` (`plain_args`) runs from `pq.__main__`
without it, through the same `run` and the same error handler.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pq.cli.common import (
    echo,
    emit_json,
    given,
    ignored_hook_hints,
    open_repo,
    plural,
    progress_printer,
    short,
)
from pq.errors import ConfigError, OperationFailed, PqError
from pq.git.repo import Git
from pq.quoting import shown
from pq.rebase.report import PatchReport, RebaseReport, trim

if TYPE_CHECKING:
    import click

    from pq.background import Background
    from pq.drift.scan import DriftReport, RangeScan
    from pq.rebase.status import ConflictFile

RANGE_DIFF_LINES = 12
RERERE_LINES = 6  # of each reused file's resolution, in the text report

REBASE_HELP = """Replay every patch onto UPSTREAM-REF (default: upstream.ref in series.yaml).

    Each patch is replayed with a three-way merge and ends clean, merged, dropped (already
    upstream) or in a conflict. On a conflict pq stops with the conflict in the working
    tree: edit, `git add`, then `pq rebase --continue`; or `pq rebase --skip` to drop the
    patch, or `pq rebase --abort` to go back. On success patches/ and series.yaml are
    re-exported onto the new base and the old tip is kept as refs/pq/orig-head/<branch>.
    `pq status` says where a stopped rebase stands.
    """

# The flags a plain command line may hold (`plain_args`): each sets its keyword of `run`.
_PLAIN_FLAGS = {"--continue": "continue_", "--skip": "skip", "--abort": "abort",
                "--gate": "gate", "--force": "force", "--no-rerere": "no_rerere",
                "--no-verify": "no_verify", "--json": "as_json"}


def register(main: click.Group) -> None:
    import click

    @main.command(help=REBASE_HELP)
    @click.argument("upstream", required=False, metavar="[UPSTREAM-REF]")
    @click.option("--continue", "continue_", is_flag=True,
                  help="Take the staged resolution of the conflicted patch and go on.")
    @click.option("--skip", is_flag=True, help="Drop the conflicted patch and go on.")
    @click.option("--abort", is_flag=True,
                  help="Restore the branch, index, working tree and queue as before the "
                       "rebase.")
    @click.option("--gate", is_flag=True, help="Run the gate after a successful rebase.")
    @click.option("--force", is_flag=True,
                  help="Rebase even onto an ancestor of the series base (an older upstream) "
                       "or onto a ref that already holds the branch's patch commits; with "
                       "--abort, abort even when the branch moved while the rebase was "
                       "stopped.")
    @click.option("--no-rerere", "no_rerere", is_flag=True,
                  help="Neither reuse nor record conflict resolutions (git rerere) in this "
                       "rebase, --continue included.")
    @click.option("--no-verify", "no_verify", is_flag=True,
                  help="Do not run the repository's pre-rebase hook (git runs it too).")
    @click.option("--forget", "forget", callback=given, multiple=True, metavar="PATH",
                  help="Forget the recorded resolutions (git rerere) pq recorded or reused "
                       "for PATH; repeatable.")
    @click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
    def rebase(upstream: str | None, continue_: bool, skip: bool, abort: bool, gate: bool,
               force: bool, no_rerere: bool, no_verify: bool, forget: tuple[str, ...],
               as_json: bool) -> None:
        run(upstream, continue_=continue_, skip=skip, abort=abort, gate=gate, force=force,
            no_rerere=no_rerere, no_verify=no_verify, forget=forget, as_json=as_json)

    @main.command()
    @click.option("--json", "as_json", is_flag=True, help="Print the status as JSON.")
    def status(as_json: bool) -> None:
        """What is in progress: the rebase, the patch it stopped at, the conflicted and
        resolved files, and what to run next; else the series summary."""
        from pq.cli.status import show_status

        show_status(as_json)


def plain_args(args: list[str]) -> dict[str, Any] | None:
    """`run`'s keywords for a plain `pq rebase` command line (`args` after `rebase`): at
    most one UPSTREAM-REF and the flags `_PLAIN_FLAGS` names, each once. Anything else
    (`--forget`, `--help`, `--`, an option click would have to read) is None: click then
    parses it, usage errors included."""
    kwargs: dict[str, Any] = {}
    for arg in args:
        if arg in _PLAIN_FLAGS and _PLAIN_FLAGS[arg] not in kwargs:
            kwargs[_PLAIN_FLAGS[arg]] = True
        elif arg and not arg.startswith("-") and "upstream" not in kwargs:
            kwargs["upstream"] = arg
        else:
            return None
    return kwargs


def run(upstream: str | None = None, *, continue_: bool = False, skip: bool = False,
        abort: bool = False, gate: bool = False, force: bool = False, no_rerere: bool = False,
        no_verify: bool = False, forget: tuple[str, ...] = (), as_json: bool = False) -> None:
    """`pq rebase` with its options."""
    if upstream is not None and not upstream.strip():
        raise ConfigError("pq rebase: the UPSTREAM-REF given is empty (an unset variable?)",
                          hint="name the ref (`pq rebase upstream/main`), or give none to "
                               "rebase onto series.yaml's upstream.ref")
    actions = [name for name, on in (("--continue", continue_), ("--skip", skip),
                                     ("--abort", abort), ("--forget", bool(forget))) if on]
    if len(actions) > 1 or (actions and upstream):
        given = actions + ([upstream] if upstream else [])
        raise ConfigError(f"pq rebase takes one of UPSTREAM-REF, --continue, --skip, --abort, "
                          f"--forget; got {' and '.join(given)}",
                          hint="run them one at a time")
    if no_rerere and actions:
        raise ConfigError(f"--no-rerere goes with starting a rebase, not with {actions[0]}",
                          hint="the rebase started with --no-rerere keeps it until it ends")
    if no_verify and actions:
        raise ConfigError(f"--no-verify goes with starting a rebase, not with {actions[0]}",
                          hint="the pre-rebase hook runs only as a rebase starts")
    if forget:
        _forget(list(forget), as_json)
        return
    progress = None if as_json else progress_printer("rebasing")
    with open_repo() as git, _DriftAhead(git) as ahead:
        if abort:
            from pq.rebase.abort import abort as abort_rebase

            report = abort_rebase(git, force=force)
        else:
            from pq.rebase import engine  # the replay's whole chain, which an abort skips

            report = (engine.resume(git, "continue" if continue_ else "skip", progress,
                                    crossing=ahead.start) if continue_ or skip else
                      engine.start(git, upstream, gate=gate, progress=progress, force=force,
                                   rerere=not no_rerere, crossing=ahead.start,
                                   verify=not no_verify))
        conflicted: list[ConflictFile] = []
        if report.status == "conflict":
            from pq.rebase.status import conflicts

            conflicted = conflicts(git, report.onto)
        drift = _drift(git, report, ahead)
        for line in ignored_hook_hints(report.ignored_hooks):  # on stderr, as git gives it
            echo(line, err=True)
        if not as_json:
            render(report)  # the rebase's outcome first, whatever the gate does
            if drift is not None:
                from pq.cli.render_drift import summary

                echo("\n".join([drift] if isinstance(drift, str) else summary(drift)))
        gate_result = None
        if report.status == "done" and (gate or report.gate):
            gate_result = _run_gate(git, as_json)
            if not as_json:
                echo(gate_result["summary"])
    if as_json:
        data = to_json(report)
        data["gate"] = gate_result
        data["drift"] = ({"error": drift} if isinstance(drift, str)
                         else drift.to_json() if drift is not None else None)
        emit_json(data)
    if report.status == "conflict":
        raise _conflict_error(report, conflicted, git.root)
    if gate_result is not None and gate_result["exit_code"] != 0:
        sys.exit(int(gate_result["exit_code"]))


class _DriftAhead:
    """The drift scan of the range a rebase crosses, started in a thread when the replay
    is done and the landing begins (`crossing`): its `git log -p` of upstream's commits
    and its reading of them overlap the landing's checkout, which runs in git."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.scan: Background[RangeScan] | None = None

    def __enter__(self) -> _DriftAhead:
        return self

    def __exit__(self, *exc: object) -> None:
        # Whatever ended the command (a landing git refused, Ctrl-C), the scan's git
        # process is not left to die of a broken pipe half way (git 2.39 then leaves an
        # empty tmp_objdir-remerge-diff-* folder in .git/objects).
        if self.scan is not None:
            self.scan.wait()
        self.git.working_beside = False

    def start(self, old: str, new: str) -> None:
        from pq.drift.ahead import scan_ahead  # the scan's own modules load in its thread

        self.git.working_beside = True  # the landing's checkout leaves the scan a core
        self.scan = scan_ahead(self.git, old, new)


def _drift(git: Git, report: RebaseReport, ahead: _DriftAhead) -> DriftReport | str | None:
    """The drift of the upstream range a completed rebase crossed (after the patch
    outcomes); a line saying why when it cannot be computed; None for no range."""
    if report.status != "done" or report.old_base == report.onto or not report.upstream_count:
        return None  # (a forced move back to an older upstream crosses no commit)
    from pq.drift import index, scan
    from pq.queue import files as queuefiles

    try:
        if ahead.scan is not None:  # started on this very range (`crossing`)
            scanned = ahead.scan.result()
        else:
            scanned = scan.scan_range(git, report.old_base, report.onto,
                                      index.load(measure=False))
        return scan.report(git, scanned, report.queue or queuefiles.read_worktree(git))
    except PqError as exc:
        return f"drift: not computed: {exc.render()}"


def _forget(paths: list[str], as_json: bool) -> None:
    from pq.quoting import from_top
    from pq.rebase import rrnotes

    with open_repo() as git:  # paths as typed here, as `git rerere forget` reads them
        forgotten = rrnotes.forget(git, from_top(git.root, paths))
    if as_json:
        emit_json({"forgotten": [{"path": p, "ids": ids} for p, ids in forgotten.items()]})
        return
    for path, ids in forgotten.items():
        echo(f"forgot {len(ids)} recorded resolution(s) of {path}: {', '.join(ids)}")


def _run_gate(git: Git, as_json: bool) -> dict[str, Any]:
    from pq.gate.api import run_gate  # the gate is optional: loaded only when asked for
    from pq.git.hold import terminate_as_interrupt

    try:
        with terminate_as_interrupt():  # a SIGTERM stops the stage as `pq gate` does
            result = run_gate(git, progress=None if as_json
                              else progress_printer("gate", until_done=True))
    except PqError as exc:
        return {"exit_code": exc.exit_code, "summary": f"gate: error: {exc.render()}"}
    from pq.cli.render_gate import report_text

    return {"exit_code": result.exit_code, "summary": report_text(result)}


def _conflict_error(report: RebaseReport, conflicted: list[ConflictFile], root: Path
                    ) -> OperationFailed:
    from pq.rebase import status as rebase_status

    assert report.conflict is not None
    p = report.conflict
    paths = report.conflict_paths
    files = [c for c in conflicted if c.path in paths] or [
        rebase_status.ConflictFile(path, "UU", *rebase_status.KINDS["UU"]) for path in paths]
    what = f"conflicts in {', '.join(shown(path) for path in paths)}" if paths else \
        "stops at a conflict that leaves no file unmerged"
    if report.conflict_notes:
        what += f"{'; git also reports' if paths else ', as git reports'}: " + \
            " ".join(report.conflict_notes)
    first = (f"{rebase_status.resolve_hint(files, root)}, " if paths else
             "check the merge in the working tree (`git status`, `git diff --cached`) and "
             "`git add` what you change, then ")
    return OperationFailed(
        f"patches/{p.name} (layer {p.layer}) {what}",
        hint=f"{first}`pq rebase --continue`; or "
             "`pq rebase --skip` to drop this patch; or `pq rebase --abort` to go back")


def render(report: RebaseReport) -> None:
    if report.status == "aborted":
        echo(f"rebase aborted: {report.branch} is back at {short(report.orig_head)}, " + (
            "with its index, working tree, series.yaml and patches/" if not report.gone_worktree
            else f"where the worktree it ran in ({report.gone_worktree}, gone) left it"))
        return
    if report.status == "up-to-date":
        echo(f"already up to date: {report.branch} is on {report.upstream_ref} at "
             f"{short(report.onto)} ({len(report.patches)} patches); nothing changed")
        return
    echo(f"upstream {report.upstream_ref}: {short(report.old_base)}..{short(report.onto)}"
         f" ({report.upstream_count} commit{'s' if report.upstream_count != 1 else ''})")
    width = max((len(p.name) for p in report.patches), default=10)
    for p in report.patches:
        echo(f"  {p.outcome:<8}  {p.name:<{width}}{_note(p, report.branch)}".rstrip())
        for r in p.rerere_files:
            echo(f"      recorded resolution of {shown(r.path)} (rr-cache {r.id[:12]}):")
            # Short: each hunk's header and what it resolved to (--json has it all).
            for line in trim([h for h in r.hunks if h.startswith(("@@", "+"))],
                             RERERE_LINES):
                echo(f"        {line}")
            if r.also:
                echo(f"        (recorded with changes to {', '.join(map(shown, r.also))}, "
                     "which a recorded resolution does not replay: check the patch)")
    changed = [p for p in report.patches if p.changed]
    if changed:
        echo("range-diff (patch files whose content changed):")
        for p in changed:
            echo(f"  {p.name}")
            for line in trim(p.range_diff, RANGE_DIFF_LINES):
                echo(f"    {line}")
    if report.status == "done":
        kept = sum(1 for p in report.patches if p.commit)
        echo(f"rebased {report.branch} onto {short(report.onto)}: {kept} of "
             f"{len(report.patches)} patches kept, {plural(len(changed), 'patch file')} "
             "changed; "
             f"the previous tip is kept as refs/pq/orig-head/{report.branch}")
    for note in report.notes:
        echo(f"warning: {note}", err=True)


def _note(p: PatchReport, branch: str) -> str:
    if p.outcome == "skipped" and p.source:
        return (f"  (skipped: its commit {short(p.source)} stays reachable from "
                f"refs/pq/orig-head/{branch}, its series.yaml entry in `git show "
                f"refs/pq/orig-head/{branch}:series.yaml`; `git cherry-pick {short(p.source)}` "
                "then `pq export --commit` brings it back, `pq undo` the whole old series)")
    if p.outcome == "dropped":
        if p.upstream_commit:
            return f"  (already upstream: {short(p.upstream_commit)} {p.upstream_subject})"
        # No upstream commit carries it: the merge left nothing, or a `--continue`
        # resolution did (the user's, who may have thrown the patch away).
        return ("  (no change left on the new base: its merge, or the resolution given to "
                "`--continue`, left nothing; `pq undo` brings the patch back)")
    notes = []
    if p.applied_in and p.reverted_in:
        notes.append(f"upstream applied this in {short(p.applied_in)} and reverted it in "
                     f"{short(p.reverted_in)}; kept")
    if p.rerere:
        notes.append("resolved from a recorded resolution")
    if p.outcome == "conflict" and p.commit:
        notes.append("resolved by hand")
    return f"  ({'; '.join(notes)})" if notes else ""


def to_json(report: RebaseReport) -> dict[str, Any]:
    conflict = None
    if report.conflict is not None:
        conflict = {"patch": report.conflict.name, "file": f"patches/{report.conflict.name}",
                    "layer": report.conflict.layer, "paths": report.conflict_paths,
                    "notes": report.conflict_notes,
                    "next": ["pq rebase --continue", "pq rebase --skip", "pq rebase --abort"]}
    return {
        "status": report.status,
        "branch": report.branch,
        "upstream": {"ref": report.upstream_ref, "old_base": report.old_base,
                     "new_base": report.onto, "commits": report.upstream_count},
        "orig_head": report.orig_head,
        "head": report.head,
        "patches": [{
            "name": p.name,
            "layer": p.layer,
            "outcome": p.outcome,
            "rerere": p.rerere,
            "rerere_files": [r.to_dict() for r in p.rerere_files],
            "upstream_commit": p.upstream_commit,
            "upstream_reverted": None if not (p.applied_in and p.reverted_in) else {
                "applied": p.applied_in, "applied_subject": p.subjects.get(p.applied_in),
                "reverted": p.reverted_in, "reverted_subject": p.subjects.get(p.reverted_in)},
            "commit": p.commit,
            "source": p.source,
            "changed": p.changed,
            "range_diff": p.range_diff,
        } for p in report.patches],
        "conflict": conflict,
        "notes": report.notes,
        "ignored_hooks": report.ignored_hooks,
    }
