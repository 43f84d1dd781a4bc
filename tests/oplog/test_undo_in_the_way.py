"""`pq undo` refused by untracked files where the state it restores has files names every
one of them, so that moving aside what it names is enough."""

from __future__ import annotations

from pathlib import Path

from gitrepo import commit_all, git, make_fork, pq, series_fork, write


def test_undo_names_every_untracked_file_in_the_way(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "build: paddle")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    up = tmp_path / "upstream"
    git(up, "rm", "-q", "README.md", "pkg/util.py")
    commit_all(up, "upstream: drop two files")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    write(fork, ".git/info/exclude", "pkg/util.py\n")
    write(fork, "README.md", "mine\n")
    write(fork, "pkg/util.py", "mine, ignored\n")
    result = pq(fork, "undo", ok=False)
    assert result.exit_code == 2
    assert "untracked README.md, pkg/util.py (ignored, but yours) would be overwritten" \
        in result.output, result.output
    assert "move them aside, then run `pq undo` again" in result.output
    for name in ("README.md", "pkg/util.py"):  # what it named, moved aside: enough
        (fork / name).rename(tmp_path / name.replace("/", "-"))
    pq(fork, "undo")
    assert (tmp_path / "README.md").read_text() == "mine\n"
    assert (fork / "README.md").read_text() == "upstream\n"


def test_undoing_a_skip_keeps_work_where_the_conflict_would_be_written(tmp_path: Path) -> None:
    """Undoing the `--skip` that ended a rebase writes the stop's conflict back: its files
    (one the skipped patch edits, one it adds) are not ones git's move of HEAD checks, as
    the two commits have the same of each; an edit or a file of the user's there since is
    refused, one kind at a time, and nothing changes until both are out of the way."""
    fork = series_fork(tmp_path, ("python-glue: op and a new file", {
        "pkg/__init__.py": "import torch\n\n\ndef op(x):\n    return x  # paddle\n",
        "pkg/new.py": "the patch's new file\n"}))
    write(tmp_path / "upstream", "pkg/__init__.py",
          "import torch\n\n\ndef op(x):\n    return x  # upstream\n")
    commit_all(tmp_path / "upstream", "upstream: op")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    pq(fork, "rebase", "--skip")
    tip = git(fork, "rev-parse", "HEAD")
    write(fork, "pkg/__init__.py", "my edit\n")
    write(fork, "pkg/new.py", "my own file\n")

    result = pq(fork, "undo", ok=False)
    assert result.exit_code == 2
    assert "untracked pkg/new.py would be overwritten by undoing operation" in result.output
    (fork / "pkg/new.py").rename(tmp_path / "mine.py")
    result = pq(fork, "undo", ok=False)
    assert result.exit_code == 2
    assert "uncommitted changes in pkg/__init__.py would be overwritten" in result.output
    assert "commit or stash those changes (`git stash`)" in result.output
    assert (fork / "pkg/__init__.py").read_text() == "my edit\n"
    assert git(fork, "rev-parse", "HEAD") == tip

    git(fork, "stash", "-q")
    pq(fork, "undo")  # the stop, back: the conflict in its file, the new file staged
    assert "<<<<<<<" in (fork / "pkg/__init__.py").read_text()
    assert (fork / "pkg/new.py").read_text() == "the patch's new file\n"
    assert "pq rebase" in pq(fork, "status").output
