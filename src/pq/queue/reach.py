"""Whether the series base can be reached from where git stands: a clone may lack it (not
fetched, or cut off by a shallow clone), or a shallow clone may cut the branch's history
short of it; each with what the user fetches to fix it. And the range base..tip the patches
are read from: linear, with the base below it, or refused with the fix that works (the
branch merged upstream, was rebased outside pq, upstream was force-pushed)."""

from __future__ import annotations

import re

from pq.errors import ConfigError, GitError
from pq.git.objects import HEX_ID, CommitId
from pq.git.repo import Git


def upstream_name(git: Git, upstream: str, command: str) -> str:
    """`--upstream` as series.yaml's `upstream.ref` keeps it, which every later `pq
    rebase`, check and push reads again: the ref a relative name (`@{u}`) means, written
    as git shortens it; a fixed commit id as it is. A name whose commit moves with HEAD or
    a reflog (`HEAD~2`, `main@{1}`, ORIG_HEAD) is refused: read again later, it names
    another commit."""
    full = git.ref_name(upstream)
    if full is None or not full.startswith("refs/"):
        if HEX_ID.fullmatch(upstream):
            return upstream
        raise ConfigError(f"--upstream {upstream!r} names a commit, not a branch: "
                          "series.yaml keeps the name, and later commands would read "
                          "another commit from it", hint=f"name upstream's branch (`{command} "
                          "--upstream upstream/main`), or a commit by its full id")
    if not re.search(r"@\{|[~^:]|^HEAD$", upstream):
        return upstream
    return git.ref_name(upstream, short=True) or full


def missing_base(git: Git, base: str, upstream_ref: str, then: str,
                 reinit: str | None = None) -> tuple[str, str] | None:
    """(what is wrong, the fix: fetch `upstream_ref` (words that name what to fetch), then
    `then`; or, where upstream was force-pushed and no fetch brings the base back, the
    command `reinit` that records the base again) when the series base is not in this
    repository at all (a shallow clone, a clone without the upstream fetched, a base
    upstream dropped); None when it is."""
    if git.try_resolve(base) is not None:
        return None
    kind = git.odb.object_type(base)
    if kind is not None:
        return (f"the base series.yaml records, {base[:12]}, is a {kind}, not a commit",
                f"write upstream's commit id in series.yaml's `upstream.base` (`pq init` "
                f"writes it), then {then}")
    if (git.common_dir / "shallow").is_file():
        return (f"the base series.yaml records, {base[:12]}, is not in this shallow clone",
                f"git fetch --unshallow, then {then}")
    again = (f"; if upstream was force-pushed since (no fetch brings it back), `{reinit}` "
             "records the base again from the branch" if reinit else "")
    return (f"the base series.yaml records, {base[:12]}, is not in this repository",
            f"git fetch {upstream_ref}, then {then}{again}")


def shallow_commits(git: Git) -> frozenset[str]:
    """The commits whose parents this shallow clone cuts off (none in a full clone)."""
    try:
        return frozenset((git.common_dir / "shallow").read_text().split())
    except OSError:
        return frozenset()


def shallow_cut(git: Git, base: str, tip: str, then: str = "run it again"
                ) -> tuple[str, str] | None:
    """(what is wrong, the fix) when `tip`'s history in this shallow clone stops before
    the series base `base` (no ancestor of it, as far as git can see); else None."""
    try:
        cut = set((git.common_dir / "shallow").read_text().split())
    except OSError:
        return None
    if not cut & set(git.rev_list(f"{base}..{tip}")):
        return None
    return (f"the history of {tip[:12]} stops before the series base {base[:12]} in this "
            "shallow clone", f"git fetch --deepen=<commits> (or --unshallow), then {then}")


def upstream_past_base(git: Git, ref: str, base: str, tip: str) -> tuple[int, str] | None:
    """(how many, the newest) of the commits of the upstream `ref` that `tip` holds past
    `base`: the branch was rebased onto (or merged) upstream outside pq, and those commits
    are not the fork's patches. None when there are none (or `ref` does not resolve)."""
    upstream = git.try_resolve(ref)
    fork_point = git.merge_base(tip, upstream) if upstream else None
    if fork_point and fork_point != base and git.is_ancestor(base, fork_point):
        return git.count(f"{base}..{fork_point}"), fork_point
    return None


def base_missing(git: Git, base: str, upstream: str | None) -> tuple[str, str] | None:
    """`missing_base` for a command run again once fixed, the fixes naming the series'
    `upstream` ref (None: not known)."""
    return missing_base(git, base, f"the upstream of {upstream}" if upstream else
                        "the remote series.yaml's upstream.ref names", "run it again",
                        _reinit(upstream))


def _reinit(upstream: str | None) -> str:
    return f"pq init --force --upstream {upstream or '<upstream ref>'} --commit"


def linear_range(git: Git, base: str, tip: str, upstream: str | None = None
                  ) -> list[tuple[CommitId, tuple[CommitId, ...]]]:
    """(commit, parents) of base..tip, oldest first; refused for a merge or a base not below.
    The range is listed first: a commit in it whose parent is the base shows the base
    below the tip, with no git process to ask (`is_ancestor`)."""
    try:
        revs = git.rev_list_with_parents(f"{base}..{tip}")
    except GitError:  # a base git cannot find: refused below, with its fix
        revs = None
    if not git.is_ancestor(base, tip):
        missing = base_missing(git, base, upstream) or shallow_cut(git, base, tip)
        if missing is not None:
            raise ConfigError(missing[0], hint=missing[1])
        raise ConfigError(
            f"the series base {base[:12]} is not an ancestor of {tip[:12]}: the branch was "
            "rebased or reset outside pq (onto a force-pushed upstream, say)",
            path="series.yaml", hint=f"re-record the base from the branch: `{_reinit(upstream)}`")
    if revs is None:
        revs = git.rev_list_with_parents(f"{base}..{tip}")  # git's own error, if it fails
    for commit, parents in revs:
        if len(parents) != 1:
            raise ConfigError(
                f"commit {commit[:12]} in {base[:12]}..{tip[:12]} is a merge; pq will not "
                "guess how to split merged history into patches",
                hint=_merge_fix(git, base, commit, parents[0], tip, upstream))
    return revs


def _merge_fix(git: Git, base: str, merge: str, before: str, tip: str,
               upstream: str | None) -> str:
    """How to get past a merge in the branch: `pq import` where there is no series yet;
    else undo it (the branch's last commit) or drop it, and let `pq rebase` bring in the
    upstream commits it merged."""
    if upstream is None:
        return ("`pq import --upstream <ref>` turns a merge-maintained branch into a series; "
                "nothing was written")
    undo = (f"undo the merge (`git reset --keep {before[:12]}`, the commit before it)"
            if merge == tip else "take the merge out of the branch's history (`git rebase "
            f"--onto {before[:12]} {merge[:12]}` replays the commits after it without it)")
    if upstream_past_base(git, upstream, base, merge) is not None:
        return f"{undo}, then `pq rebase {upstream}` brings in the upstream commits it merged"
    return f"{undo}, then run it again"


def no_shared_history(git: Git, what: str, upstream: str, then: str) -> ConfigError:
    """The refusal when `what` and `upstream` have no merge base: in a shallow clone the
    cut hides the commit they share (a fetch of upstream brings no older fork commit
    back: `git fetch --unshallow` does); else upstream is not fetched, or unrelated."""
    if (git.common_dir / "shallow").is_file():
        return ConfigError(f"{what} and {upstream} share no history in this shallow clone "
                           "(the commit they share is cut off)",
                           hint=f"`git fetch --unshallow`, then {then}")
    return ConfigError(f"{what} and {upstream} share no history",
                       hint="is the upstream remote fetched? `git fetch upstream`")
