"""How a file name is written in a line of text, and in a command a user can paste: a
name may hold a newline, a quote or a leading dash, and every error is one line."""

from __future__ import annotations

import json
import os
import re
import shlex
from collections.abc import Callable
from pathlib import Path
from typing import Any

# A control character, or a lone surrogate: a byte of a name that is not UTF-8, as
# surrogateescape holds it in text (printed, it is no byte a terminal shows or pastes back).
_CONTROL = re.compile("[\x00-\x1f\x7f\udc80-\udcff]")
LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_PATHSPEC_MAGIC = re.compile(r"^:|[*?[\\]")  # what git's pathspec reading does not take as is
_NEEDS_QUOTES = re.compile('[\x00-\x1f\x7f"\\\\\udc80-\udcff]')  # as git's quote_c_style
# git's quote_c_style, which bash's `$'...'` reads the same way: letters, else octal.
_ESCAPES = {"\a": "\\a", "\b": "\\b", "\t": "\\t", "\n": "\\n", "\v": "\\v",
            "\f": "\\f", "\r": "\\r", "\\": "\\\\"}


def shell_args(paths: list[str], pathspec: bool = False) -> str:
    """`paths` as a shell reads them back: quoted where needed (a name holding a newline
    or another control character as bash's `$'...'`, so that the line stays one), after
    `--` when one of them starts with `-` (so a suggested `git add ...` can be pasted);
    `pathspec`: for a git command that reads pathspecs (add, rm, mv), a name git would read
    as magic (a leading `:`) or as a pattern (`*`, `?`, `[`) names that file alone."""
    if pathspec:
        paths = [":(literal)" + p if _PATHSPEC_MAGIC.search(p) else p for p in paths]
    words = " ".join("$'" + _escaped(p, "'") + "'" if _CONTROL.search(p) else shlex.quote(p)
                     for p in paths)
    return f"-- {words}" if any(p.startswith("-") for p in paths) else words


def from_here(root: Path, paths: list[str]) -> list[str]:
    """Repository `paths` (relative to its top, `root`) as a command run in the current
    folder names them: a suggested `git add` works from a subfolder too. Outside the
    working tree (GIT_DIR and GIT_WORK_TREE name it), git takes them from its top."""
    try:
        here = os.getcwd()
    except OSError:  # the folder is gone
        return paths
    if Path(here) == root or not Path(here).is_relative_to(root):
        return paths
    return [os.path.relpath(root / p, here) for p in paths]


def from_top(root: Path, paths: list[str]) -> list[str]:
    """`paths` a user typed in the current folder, as repository paths (relative to its
    top, `root`): the inverse of `from_here`, as git reads a pathspec. Outside the working
    tree they are taken from its top, as git does."""
    try:
        here = Path(os.getcwd())
    except OSError:
        here = root
    if not here.is_relative_to(root):
        here = root
    return [os.path.normpath(os.path.relpath(here / p, root)) for p in paths]


def shown(path: str) -> str:
    """`path` for a line of text: as it is, or, when it holds a newline or another control
    character, a backslash or a double quote, quoted as git quotes it (`"a\\nb"`)."""
    return '"' + _escaped(path, '"') + '"' if _NEEDS_QUOTES.search(path) else path


def _escaped(text: str, quote: str) -> str:
    return "".join(_ESCAPES.get(c) or ("\\" + c if c == quote else f"\\{_byte(c):03o}"
                                       if _CONTROL.match(c) else c) for c in text)


def _byte(c: str) -> int:
    """The byte a control character is, or a surrogateescape character stands for."""
    return ord(c) - 0xDC00 if "\udc80" <= c <= "\udcff" else ord(c)


def list_paths(paths: list[str], note: Callable[[str], str] | None = None) -> str:
    """The first five of `paths` for a line of text (each with its `note`, where given),
    and how many more."""
    more = f" and {len(paths) - 5} more" if len(paths) > 5 else ""
    return ", ".join(shown(p) + (note(p) if note else "") for p in paths[:5]) + more


def json_text(data: Any, indent: int = 2) -> str:
    """`data` as JSON, non-ASCII text as it is, except a lone surrogate (a byte of a file
    name that is not UTF-8, read with surrogateescape), written as its `\\u` escape: the
    text stays UTF-8, and `json.loads` gives back the same string."""
    return LONE_SURROGATE.sub(lambda m: f"\\u{ord(m.group()):04x}",
                              json.dumps(data, indent=indent, ensure_ascii=False))
