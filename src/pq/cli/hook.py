"""`pq hook install|uninstall|run` and `pq check`: the pre-push hook and its checks by hand.

The commands parse their arguments, call `pq.push` and render what it returns
(`pq.cli.render_hook`); the hook's own output goes to stderr so that git shows it next to
the push.
"""

from __future__ import annotations

import os
import sys

import click

from pq.cli.common import emit_json, given, open_repo
from pq.cli.render_hook import check_lines, hook_lines, skip_warnings
from pq.push import hook as hook_mod
from pq.push import install as install_mod
from pq.push.refs import SKIP_ENV, parse_skip


def register(main: click.Group) -> None:
    main.add_command(hook)
    main.add_command(check)


@click.group()
def hook() -> None:
    """Install, remove or run the pre-push hook that keeps pushes true to the series."""


@hook.command()
@click.option("--force", is_flag=True, help="Replace a pre-push hook pq did not write.")
@click.option("--chain", is_flag=True,
              help="Keep an existing pre-push hook (as pre-push.pre-pq) and run it first.")
def install(force: bool, chain: bool) -> None:
    """Write the pre-push hook (where core.hooksPath says, else .git/hooks)."""
    with open_repo() as git:
        result = install_mod.install(git, force=force, chain=chain, python=sys.executable)
    verb = {"installed": "installed", "updated": "updated",
            "replaced": "installed (replacing a hook pq did not write)"}[result.action]
    click.echo(f"pq: pre-push hook {verb} at {result.path}")
    if result.set_aside is not None:
        click.echo(f"pq: {result.set_aside.name}, which pq did not write, is kept as "
                   f"{result.path.name}{install_mod.REPLACED_SUFFIX} (see `pq log`)")
    if result.older is not None:
        click.echo(f"pq: the hook set aside there before is kept as {result.older.name}")
    if result.chained:
        click.echo(f"pq: {result.chained.name} runs first; its failure refuses the push")
    if result.in_worktree:
        rel = result.in_worktree
        click.echo(f"pq: note: core.hooksPath is relative, so the hook is in this working "
                   f"tree ({rel}): another worktree of this repository looks in its own "
                   f"folder; run `pq hook install` there too")


@hook.command()
def uninstall() -> None:
    """Remove pq's pre-push hook, restoring a hook that --chain kept."""
    with open_repo() as git:
        result = install_mod.uninstall(git)
    if result.foreign:
        click.echo(f"pq: {result.path} was not written by pq; left as it is")
    elif not result.removed:
        click.echo(f"pq: no pre-push hook at {result.path}; nothing to do")
    else:
        click.echo(f"pq: removed the pre-push hook at {result.path}")
        if result.restored:
            click.echo(f"pq: restored the previous hook from {result.restored_from}")


@hook.command("run")
@click.argument("remote", required=False)
@click.argument("url", required=False)
@click.option("--chain", "chain", callback=given, default=None, metavar="PATH",
              help="A hook to run first with the same arguments and input.")
def run(remote: str | None, url: str | None, chain: str | None) -> None:
    """What the pre-push hook runs: check each pushed ref that pq manages.

    With REMOTE and URL (as git calls a pre-push hook) the refs come from standard input;
    without them (the pre-commit framework) from PRE_COMMIT_TO_REF and friends.
    Exit 1 refuses the push.
    """
    if (remote is None) != (url is None):
        raise click.UsageError("give both REMOTE and URL (as git does), or neither")
    stdin = sys.stdin.buffer.read() if remote is not None else b""
    result = hook_mod.pre_push(remote, url, stdin, dict(os.environ), chain)
    for line in hook_lines(result):
        click.echo(line, err=True)
    sys.exit(result.exit_code)


@click.command()
@click.argument("rev", default="HEAD")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--no-cache", is_flag=True,
              help="Run every check in full, even if REV passed before (no cache read).")
def check(rev: str, as_json: bool, no_cache: bool) -> None:
    """Run the pre-push checks on REV (default HEAD), as committed."""
    from pq.push import registry

    skip, unknown = parse_skip(os.environ.get(SKIP_ENV))
    with open_repo(bare=True) as git:  # commits only, as the hook in a bare mirror
        report = hook_mod.check_rev(git, rev, skip, use_cache=not no_cache)
    for line in skip_warnings(skip, unknown, rev):
        click.echo(line, err=True)
    if as_json:
        unreadable, mismatches, policy, stopped, gate = registry.split_failures(
            report.failures)
        summaries = {c.name: c.summary for c in registry.all_checks()}
        emit_json({
            "rev": rev,
            "commit": report.commit,
            "ok": report.ok,
            "cached": report.state == "cached",
            "skipped": sorted(skip),
            "checks": [{"name": n, "status": s, "summary": summaries.get(n, "")}
                       for n, s in report.statuses.items()],
            "failures": [f.to_json() for f in report.failures],
            "consistent": not (unreadable or mismatches),
            "policy_findings": len(policy),
            "audit_unreadable": len(stopped),
            "gate_missing": len(gate),
            "notices": report.notices,
        })
    else:
        for n in report.notices:
            click.echo(f"notice: {n}", err=True)
        for line in check_lines(rev, report):
            click.echo(line)
    if not report.ok:
        sys.exit(1)
