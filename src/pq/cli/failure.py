"""The one error handler of every entry point: an exception becomes one line and an exit code.

The click CLI (`pq.cli.app`) and the short paths that never import click (`python -m pq
hook run`, a plain `pq rebase`: see `pq.__main__`) all ask `failure_of` what an exception
means, and leave through `fail`; none maps errors itself.
"""

from __future__ import annotations

import contextlib
import errno
import os
import sys
from typing import Any, NoReturn

from pq.errors import EXIT_USAGE, ConfigError, PqError

EXIT_INTERRUPTED = 130
EXIT_INTERNAL = 2
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE: what git and the shell tools exit with

_FILE_SYSTEM_FIXES = {
    errno.EACCES: "check the permissions of {where} and of its folder",
    errno.EPERM: "check the permissions of {where} and of its folder",
    errno.EROFS: "{where} is on a read-only file system: work in a writable clone",
    errno.ENOSPC: "free some disk space",
    errno.EDQUOT: "free some disk space (the quota is reached)",
    # A file where a folder is wanted, or the other way round (in .git/pq, say).
    errno.EEXIST: "move {where} aside: a folder of that name is wanted there",
    errno.ENOTDIR: "a file stands where {where} wants a folder: move it aside",
    errno.EISDIR: "move the folder {where} aside: a file of that name is wanted there",
    errno.ENAMETOOLONG: "give a shorter name than {where}",
    errno.ELOOP: "{where} is a symbolic link that leads back to itself: fix or remove it",
    errno.EIO: "{where} could not be read (an input/output error): check the file and its "
               "disk",
}
_DISK_FULL = (errno.ENOSPC, errno.EDQUOT)  # wherever the write was: no file needed to say it


class Failure:
    """What an exception means for the user: the message, the exit code, the PqError.
    (A plain class: this module is on the hook's fast path, which skips `dataclasses`.)"""

    __slots__ = ("message", "exit_code", "error", "quiet")

    def __init__(self, message: str, exit_code: int, error: PqError | None = None,
                 quiet: bool = False) -> None:
        self.message = message
        self.exit_code = exit_code
        self.error = error
        self.quiet = quiet  # stdout went away (a closed pipe): leave without a word

    def line(self) -> str | None:
        """The one stderr line: `pq: error: ...`, `pq: interrupted`, or None when quiet."""
        if self.quiet:
            return None
        # One line, whatever a message quotes (a file name holding a newline, git's text).
        message = self.message.replace("\r", "\\r").replace("\n", "\\n")
        if self.exit_code == EXIT_INTERRUPTED and self.error is None:
            return f"pq: {message}"
        return f"pq: error: {message}"

    def data(self) -> dict[str, Any]:
        """The JSON shape of an error (README: "Errors as JSON")."""
        exc = self.error
        return {"error": {"message": exc.message if exc is not None else self.message,
                          "path": getattr(exc, "path", None),
                          "line": getattr(exc, "line", None),
                          "column": getattr(exc, "column", None),
                          "hint": exc.hint if exc is not None else None,
                          "exit_code": self.exit_code}}


def _unstopped(message: str) -> str:
    """`message` without the full stop git's own sentence may end with, where a clause
    follows it ("...the index; stopped half-way: ..."); an ellipsis stays."""
    return message[:-1] if message.endswith(".") and not message.endswith("..") else message


def failure_of(exc: BaseException) -> Failure | None:
    """What `exc` means, or None when it is not pq's to report: SystemExit and its kin, and
    any bug while PQ_DEBUG is set (the caller re-raises it, traceback and all)."""
    # An operation cut short after it changed something is logged as failed (pq.oplog.txn
    # notes which on the exception): `pq undo` puts back the state before it.
    logged = getattr(exc, "pq_failed_operation", None)
    half = (f" half-way: operation {logged} is logged as failed (`pq log` shows it), and "
            "`pq undo` puts back the state before it" if logged is not None else
            "; the rebase is left in progress: `pq rebase --abort` goes back, and `pq "
            "status` says whether `pq rebase --continue` can go on from where it stopped"
            if getattr(exc, "pq_rebase_left", False) else "")
    if isinstance(exc, KeyboardInterrupt):
        finished = getattr(exc, "pq_finished_operation", None)
        if finished is not None:
            half = (f" as it finished: operation {finished} is logged (`pq log` shows it), "
                    "and `pq undo` takes it back")
        elif getattr(exc, "pq_nothing_changed", False) and not half:
            half = " before it changed anything"
        if getattr(exc, "pq_files_cut", False):  # the second Ctrl-C stopped a checkout
            half += ("; git was stopped while it wrote the working tree, so some files may "
                     "differ from HEAD (`git status` lists them; `git checkout -f HEAD` makes "
                     "them HEAD's, dropping any change in them)")
        return Failure("interrupted" + half, EXIT_INTERRUPTED)
    if logged is not None:  # after a message of its own, a clause apart
        half = "; stopped" + half
    if isinstance(exc, PqError):
        text = exc.render()
        if half and ("pq undo" if logged is not None else "pq rebase --") not in text:
            # git refused half-way (an index.lock a crashed git left, say): what changed
            # and the way back, unless the error names it already.
            text = _unstopped(exc.message) + half + (f" ({exc.hint})" if exc.hint else "")
        return Failure(text, exc.exit_code, exc)
    if isinstance(exc, BrokenPipeError):
        return Failure("", EXIT_BROKEN_PIPE, quiet=True)
    if isinstance(exc, FileNotFoundError) and not exc.filename and not _cwd_exists():
        return Failure("the folder pq was started in no longer exists (it was removed while "
                       "the shell was in it)" + half
                       + " (`cd` to the repository's top folder, then run pq again)",
                       EXIT_USAGE)
    if isinstance(exc, OSError) and exc.errno in _FILE_SYSTEM_FIXES and (
            exc.filename or exc.errno in _DISK_FULL):
        # Where the file system says no (permissions, a read-only mount, a full disk), the
        # file it names (a full disk needs none) and what to do, not a bug report.
        where = os.fsdecode(exc.filename) if exc.filename else ""
        if exc.errno == errno.ENOTDIR:  # the file in the way may be a folder further up
            where = next((p for p in _ancestors(where) if os.path.lexists(p)
                          and not os.path.isdir(p)), where)
        error = ConfigError(f"{exc.strerror or os.strerror(exc.errno)}{half}", path=where or
                            None, hint=f"{_FILE_SYSTEM_FIXES[exc.errno].format(where=where)}, "
                            "then run the command again")  # --json: path and hint apart
        return Failure(error.render(), EXIT_USAGE, error)
    if isinstance(exc, Exception):  # a bug: one line, and the way to see more
        if os.environ.get("PQ_DEBUG"):
            return None
        first = next((line.strip() for line in str(exc).splitlines() if line.strip()), "")
        said = f"{type(exc).__name__}: {_unstopped(first)}" if first else type(exc).__name__
        return Failure(f"internal error: {said}{half} (set PQ_DEBUG=1 "
                       "for the traceback, and please report it)", EXIT_INTERNAL)
    return None


def _cwd_exists() -> bool:
    try:
        os.getcwd()
    except OSError:
        return False
    return True


def _ancestors(path: str) -> list[str]:
    """`path`'s folders from the top down, then `path`."""
    out = [path]
    while os.path.dirname(out[-1]) not in ("", out[-1]):
        out.append(os.path.dirname(out[-1]))
    return out[::-1]


def fail(failure: Failure, as_json: bool) -> NoReturn:
    """Leave with the failure's exit code: its one stderr line, or, under --json, the error
    as JSON on stdout."""
    if not failure.quiet:
        from pq.cli.common import echo
        from pq.quoting import json_text

        line = json_text(failure.data()) if as_json else failure.line()
        if line is not None:
            try:
                echo(line, err=not as_json)
            except OSError:  # stdout cannot take it (a full disk, the failure itself): its
                text = failure.line()  # line on stderr; a stderr that fails says nothing
                if as_json and text is not None:
                    with contextlib.suppress(OSError):
                        echo(text, err=True)
    _flush_or_drop(sys.stdout)
    _flush_or_drop(sys.stderr)
    sys.exit(failure.exit_code)


def _flush_or_drop(stream: object) -> None:
    """What a standard stream still buffers is written now, or, where it cannot be (the
    reader gone, a full disk, a terminal hung up), goes nowhere: the interpreter's last
    flush would fail again, print a traceback's last line and exit 120 instead of the
    failure's code."""
    try:
        stream.flush()  # type: ignore[attr-defined]
    except (OSError, ValueError, AttributeError):
        with contextlib.suppress(OSError, ValueError, AttributeError):
            nowhere = os.open(os.devnull, os.O_WRONLY)
            os.dup2(nowhere, stream.fileno())  # type: ignore[attr-defined]
            os.close(nowhere)


def leave(exc: BaseException, as_json: bool) -> NoReturn:
    """Leave as `exc` means (`failure_of`); what is not pq's to report is raised again.
    After a command's JSON report (a rebase's conflict), its error is a stderr line."""
    failure = failure_of(exc)
    if failure is None:
        raise exc
    from pq.cli.common import json_emitted

    fail(failure, as_json and not (failure.error is not None and json_emitted()))
