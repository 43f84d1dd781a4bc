"""`pq lint`: check each patch against the minimal-modification rules.

Parse the options, read the queue, call pq.lint.api, render in the findings format of
`pq audit` (pq.cli.render_audit). Exit 0: clean; 1: findings; 2: bad configuration.
"""

from __future__ import annotations

import sys

import click

from pq.cli.common import emit_json, given, open_repo, plural


def register(main: click.Group) -> None:
    main.add_command(lint)


@click.command()
@click.option("--patch", "patch", callback=given, metavar="NAME", default=None,
              help="Lint only this patch (a file name in patches/).")
@click.option("--json", "as_json", is_flag=True, help="Print the findings as JSON.")
def lint(patch: str | None, as_json: bool) -> None:
    """Check each patch against the minimal-modification rules (LN001..LN013, WA010).

    Layers, formatting-only hunks, moved upstream files, public API changes, kernel
    edits, mass translation, size, debris, deprecated spellings and lazy torch imports.
    Exit 0 when clean, 1 with findings, 2 when series.yaml is malformed.
    """
    from pq.cli import render_audit
    from pq.lint import api, report
    from pq.queue import files as queuefiles

    with open_repo() as git:
        result = api.run_lint(git, queuefiles.read_worktree(git), patch=patch)
    if as_json:
        emit_json(report.data(result))
    else:
        lines = [f"linted {plural(len(result.patches), 'patch', 'patches')} "
                 f"(base {result.base[:12]}; max_patch_lines "
                 f"{result.settings.max_patch_lines})"]
        if not result.base_present:
            lines.append(render_audit.base_note(result.base, "upstream's files are not "
                                                "compared (moved files, public API)"))
        lines.append("")
        lines += render_audit.finding_lines(result.findings)
        lines += render_audit.ack_lines(result.acknowledged, result.unused_acknowledgements)
        lines.append(render_audit.counts(result.findings, result.acknowledged))
        click.echo("\n".join(lines))
    sys.exit(result.exit_code)
