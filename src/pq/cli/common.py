"""Helpers every command shares: opening the repository, JSON output, terminal progress.

Nothing here imports click: `pq rebase`'s short path (`pq.__main__`) runs without it."""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from pq.quoting import json_text

if TYPE_CHECKING:
    from pq.git.repo import Git


def open_repo(bare: bool = False) -> Git:
    """The repository pq runs in; `bare`: a bare one too (for commands that read commits
    only, as `pq check` does)."""
    from pq.git.repo import Git  # here: `pq --version` and `--help` need no git layer

    return Git.open(".", environment=True, bare=bare)


_json_emitted = False  # a report is out: an error after it (a conflict's exit 1) stays
#                       a stderr line


_progress_shown = False  # a progress line is on the terminal (stderr), not yet cleared


def json_emitted() -> bool:
    """Whether this command printed its JSON report already."""
    return _json_emitted


def reset_json_emitted() -> None:
    """A new command starts (several run in one process under tests)."""
    global _json_emitted
    _json_emitted = False


def echo(text: str = "", err: bool = False) -> None:
    """One line on stdout (stderr with `err`), written at once, as `click.echo` writes it;
    a progress line still shown goes first (a rebase that stopped before its last patch)."""
    clear_progress()
    stream = sys.stderr if err else sys.stdout
    if stream is not None:
        stream.write(text + "\n")
        stream.flush()


def emit_json(data: Any) -> None:
    global _json_emitted
    echo(json_text(data))
    _json_emitted = True


def progress_printer(label: str, *, until_done: bool = False
                     ) -> Callable[[int, int, str], None] | None:
    """A one-line progress display on a terminal; nothing at all in a pipe. The line is
    cleared when the last item starts, or, `until_done`, only at a tick past the last item
    (`i == total`: the caller says it is done), so that a last item ticking for a while (the
    gate's last stage) stays shown."""
    if not sys.stderr.isatty():
        return None

    def show(i: int, total: int, name: str) -> None:
        global _progress_shown
        if not (until_done and i >= total):
            sys.stderr.write(f"\r{label} {i + 1}/{total}: {name}"[:120].ljust(80))
            _progress_shown = True
        if i + 1 >= total + until_done:
            clear_progress()
        sys.stderr.flush()

    return show


def clear_progress() -> None:
    """Take the progress line off the terminal, where one is shown."""
    global _progress_shown
    if _progress_shown:
        _progress_shown = False
        sys.stderr.write("\r" + " " * 80 + "\r")
        sys.stderr.flush()


def note_printer() -> Callable[[str], None] | None:
    """Lines about a slow step (the compat surface's first measurement) on a terminal's
    stderr; nothing in a pipe."""
    if not sys.stderr.isatty():
        return None

    def show(text: str) -> None:
        sys.stderr.write(text + "\n")
        sys.stderr.flush()

    return show


def plural(n: int, word: str, many: str | None = None) -> str:
    """`1 patch`, `2 patches`: a count and its noun in the right number."""
    return f"{n} {word if n == 1 else many or word + 's'}"


def base_label(base: str | None, ref: str) -> str:
    """How every command names a series' base: `base 1c9e2f7a0b3d (upstream/main)`."""
    return f"base {short(base)} ({ref})"


def short(sha: str | None) -> str:
    return sha[:12] if sha else "-"


def ignored_hook_hints(paths: list[str]) -> list[str]:
    """git's hint for each hook it ignored because it is not executable, word for word."""
    return [line for path in paths for line in (
        f"hint: The '{path}' hook was ignored because it's not set as executable.",
        "hint: You can disable this warning with `git config advice.ignoredHook false`.")]


def given(_ctx: object, param: object, value: Any) -> Any:
    """An option's click callback: a value given empty (`--onto "$UNSET"`) is a usage
    error, not the option left out (which would do something else without a word)."""
    values = value if isinstance(value, tuple) else (value,)
    if any(isinstance(v, str) and not v.strip() for v in values):
        import click

        required = bool(getattr(param, "required", False))
        raise click.BadParameter("given empty (an unset variable?): name a value" + (
            "" if required else ", or leave the option out"))
    return value
