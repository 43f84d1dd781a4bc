"""`pq undo` refused by untracked files where the state it restores has files names every
one of them, so that moving aside what it names is enough."""

from __future__ import annotations

from pathlib import Path

from gitrepo import commit_all, git, make_fork, pq, write


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
