"""The repository's own git hooks, run as git runs them: found where git looks
(core.hooksPath, else the git dir's hooks/), only when executable (else the hook is named
for git's hint that it was ignored), in the top of the working tree, with the user's
environment and GIT_DIR; what a hook prints goes to stderr, as git sends it."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path
from typing import NamedTuple

from pq.errors import ConfigError, PqError
from pq.git import process
from pq.git.repo import Git


class HookRun(NamedTuple):
    code: int  # the hook's exit code; 0 when it did not run
    # A hook git ignores because it is not executable, as git names it in the hint it gives
    # (`.git/hooks/pre-rebase`); None when it ran or there is none (run_hook: or when
    # advice.ignoredHook is off; a chained pre-push asks it once the repository is open).
    ignored: str | None = None


def run_hook(git: Git, name: str, args: Sequence[str], stdin: bytes = b"") -> HookRun:
    """Run the hook `name` with `args`, `stdin` its input (none: at its end at once, as
    git gives a hook /dev/null). A hook with no `#!` line runs in `sh`, as git runs it."""
    folder, shown = _folder(git)
    found = folder / name
    if not found.is_file():
        return HookRun(0)
    if not os.access(found, os.X_OK):
        return HookRun(0, ignored_hook(f"{shown}/{name}", git))
    env = {**os.environ, "GIT_DIR": str(git.git_dir)}
    for argv in ([str(found), *args], ["/bin/sh", str(found), *args]):
        try:
            return HookRun(process.passthrough(argv, input=stdin, stdout_to_stderr=True,
                                               cwd=str(git.root), env=env))
        except OSError as exc:
            if exc.errno == errno.ENOEXEC and argv[0] != "/bin/sh":
                continue
            raise ConfigError(f"cannot run the {name} hook: {exc.strerror}", path=str(found),
                              hint="make it a script the system runs, or remove its "
                                   "executable bit to turn it off") from None
    return HookRun(0)  # not reached: the second form either runs or raises


def ignored_hook(shown: str, git: Git) -> str | None:
    """`shown` (a hook git ignores because it is not executable, as git names it), for
    the hint git gives; None when `advice.ignoredHook` is false in `git`."""
    try:
        return None if git.config_bool("advice.ignoredHook") is False else shown
    except PqError:  # not a boolean: the hint, as for any value but false
        return shown


def _folder(git: Git) -> tuple[Path, str]:
    """Where git looks for the repository's hooks (core.hooksPath, else hooks/ of the
    common git dir), and that folder as git names it in a message: asked of git once per
    process and configuration (a rebase asks for two hooks)."""
    try:
        config = (git.common_dir / "config").stat().st_mtime_ns
    except OSError:
        config = 0
    key = (git.root, git.git_dir, config)
    if key not in _FOLDERS:
        # The folder of a hook's path, as git finds a hook: for an empty core.hooksPath,
        # `/NAME` (`--git-path hooks` would say `./`, the working tree).
        shown = os.path.dirname(git.text("rev-parse", "--git-path", "hooks/x").rstrip("\n"))
        _FOLDERS[key] = (git.root / shown, shown)
    return _FOLDERS[key]


_FOLDERS: dict[tuple[Path, Path, int], tuple[Path, str]] = {}
