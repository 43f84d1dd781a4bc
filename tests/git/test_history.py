"""The commit graph as `Git` asks it: answers kept about commit ids, and a listed range
answering whether one commit is below another, checked against git itself."""

from __future__ import annotations

import itertools
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, one_patch_fork, pq, write

from pq.git.repo import Git


def _dag(root: Path) -> dict[str, str]:
    """main: a - b - c - m (m merges side: a - s1 - s2) - d; and an unrelated root x."""
    root.mkdir()
    git(root, "init", "-q", "-b", "main")
    ids = {}
    for name in ("a", "b", "c"):
        write(root, f"{name}.txt", name)
        ids[name] = commit_all(root, name)
    git(root, "checkout", "-q", "-b", "side", ids["a"])
    for name in ("s1", "s2"):
        write(root, f"{name}.txt", name)
        ids[name] = commit_all(root, name)
    git(root, "checkout", "-q", "main")
    git(root, "merge", "-q", "--no-edit", "side")
    ids["m"] = git(root, "rev-parse", "HEAD").strip()
    write(root, "d.txt", "d")
    ids["d"] = commit_all(root, "d")
    git(root, "checkout", "-q", "--orphan", "other")
    write(root, "x.txt", "x")
    ids["x"] = commit_all(root, "x")
    return ids


def _asked(trace: Path) -> list[str]:
    return [ln.split("trace: built-in: ", 1)[1] for ln in
            trace.read_text("utf-8", "replace").splitlines() if "trace: built-in: " in ln]


def test_a_listed_range_answers_ancestry_as_git_does(tmp_path: Path) -> None:
    """Every ordered pair of commits of a history with a merge, a side branch and an
    unrelated root: with the range a..b listed first, `is_ancestor(a, b)` is git's own
    answer (`merge-base --is-ancestor`, asked of a fresh reader)."""
    ids = _dag(tmp_path / "repo")
    with Git.open(tmp_path / "repo") as listed, Git.open(tmp_path / "repo") as plain:
        for a, b in itertools.permutations(ids.values(), 2):
            listed.rev_list_with_parents(f"{a}..{b}")
            assert listed.is_ancestor(a, b) == plain.is_ancestor(a, b), (a, b)


def test_a_listed_range_whose_oldest_commit_sits_on_the_base_asks_git_nothing(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    ids = _dag(tmp_path / "repo")
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    with Git.open(tmp_path / "repo") as g:
        g.rev_list_with_parents(f"{ids['b']}..{ids['d']}")
        g.rev_list_with_parents(f"{ids['s1']}..{ids['c']}")  # c does not hold s1
        before = len(_asked(trace))
        assert g.is_ancestor(ids["b"], ids["d"])
        assert len(_asked(trace)) == before  # c's parent is b: no process
        assert not g.is_ancestor(ids["s1"], ids["c"])
        assert _asked(trace)[before:] == [f"git merge-base --is-ancestor {ids['s1']} "
                                          f"{ids['c']}"]


def test_a_clean_rebase_lists_the_ranges_once_and_asks_no_ancestry(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Whether upstream moved back, whether it holds the first patch, how many commits it
    gained, whether the base is below the tip: all read from the two ranges the rebase
    lists (upstream's old..new, the branch's base..tip), with no `merge-base`."""
    fork = one_patch_fork(tmp_path, {"pkg/glue.py": "import torch\n"},
                          {"pkg/util.py": "def helper():\n    return 3\n"})
    trace = tmp_path / "trace.txt"
    monkeypatch.setenv("GIT_TRACE", str(trace))
    result = pq(fork, "rebase", "upstream/main")
    monkeypatch.delenv("GIT_TRACE")
    assert "(1 commit)" in result.output, result.output  # the count, from the listing
    asked = _asked(trace)
    assert [a for a in asked if a.startswith("git merge-base")] == [], asked
    lists = [a for a in asked if a.startswith("git rev-list")]
    assert len(lists) == len(set(lists)) == 2, lists


def test_a_base_git_cannot_find_is_still_refused_with_its_fix(tmp_path: Path) -> None:
    """The range is listed before ancestry is asked: a base git does not have fails that
    listing, and the refusal is the one that names the fetch."""
    fork = make_fork(tmp_path)
    write(fork, "pkg/glue.py", "import torch\n")
    commit_all(fork, "python-glue: glue")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    text = (fork / "series.yaml").read_text()
    base = git(fork, "rev-parse", "upstream/main").strip()
    (fork / "series.yaml").write_text(text.replace(base, "1" * 39 + "f"))
    commit_all(fork, "pq: a base from nowhere")
    result = pq(fork, "export", ok=False)
    assert result.exit_code == 2, result.output
    assert "1111111111" in result.output and "git fetch" in result.output, result.output
