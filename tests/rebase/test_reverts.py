"""pq.rebase.reverts on git's own diffs: `git revert`'s diff of any change is its revert,
wherever git draws its lines, and a later change that is not one is not."""

from __future__ import annotations

import subprocess
from pathlib import Path

from hypothesis import given, settings
from hypothesis import strategies as st

from pq.model import diff as diffs
from pq.model.diff import Hunk
from pq.rebase import reverts

# Few distinct lines, so that git has many ways to draw a diff.
LINE = st.sampled_from(["{", "}", "", "x", "y", "return 0;", "foo();"])
TEXT = st.lists(LINE, max_size=14)


def hunks(tmp: Path, old: list[str], new: list[str]) -> list[Hunk]:
    (tmp / "a").write_text("".join(f"{ln}\n" for ln in old))
    (tmp / "b").write_text("".join(f"{ln}\n" for ln in new))
    out = subprocess.run(["git", "diff", "--no-index", "--no-color", "--diff-algorithm=myers",
                          "--indent-heuristic", "a", "b"], cwd=tmp, capture_output=True).stdout
    files = diffs.parse(out)
    return list(files[0].hunks) if files else []


@settings(max_examples=120, deadline=None)
@given(old=TEXT, new=TEXT, later=TEXT)
def test_the_reverse_diff_is_a_revert_and_other_changes_are_not(
        tmp_path_factory: object, old: list[str], new: list[str], later: list[str]) -> None:
    if old == new:
        return
    tmp = Path(tmp_path_factory.mktemp("rev"))  # type: ignore[attr-defined]
    adopted = {"f": reverts.runs(hunks(tmp, old, new))}
    assert reverts.follow(adopted, [("back", {"f": hunks(tmp, new, old)})]) == "back"
    if later not in (old, new):
        # Another change reverts only when what it leaves holds the old text where the
        # adopted change sat (the rest of the file changed too: allowed with a revert).
        found = reverts.follow(adopted, [("other", {"f": hunks(tmp, new, later)})])
        assert found is None or old != later and _holds_old_runs(old, new, later), (
            old, new, later)


def _holds_old_runs(old: list[str], new: list[str], later: list[str]) -> bool:
    """A loose check: every line the adopted change removed is back in `later`."""
    gone = [ln for ln in old if old.count(ln) > new.count(ln)]
    return all(later.count(ln) >= old.count(ln) for ln in gone)
