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
import io
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

# The cyclic garbage collector's thresholds for a pq process (Python's: 700, 10, 10). pq
# makes almost no cyclic garbage (a 1000-patch rebase: ~500 objects) but many long-lived
# objects (modules, a series' entries, trees), which every older-generation collection
# walks again: 264 collections, 65 ms of a 1000-patch rebase by default, 24 and 17 ms so.
COLLECTOR_THRESHOLDS = (10_000, 50, 50)


def tune_collector() -> None:
    """Collect cyclic garbage less often (see COLLECTOR_THRESHOLDS): first thing in `pq`'s
    process, before the imports that fill the heap."""
    gc.set_threshold(*COLLECTOR_THRESHOLDS)


def raw_bytes_out() -> None:
    """Text pq prints may hold a file name's bytes that are not UTF-8 (read from git with
    surrogateescape): the standard streams write them back as those bytes, as git does
    with core.quotePath off, instead of failing. They write UTF-8 whatever the locale (or
    PYTHONIOENCODING) says, as git writes a name's bytes and as --json promises."""
    _buffered()
    for stream in (sys.stdout, sys.stderr):  # stderr's default is backslashreplace
        if not hasattr(stream, "reconfigure"):
            continue
        encoding = str(getattr(stream, "encoding", "") or "").lower().replace("-", "")
        if encoding != "utf8":
            stream.reconfigure(encoding="utf-8", errors="surrogateescape")
        elif getattr(stream, "errors", None) in ("strict", "backslashreplace"):
            stream.reconfigure(errors="surrogateescape")


def _buffered() -> None:
    """Under PYTHONUNBUFFERED (`python -u`) a standard stream writes straight to its file,
    and a write the pipe takes only in part (its reader gone mid-way) loses the rest with
    no error: pq would exit 0 with its `--json` report cut. Through a buffered writer the
    rest is written, or the broken pipe raised, as without it."""
    for name in ("stdout", "stderr"):
        stream = getattr(sys, name)
        if isinstance(getattr(stream, "buffer", None), io.FileIO):
            stream.flush()
            setattr(sys, name, io.TextIOWrapper(
                io.BufferedWriter(stream.detach()), encoding=stream.encoding,
                errors=stream.errors, line_buffering=stream.line_buffering,
                write_through=True))


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
