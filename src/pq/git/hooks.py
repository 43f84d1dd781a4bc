"""The repository's own git hooks, run as git runs them: found where git looks
(core.hooksPath, else the git dir's hooks/), only when executable, in the top of the
working tree, with the user's environment and GIT_DIR; what a hook prints goes to stderr,
as git sends it."""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence
from pathlib import Path

from pq.git import process
from pq.git.repo import Git


def run_hook(git: Git, name: str, args: Sequence[str], stdin: bytes = b"") -> int:
    """Run the hook `name` with `args`, `stdin` its input (none: at its end at once, as
    git gives a hook /dev/null); its exit code, 0 when there is none. A hook with no `#!`
    line runs in `sh`, as git runs it."""
    found = _folder(git) / name
    if not found.is_file() or not os.access(found, os.X_OK):
        return 0
    env = {**os.environ, "GIT_DIR": str(git.git_dir)}
    for argv in ([str(found), *args], ["/bin/sh", str(found), *args]):
        try:
            return process.passthrough(argv, input=stdin, stdout_to_stderr=True,
                                       cwd=str(git.root), env=env)
        except OSError as exc:
            if exc.errno == errno.ENOEXEC and argv[0] != "/bin/sh":
                continue
            from pq.errors import ConfigError

            raise ConfigError(f"cannot run the {name} hook: {exc.strerror}", path=str(found),
                              hint="make it a script the system runs, or remove its "
                                   "executable bit to turn it off") from None
    return 0  # not reached: the second form either runs or raises


def _folder(git: Git) -> Path:
    """Where git looks for the repository's hooks (core.hooksPath, else hooks/ of the
    common git dir): asked of git once per process and configuration (a rebase asks for
    two hooks)."""
    try:
        config = (git.common_dir / "config").stat().st_mtime_ns
    except OSError:
        config = 0
    key = (git.root, git.git_dir, config)
    if key not in _FOLDERS:
        _FOLDERS[key] = git.root / git.text("rev-parse", "--git-path", "hooks").rstrip("\n")
    return _FOLDERS[key]


_FOLDERS: dict[tuple[Path, Path, int], Path] = {}
