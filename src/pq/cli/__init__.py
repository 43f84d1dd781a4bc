"""The command line: parse arguments, call the library, render the result.

Each command lives in its own module under `pq.cli` and is imported only when it runs, so
that `pq` starts fast. The library returns data; the `render_*` modules here turn it into
text, and `failure` turns every escaping exception into one line and an exit code.

`main`, the click group (`pq.cli.app`), is loaded on first use: `python -m pq hook run`
uses this package's hook renderer and error handler without importing click.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pq.cli.app import main as main


def __getattr__(name: str) -> Any:
    if name == "main":
        from pq.cli.app import main

        return main
    raise AttributeError(f"module 'pq.cli' has no attribute {name!r}")
