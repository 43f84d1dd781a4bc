"""Moving a branch that pq computed from a tip it read earlier, without losing a commit.

pq holds its lock while it computes, but git does not take that lock: a `git commit` made
meanwhile moves the branch. These helpers check the branch under the lock before anything is
written, and move it by compare-and-swap (`git update-ref HEAD <new> <old>`), so such a
commit is never thrown away: pq refuses instead.
"""

from __future__ import annotations

import re

from pq.errors import ConfigError
from pq.git.failures import lock_refusal
from pq.git.objects import CommitId
from pq.git.repo import Git


class BranchMoved(ConfigError):
    """The branch is no longer where pq read it: a commit made meanwhile, which is kept."""


def _moved(branch: str, now: str | None, then: str, command: str) -> ConfigError:
    return BranchMoved(
        f"{branch.removeprefix('refs/heads/')} moved while {command} was computing (it is "
        f"{(now or '(none)')[:12]}, was {then[:12]}: a commit made meanwhile?); {command} "
        "changed nothing, so that commit is kept", hint=f"run `{command}` again")


def require_unmoved(git: Git, branch: str, then: CommitId, command: str) -> None:
    """Refuse (changing nothing) when HEAD left `branch` or `branch` left `then`."""
    now = git.try_resolve(branch)
    if git.current_branch() != branch or now != then:
        raise _moved(branch, now, then, command)


def swap_branch(git: Git, branch: str, old: CommitId, new: CommitId, action: str) -> None:
    """Point `branch` (HEAD's) from `old` to `new` only if it still is `old` (compare and
    swap): a commit made since pq read the tip is never thrown away (the caller puts back
    what it had touched before it raises)."""
    done, stderr = try_swap_branch(git, branch, old, new, action)
    if not done:
        raise refused(action, stderr)


def try_swap_branch(git: Git, branch: str, old: CommitId, new: CommitId, action: str
                    ) -> tuple[bool, bytes]:
    """`swap_branch`, telling a refusal of git's with the branch still at `old` (a lock in
    the way) by (False, git's stderr); BranchMoved where it moved."""
    proc = git.run_proc("update-ref", "-m", action, "HEAD", new, old)
    if proc.returncode == 0:
        return True, b""
    if (now := git.try_resolve(branch)) != old:
        raise _moved(branch, now, old, action)
    return False, proc.stderr


def checkout_moved(git: Git, branch: str, old: CommitId, new: CommitId, action: str) -> None:
    """After `swap_branch`: the index and working tree follow from `old` to `new` as
    `git reset --keep` does (local changes kept; refused, and the branch put back, if a
    changed file would be overwritten)."""
    done, stderr = follow(git, old, new, action)
    if not done:
        raise refused(action, stderr)


def follow(git: Git, old: CommitId, new: CommitId, action: str,
           env: dict[str, str] | None = None) -> tuple[bool, bytes]:
    """`checkout_moved`, telling a refusal by (False, git's stderr) with the branch put
    back to `old`, for the caller to word."""
    proc = git.run_proc("read-tree", "-m", "-u", old, new, moves_files=True, env=env)
    if proc.returncode != 0:
        git.run("update-ref", "-m", action + " (refused)", "HEAD", old, new)
        return False, proc.stderr
    return True, b""


# git's words when the ref itself cannot be written: a name too long for the file system, a
# branch where the name needs a folder (`team` against `team/x`).
_REF_REFUSED = re.compile(r"cannot lock ref '([^']+)': (.*)")


def refused(action: str, stderr: bytes) -> ConfigError:
    """The error of a move git refused: a local change or untracked file in the way, or a
    lock file."""
    locked = lock_refusal(f"{action} cannot update the working tree", stderr)
    if locked is not None:
        return locked
    text = stderr.decode("utf-8", "replace")
    if (ref := _REF_REFUSED.search(text)) is not None:  # not the files: the branch's name
        return ConfigError(f"{action} cannot create the ref {ref.group(1)}: "
                           f"{ref.group(2).strip().rsplit(': ', 1)[-1]}",
                           hint="choose another branch name, then run it again")
    lines = text.strip().splitlines()
    reason = lines[0].rstrip(":") if lines else "git refused to check the files out"
    files = [ln.strip() for ln in lines[1:] if ln.startswith("\t")]  # git lists them apart
    if files:
        reason += ": " + ", ".join(files[:5]) + (f" and {len(files) - 5} more"
                                                  if len(files) > 5 else "")
    untracked = "untracked working tree file" in reason.lower()  # no stash takes those
    return ConfigError(f"{action} cannot update the working tree: {reason}",
                       hint="move or remove those untracked files, then run it again" if
                       untracked else "commit or stash your changes (`git stash`), then run "
                                      "it again")
