"""The repository's own git hooks, run as git runs them (`git hook run`: core.hooksPath,
the executable bit, the top of the working tree as the folder), on the user's terminal
with the user's environment: what a hook prints goes to stderr, as git sends it."""

from __future__ import annotations

from collections.abc import Sequence

from pq.git import process
from pq.git.repo import Git


def run_hook(git: Git, name: str, args: Sequence[str]) -> int:
    """Run the hook `name` with `args`; its exit code (0 when there is none)."""
    return process.passthrough(["git", "-C", str(git.root), "hook", "run", "--ignore-missing",
                                name, "--", *args], stdout_to_stderr=True)
