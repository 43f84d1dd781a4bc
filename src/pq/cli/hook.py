"""`pq hook install|uninstall|run` and `pq check`: the pre-push hook and its checks by hand.

The commands parse their arguments, call `pq.push.hook` and render what it returns; the hook's
own output goes to stderr so that git shows it next to the push.
"""

from __future__ import annotations

import os
import sys

import click

from pq.cli.common import emit_json, open_repo, short
from pq.push import hook as hook_mod


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
        result = hook_mod.install(git, force=force, chain=chain, python=sys.executable)
    verb = {"installed": "installed", "updated": "updated",
            "replaced": "installed (replacing a hook pq did not write)"}[result.action]
    click.echo(f"pq: pre-push hook {verb} at {result.path}")
    if result.set_aside is not None:
        click.echo(f"pq: {result.set_aside.name}, which pq did not write, is kept as "
                   f"{result.path.name}{hook_mod.REPLACED_SUFFIX} (see `pq log`)")
    if result.chained:
        click.echo(f"pq: {result.chained.name} runs first; its failure refuses the push")


@hook.command()
def uninstall() -> None:
    """Remove pq's pre-push hook, restoring a hook that --chain kept."""
    with open_repo() as git:
        result = hook_mod.uninstall(git)
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
@click.option("--chain", "chain", default=None, metavar="PATH",
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
    for line in hook_mod.render(result):
        click.echo(line, err=True)
    sys.exit(hook_mod.exit_code(result))


@click.command()
@click.argument("rev", default="HEAD")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
@click.option("--no-cache", is_flag=True, help="Run every check even if REV passed before.")
def check(rev: str, as_json: bool, no_cache: bool) -> None:
    """Run the pre-push checks on REV (default HEAD), as committed."""
    from pq.push import checks

    skip, unknown = hook_mod.parse_skip(os.environ.get(hook_mod.SKIP_ENV))
    with open_repo() as git:
        report = hook_mod.check_rev(git, rev, skip, use_cache=not no_cache)
    for line in hook_mod.skip_warnings(skip, unknown, rev):
        click.echo(line, err=True)
    consistency, policy = hook_mod.split_failures(report.failures)
    if as_json:
        summaries = {c.name: c.summary for c in checks.all_checks()}
        emit_json({
            "rev": rev,
            "commit": report.commit,
            "ok": report.ok,
            "cached": report.state == "cached",
            "skipped": sorted(skip),
            "checks": [{"name": n, "status": s, "summary": summaries.get(n, "")}
                       for n, s in report.statuses.items()],
            "failures": [f.to_json() for f in report.failures],
            "consistent": not consistency,
            "policy_findings": len(policy),
            "notices": report.notices,
        })
    else:
        for n in report.notices:
            click.echo(f"notice: {n}", err=True)
        click.echo(f"{rev} {short(report.commit)}:")
        for name, status in report.statuses.items():
            click.echo(f"  {status:<11} {name}")
        for title, group in (("the branch does not match its series", consistency),
                             ("policy findings of the workaround audit", policy)):
            if group:
                click.echo(f"{title}:")
            for f in group:
                click.echo(f"  [{f.check}] {f.message}")
                click.echo(f"    fix: {f.fix_command}")
        if policy:
            click.echo(hook_mod.ACK_HINT)
        if not consistency and policy:
            click.echo("the branch matches its series; the push is refused for the policy "
                       "findings above")
        if report.ok:
            click.echo(hook_mod.consistent_summary(
                report.statuses, "cached" if report.state == "cached" else None))
    if not report.ok:
        sys.exit(1)
