"""`pq drift OLD..NEW`: what an upstream range changes that no conflict shows; and
`pq fix-renames`: old Paddle spellings rewritten as one new patch."""

from __future__ import annotations

import sys

import click

from pq.cli.common import emit_json, given, note_printer, open_repo, plural, short
from pq.errors import EXIT_FINDINGS, ConfigError


def register(main: click.Group) -> None:
    main.add_command(drift)
    main.add_command(fix_renames)


@click.command()
@click.argument("range_", metavar="OLD..NEW")
@click.option("--paddle-python", callback=given, default=None, metavar="PYTHON",
              help="The interpreter whose Paddle's compat surface is asked (default: the "
                   "one pq's toolchain probe finds).")
@click.option("--json", "as_json", is_flag=True, help="Print the report as JSON.")
def drift(range_: str, paddle_python: str | None, as_json: bool) -> None:
    """Report what upstream OLD..NEW changes that no conflict shows: new framework API in
    files the fork builds or imports (with its compat status, what breaks first), stale
    copies, files touched by upstream and by a patch, old Paddle spellings in patches.

    Exit 0 when nothing is risky, 1 when something is reported, 2 on bad input.
    """
    from pq.drift import index, scan
    from pq.model.series import SERIES_FILE
    from pq.queue import files as queuefiles

    old, sep, new = range_.partition("..")
    if not sep or not old or not new or new.startswith("."):
        raise ConfigError(f"expected OLD..NEW (two commits of upstream), got {range_!r}",
                          hint="e.g. `pq drift v1.2..upstream/main`")
    with open_repo() as git:
        old_id = git.resolve(old, "upstream revision")
        new_id = git.resolve(new, "upstream revision")
        if old_id != new_id and git.is_ancestor(new_id, old_id):
            raise ConfigError(f"{new} is older than {old}: {range_} holds no commit",
                              hint=f"the range reads OLD..NEW: `pq drift {new}..{old}`")
        queue = queuefiles.read_worktree(git) if (git.root / SERIES_FILE).is_file() \
            else None
        report = scan.drift(git, old_id, new_id, queue, index.load(paddle_python,
                                                                   progress=note_printer()))
    if as_json:
        emit_json(report.to_json())
    else:
        from pq.cli.render_drift import full

        for line in full(report):
            click.echo(line)
    if report.risky:
        sys.exit(EXIT_FINDINGS)


@click.command("fix-renames")
@click.option("--json", "as_json", is_flag=True, help="Print the result as JSON.")
def fix_renames(as_json: bool) -> None:
    """Rewrite old Paddle spellings the patches still carry (paddle.compat.enable_torch_proxy
    -> paddle.enable_compat, ...) as one new patch at the end of the series (`pq undo`
    takes it back)."""
    from pq.drift.fixrenames import fix_renames as fix
    from pq.rebase import status as rebase_status

    with open_repo() as git:
        rebase_status.refuse_while_rebasing(git, "pq fix-renames")
        result = fix(git)
    if as_json:
        emit_json({"patch": result.patch, "files": list(result.files),
                   "hits": [h.to_json() for h in result.hits], "tip": result.tip,
                   "branch": result.branch or None})
        return
    if result.patch is None:
        click.echo("nothing to rewrite: no patch spells an old Paddle name")
        return
    click.echo(f"new patch patches/{result.patch}: {plural(len(result.hits), 'old spelling')} "
               f"in {', '.join(result.files)}")
    click.echo(f"  {result.branch} is now at {short(result.tip)}; `pq undo` takes it back")
