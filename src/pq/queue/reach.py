"""Whether the series base can be reached from where git stands: a clone may lack it (not
fetched, or cut off by a shallow clone), or a shallow clone may cut the branch's history
short of it; each with what the user fetches to fix it."""

from __future__ import annotations

from pq.git.repo import Git


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
