"""`pq gate`: run the series' build/test stages on the branch tip, or show the recorded result."""

from __future__ import annotations

import os
from pathlib import Path

import click

from pq.atomic import write_atomic
from pq.cli.common import emit_json, given, open_repo, progress_printer
from pq.cli.failure import Failure
from pq.cli.render_gate import report_text, status_text
from pq.errors import ConfigError, PqError
from pq.gate import api, junit
from pq.gate.result import GATE_ERROR
from pq.git.hold import terminate_as_interrupt


def register(main: click.Group) -> None:
    main.add_command(gate)


@click.command()
@click.option("--stage", "stages", callback=given, multiple=True, metavar="NAME",
              help="Run only this stage (repeatable); the others are left out.")
@click.option("--force", is_flag=True,
              help="Run even if a passing record exists for this tree and environment.")
@click.option("--python", "python", callback=given, default=None, metavar="PATH",
              help="The interpreter for the stages (default: gate.python, else python3).")
@click.option("--status", "show_status", is_flag=True,
              help="Show the recorded result for the tip instead of running.")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--junit", "junit_path", callback=given, default=None, metavar="PATH",
              type=click.Path(dir_okay=False, path_type=Path),
              help="Also write a JUnit XML report to PATH.")
@click.pass_context
def gate(ctx: click.Context, stages: tuple[str, ...], force: bool, python: str | None,
         show_status: bool, as_json: bool, junit_path: Path | None) -> None:
    """Build and test the branch tip in a throwaway worktree, stage by stage.

    The stages come from the `gate` section of the series.yaml committed at HEAD. The
    result is recorded as a git note in refs/notes/pq-gate; a passing record for the same
    tree and environment is reused unless --force. Exit 0 passed (also with GPU stages
    still owed), 1 a stage failed or timed out, 2 a configuration problem.
    """
    if show_status:
        if stages or force or python or junit_path:
            raise click.UsageError("--status takes no --stage, --force, --python or --junit")
        with open_repo() as git:
            status = api.read_status(git)
        if as_json:
            emit_json(status.to_json())
        else:
            click.echo(status_text(status))
        ctx.exit(status.exit_code)
    if python and "/" in python:
        python = os.path.abspath(os.path.expanduser(python))  # relative to where pq runs
    try:
        if junit_path is not None:
            check_writable(junit_path, "--junit")
        with open_repo() as git, terminate_as_interrupt():
            report = api.run_gate(git, stages=list(stages) or None, force=force,
                                  progress=progress_printer("gate", until_done=True), python=python)
    except PqError as exc:  # no repository to gate (outside one, say): the same report shape
        if not as_json:
            raise
        report = api.GateReport(None, None, GATE_ERROR, error=exc)
    if report.error is not None and not as_json:
        raise report.error
    error, code = report.error, report.exit_code
    if junit_path is not None and report.error is None:
        try:
            write_atomic(junit_path.absolute(), junit.render(
                report.stages, tip=report.tip or "", tree=report.tree or "",
                status=report.status, time=report.time or "",
                fingerprint=report.fingerprint or {}, cached=report.cached))
        except OSError as exc:  # the report is still shown: the stages ran, and are recorded
            error = ConfigError(f"--junit {junit_path}: cannot write it: {exc.strerror}",
                                hint="the gate's result is recorded; `pq gate --status` "
                                     "shows it")
            code = error.exit_code
    if as_json:
        data = report.to_json()
        if error is not None:  # the error shape every --json command uses
            data["error"] = Failure("", code, error).data()["error"]
            # What the process exits with: a report that ran (its stages are kept) but
            # could not be written where asked is an error, not the stages' pass.
            data.update(status=GATE_ERROR, exit_code=code, summary=error.render())
        emit_json(data)
    else:
        click.echo(report_text(report))
        if error is not None:
            raise error
    ctx.exit(code)


def check_writable(path: Path, option: str) -> None:
    """Refuse, before any stage runs, a report path pq could not write at the end (its
    missing folders are created then; the nearest existing one must be writable)."""
    where = path.absolute()
    if where.is_dir():
        raise ConfigError(f"{option} {path}: is a folder", hint="name a file to write")
    folder = where.parent
    while not folder.exists() and folder != folder.parent:
        folder = folder.parent
    if not folder.is_dir():
        raise ConfigError(f"{option} {path}: {folder} is not a folder",
                          hint="name a file in a folder")
    if not os.access(folder, os.W_OK | os.X_OK):
        raise ConfigError(f"{option} {path}: cannot write in {folder}",
                          hint="name a file in a folder you can write to")
