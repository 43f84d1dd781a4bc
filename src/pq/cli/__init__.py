"""The command line: parse arguments, call the library, render the result.

Each command lives in its own module under `pq.cli` and is imported only when it runs, so
that `pq` starts fast. The library returns data; the `render_*` modules here turn it into
text, and `failure` turns every escaping exception into one line and an exit code.

`main`, the click group (`pq.cli.app`), is loaded on first use: `python -m pq hook run`
uses this package's hook renderer and error handler without importing click.
"""

from __future__ import annotations

import atexit
import gc
import sys
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pq.cli.app import main as main


def __getattr__(name: str) -> Any:
    if name == "main":
        from pq.cli.app import main

        return main
    raise AttributeError(f"module 'pq.cli' has no attribute {name!r}")


_teardown_skipped = False


def raw_bytes_out() -> None:
    """Text pq prints may hold a file name's bytes that are not UTF-8 (read from git with
    surrogateescape): the standard streams write them back as those bytes, as git does
    with core.quotePath off, instead of failing."""
    for stream in (sys.stdout, sys.stderr):  # stderr's default is backslashreplace
        if getattr(stream, "errors", None) in ("strict", "backslashreplace") and hasattr(
                stream, "reconfigure"):
            stream.reconfigure(errors="surrogateescape")


def skip_teardown() -> None:
    """Let the process exit without tearing down every module pq imported.

    At exit the interpreter clears each module and then frees, cycle by cycle, the
    classes, functions and dicts they held: ~12 ms for the modules a rebase loads, a
    twentieth of a small rebase. Freezing the garbage collector's objects as the last
    exit handler leaves them to the operating system instead. What the collector tracks then is
    never collected, so no finalizer of it runs; none of pq's matters by then: files are
    closed and git processes waited for as their `with` blocks end, and the interpreter
    flushes the standard streams whatever the collector does."""
    global _teardown_skipped
    if not _teardown_skipped:
        _teardown_skipped = True
        atexit.register(gc.freeze)
