"""`pq hook` commands (registered on the main group)."""

from __future__ import annotations

import click


def register(main: click.Group) -> None:
    pass
