"""What a failed git command says to the user: git's reason as one line, and where git
could not take a lock, which file is in the way and how to clear it."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Sequence
from pathlib import Path

from pq.errors import ConfigError, GitError

STDERR_REASON_CHARS = 600  # how much of git's stderr a GitError message keeps

# git's words when a lock file it needs exists already (`index.lock`, a ref's `.lock`).
_LOCKED = re.compile(r"Unable to create '(.+?\.lock)': File exists")


# Where a partial clone could not fetch what it lacks (git says "from promisor remote").
PROMISOR_HINT = ("this partial clone fetches the objects it lacks from its promisor remote: "
                 "check that the remote can be reached (`git remote -v`), then run it again")


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


def lock_in_the_way(stderr: bytes, index_lock: Path | None = None) -> str | None:
    """The lock file git found in its way, when that is why it failed: the one git names,
    or `index_lock` where git said nothing (`update-index -q` fails silently) and it is
    there."""
    found = _LOCKED.search(stderr.decode("utf-8", "surrogateescape"))
    if found is not None:
        return found.group(1)
    if index_lock is not None and not stderr.strip() and index_lock.exists():
        return str(index_lock)
    return None


def lock_reason(lock: str) -> str:
    return (f"{lock} exists (another git process is working in this repository, or one was "
            "killed and left it)")


def lock_step(lock: str) -> str:
    """What clears the lock: the first step of a hint."""
    from pq.quoting import shell_args

    return f"once no git process runs here, `rm {shell_args([lock])}`"


def lock_hint(lock: str) -> str:
    return f"{lock_step(lock)}, then run the pq command again"


def lock_refusal(what: str, stderr: bytes) -> ConfigError | None:
    """The error of a refusal pq words itself (`what`: "pq apply cannot update the working
    tree", say) when a lock file is its cause, else None."""
    lock = lock_in_the_way(stderr)
    return None if lock is None else ConfigError(f"{what}: {lock_reason(lock)}",
                                                 hint=lock_hint(lock))


class LockedError(GitError):
    """A git command that could not run because the lock file `lock` is in its way."""

    def __init__(self, message: str, lock: str) -> None:
        super().__init__(message, hint=lock_hint(lock))
        self.lock = lock


def failure(args: Sequence[str], proc: subprocess.CompletedProcess[bytes],
            index_lock: Path | None = None) -> GitError:
    """The error of a git command that failed: the command, its exit code, its reason; for
    a lock file left in the way (`index_lock`: the repository's, for a git that fails
    without a word), that file and how to clear it instead of git's paragraph."""
    command = f"`git {' '.join(args)}`"
    lock = lock_in_the_way(proc.stderr, index_lock)
    if lock is not None:
        return LockedError(f"{command} could not run: {lock_reason(lock)}", lock)
    if index_lock is not None and not proc.stderr.strip():
        # `update-index -q` fails without a word when another git process holds the index
        # lock: by now that process may have let it go.
        return GitError(f"{command} failed with exit {proc.returncode} and said nothing, "
                        f"as it does when another git process holds {index_lock}",
                        hint="once no other git command runs in this repository, run the "
                             "pq command again")
    if b"from promisor remote" in proc.stderr:  # the command is beside the point
        verb = next((a for a, before in zip(args, ["", *args]) if not a.startswith("-")
                     and before != "-c"), "")
        return GitError(f"`git {verb}` could not fetch an object this partial clone lacks: "
                        f"{stderr_reason(proc.stderr)}", hint=PROMISOR_HINT)
    return GitError(f"{command} failed with exit {proc.returncode}: "
                    f"{stderr_reason(proc.stderr)}")
