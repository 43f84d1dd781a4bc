"""`pq audit` commands (registered on the main group): `pq audit workarounds`.

Parse the options, read the queue (working tree or a commit), call pq.audit.api, render.
Exit 0: clean; 1: findings (with --strict also removable workarounds); 2: bad configuration.
"""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from pq.cli.common import emit_json, given, open_repo, progress_printer
from pq.errors import ConfigError

if TYPE_CHECKING:
    from pq.git.repo import Git
    from pq.queue.files import Queue

DEFAULT_MRE_TIMEOUT = 300.0  # pq.audit.api.DEFAULT_MRE_TIMEOUT, without importing it here


def register(main: click.Group) -> None:
    main.add_command(audit)


@click.group()
def audit() -> None:
    """Check the queue against pq's policies."""


def _read_queue(git: Git, rev: str | None) -> tuple[Queue, str | None]:
    from pq.queue import files as queuefiles

    if rev is None:
        return queuefiles.read_worktree(git), None
    commit = git.resolve(rev, "revision")
    queue = queuefiles.read_tree(git, commit)
    if queue is None:
        raise ConfigError(f"{rev} has no series.yaml", hint="name a commit that carries the queue")
    return queue, commit


@audit.command("workarounds")
@click.option("--rev", callback=given, metavar="REV", default=None,
              help="Audit the queue committed in REV (reproducers from REV too), not the "
                   "working tree.")
@click.option("--upstream", "upstream", callback=given, metavar="REF", default=None,
              help="Check `upstream-contains` against REF instead of series.yaml's upstream.")
@click.option("--paddle-version", callback=given, metavar="X.Y.Z", default=None,
              help="Check `paddle >=` against this version instead of the installed one.")
@click.option("--run-mre", is_flag=True,
              help="Run the reproducers to evaluate `mre-passes` (each in a temporary folder).")
@click.option("--python", "python", callback=given, metavar="PATH", default=None,
              help="Interpreter for the reproducers ($PYTHON) and the installed Paddle "
                   "[default: the one running pq].")
@click.option("--mre-timeout", type=click.FloatRange(min=1), default=DEFAULT_MRE_TIMEOUT,
              callback=lambda _ctx, _param, seconds: _a_number(seconds),
              show_default=True, metavar="SECONDS", help="Time limit for each reproducer.")
@click.option("--strict", is_flag=True,
              help="Workarounds whose removal condition is met are findings too.")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
@click.option("--markdown", "as_markdown", is_flag=True,
              help="Print the report as Markdown (for a pull request).")
@click.option("--issue-body", "issue_patch", callback=given, metavar="PATCH", default=None,
              help="Print a ready Paddle issue for PATCH's workaround instead of the audit.")
def workarounds(rev: str | None, upstream: str | None, paddle_version: str | None,
                run_mre: bool, python: str | None, mre_timeout: float, strict: bool,
                as_json: bool, as_markdown: bool, issue_patch: str | None) -> None:
    """Which workarounds are still needed, and which break the workaround policy.

    For each patch with a `workaround` block: its kind, what it covers, each removal
    condition and its state, issue, reproducer and findings. Exit 0 when clean, 1 with
    findings, 2 when series.yaml is malformed.
    """
    from pq.audit import api, report  # here, so that other commands start faster
    from pq.cli import render_audit

    if as_json and as_markdown:
        raise click.UsageError("choose one of --json and --markdown")
    if issue_patch is not None and (as_json or as_markdown):
        raise click.UsageError("--issue-body prints the issue's own text (Markdown); drop "
                               f"{'--json' if as_json else '--markdown'}")
    if paddle_version is not None and not api.valid_version(paddle_version):
        raise click.BadParameter(f"{paddle_version!r} is not a version such as 3.3.1",
                                 param_hint="--paddle-version")
    if python is not None and not Path(python).exists() and not _on_path(python):
        raise click.BadParameter(f"{python!r} not found", param_hint="--python")
    with open_repo() as git:
        queue, commit = _read_queue(git, rev)
        if issue_patch is not None:
            click.echo(api.issue_body(git, queue, issue_patch, run_mre=run_mre, python=python,
                                      rev=commit, mre_timeout=mre_timeout), nl=False)
            return
        result = api.run_audit(git, queue, upstream_rev=upstream,
                               paddle_version=paddle_version, run_mre=run_mre, strict=strict,
                               python=python, rev=commit, mre_timeout=mre_timeout,
                               progress=progress_printer("running reproducers"))
    if as_json:
        emit_json(report.data(result))
    elif as_markdown:
        click.echo(render_audit.markdown(result), nl=False)
    else:
        click.echo(render_audit.table(result))
    sys.exit(result.exit_code)


def _a_number(seconds: float) -> float:
    if seconds != seconds:  # NaN passes every range check
        raise click.BadParameter("nan is not a number of seconds")
    return seconds


def _on_path(name: str) -> bool:
    import shutil

    return shutil.which(name) is not None
