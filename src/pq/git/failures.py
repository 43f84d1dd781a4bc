"""What a failed git command says to the user: git's reason as one line, and where git
could not take a lock, which file is in the way and how to clear it."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence

from pq.errors import GitError

STDERR_REASON_CHARS = 600  # how much of git's stderr a GitError message keeps

# git's words when a lock file it needs exists already (`index.lock`, a ref's `.lock`).
_LOCKED = re.compile(r"Unable to create '([^'\n]+\.lock)': File exists")


def stderr_reason(stderr: bytes) -> str:
    """git's whole stderr as one line, up to a bound: the reason (`error: ... would be
    overwritten`, the paths) comes first and `Aborting` last, so no line is dropped;
    git's `hint:` lines are advice for git commands and are left out."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines()]
    text = "; ".join(ln for ln in lines if ln and not ln.startswith("hint:"))
    text = text.replace(":; ", ": ")
    if not text:
        return "(no message)"
    return text if len(text) <= STDERR_REASON_CHARS else text[:STDERR_REASON_CHARS] + " ..."


def failure(args: Sequence[str], proc: subprocess.CompletedProcess[bytes]) -> GitError:
    """The error of a git command that failed: the command, its exit code, its reason; for
    a lock file left in the way, that file and how to clear it instead of git's paragraph."""
    command = f"`git {' '.join(args)}`"
    locked = _LOCKED.search(proc.stderr.decode("utf-8", "replace"))
    if locked is not None:
        from pq.quoting import shell_args

        lock = locked.group(1)
        return GitError(f"{command} could not run: {lock} exists (another git process is "
                        "working in this repository, or one was killed and left it)",
                        hint=f"once no git process runs here, `rm {shell_args([lock])}`, then "
                             "run the pq command again")
    return GitError(f"{command} failed with exit {proc.returncode}: "
                    f"{stderr_reason(proc.stderr)}")
