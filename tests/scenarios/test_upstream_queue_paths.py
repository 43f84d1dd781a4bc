"""An upstream with files of its own where pq keeps the queue (series.yaml, patches/, mre/,
.pq/): pq's bookkeeping commits replace those paths whole, so init, import, apply and
rebase refuse such an upstream with one line naming its files, and write nothing, where
they would otherwise drop or revert upstream's files without a word."""

from __future__ import annotations

from pathlib import Path

from gitrepo import commit_all, git, make_fork, make_upstream, pq, write

FILES = {"setup.py": "setup()\n", "README.md": "upstream\n"}


def _state(repo: Path) -> tuple[str, str, str]:
    return (git(repo, "for-each-ref"), git(repo, "status", "--porcelain", "--ignored"),
            git(repo, "rev-parse", "HEAD"))


def test_init_and_import_refuse_a_base_with_files_under_the_queue_paths(
        tmp_path: Path) -> None:
    up = make_upstream(tmp_path / "upstream", {**FILES, "patches/zlib.diff": "v1\n",
                                               "mre/notes.txt": "x\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "setup.py", "import paddle\nsetup()\n")
    commit_all(fork, "build: enable paddle")
    before = _state(fork)
    for command in (["init", "--upstream", "upstream/main", "--commit"],
                    ["import", "--upstream", "upstream/main"]):
        refused = pq(fork, *command, ok=False)
        assert refused.exit_code == 2, refused.output
        lines = [ln for ln in refused.output.splitlines() if ln.strip()]
        assert len(lines) == 1 and lines[0].startswith("pq: error: "), refused.output
        assert "mre/notes.txt, patches/zlib.diff" in lines[0]
        assert "where pq keeps the queue" in lines[0]
        assert _state(fork) == before
        assert not (fork / "series.yaml").exists()


def test_init_names_upstream_s_own_series_yaml_before_calling_it_the_fork_s(
        tmp_path: Path) -> None:
    """Upstream ships a series.yaml of its own: `pq init` said "the fork already has a
    series" and named `pq export` (which refuses it) and `--force`; upstream's files are
    what it refuses, as `pq import` says."""
    up = make_upstream(tmp_path / "upstream", {**FILES, "series.yaml": "a: 1\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "setup.py", "import paddle\nsetup()\n")
    commit_all(fork, "build: enable paddle")
    refused = pq(fork, "init", "--upstream", "upstream/main", "--commit", ok=False)
    assert refused.exit_code == 2 and "has its own files where pq keeps the queue: " \
        "series.yaml" in refused.output and "already has a series" not in refused.output


def test_rebase_refuses_an_upstream_that_adds_files_under_the_queue_paths(
        tmp_path: Path) -> None:
    """The case that lost data: upstream's own patches/ files, added after `pq init`,
    came out of the rebase dropped (git rebase keeps them)."""
    up = make_upstream(tmp_path / "upstream", FILES)
    fork = make_fork(tmp_path, up)
    write(fork, "setup.py", "import paddle\nsetup()\n")
    commit_all(fork, "build: enable paddle")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, "patches/zlib.diff", "v1\n")
    write(up, "patches/0001-upstream-fix.patch", "From upstream\n")
    commit_all(up, "upstream: vendored patches")
    git(fork, "fetch", "-q", "upstream")
    before = _state(fork)
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2, refused.output
    assert "upstream/main (" in refused.output
    assert "patches/0001-upstream-fix.patch, patches/zlib.diff" in refused.output
    assert _state(fork) == before
    refused = pq(fork, "apply", "--onto", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "where pq keeps the queue" in refused.output
    assert _state(fork) == before
    # The upstream takes its files away again: the rebase goes through.
    git(up, "rm", "-q", "-r", "patches")
    git(up, "commit", "-q", "-m", "upstream: no vendored patches")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    assert git(fork, "ls-tree", "-r", "--name-only", "HEAD", "patches").split() == [
        "patches/0001-build-enable-paddle.patch"]


def test_an_upstream_that_merged_the_branch_whole_stays_rebasable(tmp_path: Path) -> None:
    """Upstream merges the fork's branch, queue and all; `pq rebase --force` drops the
    patches as upstream, and later rebases go on: the queue files upstream holds are the
    branch's own, unchanged since the base."""
    up = make_upstream(tmp_path / "upstream", FILES)
    fork = make_fork(tmp_path, up)
    write(fork, "setup.py", "import paddle\nsetup()\n")
    commit_all(fork, "build: enable paddle")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(up, "pull", "-q", "--no-rebase", "--no-edit", str(fork), "paddle")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "--force", "upstream/main")
    write(up, "README.md", "later\n")
    commit_all(up, "upstream: later")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    assert git(fork, "rev-parse", "HEAD~1") == git(fork, "rev-parse", "upstream/main")
