"""`pq demo [DIR]`: build an upstream and a fork of the example library, then sync them."""

from __future__ import annotations

from pathlib import Path

import click

from pq.demo import build as demo_mod
from pq.quoting import shell_args


def register(main: click.Group) -> None:
    main.add_command(demo)


@click.command()
@click.argument("directory", required=False, type=click.Path(path_type=Path))
def demo(directory: Path | None) -> None:
    """Run the main job on the bundled example library, in DIR (default: a new temp folder).

    Builds a real upstream repository of the example operator library, a fork carrying
    pq's example migration series, moves upstream forward, then runs `pq rebase
    upstream/main` and `pq audit workarounds` and says what happened.
    """
    result = demo_mod.run(directory, click.echo)
    fork = shell_args([f"{result.directory}/fork"])
    click.echo(f"\nThe repositories stay in {result.directory} (cd {fork} "
               "and try `pq series`, `pq log`, `pq undo`).")
    if not result.ok:
        raise SystemExit(1)
