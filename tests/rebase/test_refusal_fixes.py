"""A refusal's fix works when followed: the branch merged upstream, upstream merged the
branch, a base no fetch brings back, a branch rebased outside pq. Each used to name a fix
that failed (`pq import` on a fork with a series, the refused command itself, a fetch)."""

from __future__ import annotations

import re
from pathlib import Path

from gitrepo import commit_all, git, one_patch_fork, pq, write


def _fork(tmp_path: Path) -> Path:
    return one_patch_fork(tmp_path, {"pkg/glue.py": "x = 1\n"}, {"README.md": "moved\n"})


def _fix(output: str) -> str:
    """The first command a refusal's hint names, in backquotes."""
    found = re.search(r"`([^`]+)`", output.split(" (", 1)[1])
    assert found, output
    return found.group(1)


def test_a_branch_that_merged_upstream_is_told_to_undo_the_merge(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    before = git(fork, "rev-parse", "HEAD")
    git(fork, "merge", "-q", "--no-edit", "upstream/main")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2
    assert "is a merge" in refused.output and "pq import" not in refused.output
    assert _fix(refused.output) == f"git reset --keep {before[:12]}"
    assert "then `pq rebase upstream/main`" in refused.output
    forced = pq(fork, "init", "--force", "--upstream", "upstream/main", "--commit", ok=False)
    assert forced.exit_code == 2 and "pq import" not in forced.output  # a series is there
    assert _fix(forced.output) == f"git reset --keep {before[:12]}"
    git(fork, *_fix(refused.output).split()[1:])
    assert "1 of 1 patches kept" in pq(fork, "rebase", "upstream/main").output


def test_an_upstream_that_merged_the_branch_is_named_so(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    up = tmp_path / "upstream"
    git(up, "fetch", "-q", str(fork), "paddle")
    git(up, "merge", "-q", "--no-edit", "FETCH_HEAD")
    git(fork, "fetch", "-q", "upstream")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "upstream merged the branch" in refused.output
    assert "not its upstream" not in refused.output
    assert _fix(refused.output) == "pq rebase --force upstream/main"
    done = pq(fork, "rebase", "--force", "upstream/main")
    assert "0 of 1 patches kept" in done.output


def test_a_base_no_fetch_brings_back_names_init(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    series = (fork / "series.yaml").read_text()
    base = re.search(r"base: '?([0-9a-f]{40})", series).group(1)
    gone = "deadbeef" * 5  # a commit this repository never had (a force-pushed upstream's)
    write(fork, "series.yaml", series.replace(base, gone))
    commit_all(fork, "pq: a base upstream dropped")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "is not in this repository" in refused.output
    assert "`pq init --force --upstream upstream/main --commit`" in refused.output
    assert "initialised" in pq(fork, "init", "--force", "--upstream", "upstream/main",
                               "--commit").output


def test_a_branch_rebased_outside_pq_names_init_not_itself(tmp_path: Path) -> None:
    """Upstream force-pushed (its tip rewritten); the user replayed the branch with `git
    rebase --onto`: series.yaml's base is no ancestor of the branch any more."""
    fork = _fork(tmp_path)
    old_base = git(fork, "merge-base", "HEAD", "upstream/main")
    up = tmp_path / "upstream"
    git(up, "reset", "-q", "--hard", old_base)  # the base itself rewritten
    git(up, "commit", "-q", "--amend", "--allow-empty", "-m", "upstream: the base, again")
    write(up, "README.md", "rewritten\n")
    commit_all(up, "upstream: rewritten history")
    git(fork, "fetch", "-q", "--force", "upstream")
    git(fork, "rebase", "-q", "--onto", "upstream/main", old_base)
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "not an ancestor" in refused.output, refused.output
    assert _fix(refused.output) == "pq init --force --upstream upstream/main --commit"
    pq(fork, *_fix(refused.output).split()[1:])
    assert "series consistent" in pq(fork, "check").output


def test_a_merge_under_later_commits_names_the_rebase_that_drops_it(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    before = git(fork, "rev-parse", "HEAD")
    git(fork, "merge", "-q", "--no-edit", "upstream/main")
    merge = git(fork, "rev-parse", "HEAD")
    write(fork, "pkg/more.py", "y = 2\n")
    commit_all(fork, "python-glue: more")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2
    assert f"`git rebase --onto {before[:12]} {merge[:12]}`" in refused.output
    git(fork, "rebase", "-q", "--onto", before, merge)
    pq(fork, "export", "--commit")
    assert "2 of 2 patches kept" in pq(fork, "rebase", "upstream/main").output
