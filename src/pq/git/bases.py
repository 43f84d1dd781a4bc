"""The commit a fork's series applies onto: the merge base of the branch and upstream.

A criss-cross history (upstream merged some of the fork's commits while the fork merged
upstream) has several merge bases, none an ancestor of another, and `git merge-base`
names any one of them: a fork commit upstream merged from a side line, say. Its tree
lacks the upstream commits the fork merged since, which would then pass for the fork's
own edits. The base is the one on upstream's first-parent line (at most one is: two
commits of one line are ancestor and descendant), else git's pick.
"""

from __future__ import annotations

from pq.git.objects import CommitId
from pq.git.repo import Git


def fork_base(git: Git, tip: str, upstream: str) -> CommitId | None:
    """The merge base of `tip` and `upstream` (None: no shared history), preferring the one
    on `upstream`'s first-parent line where there are several."""
    proc = git.run_proc("merge-base", "--all", tip, upstream)
    bases = [CommitId(c) for c in proc.stdout.decode().split()] if proc.returncode == 0 else []
    if len(bases) < 2:
        return bases[0] if bases else None
    # The first-parent walk down from upstream, stopped below the bases (their parents
    # excluded): short, and it holds a base exactly when that base is on the line.
    line = set(git.text("rev-list", "--first-parent", upstream, "--not",
                        *(f"{b}^@" for b in bases), "--").split())
    return next((b for b in bases if b in line), bases[0])
