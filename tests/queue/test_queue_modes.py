"""Modes of the queue's own files: an executable bit committed on series.yaml or a patch
file survives every commit pq writes, as it would a `git commit` of the same files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.gitrepo import commit_all, git, make_fork, migrate, pq, write


def modes(root: Path, rev: str = "HEAD") -> dict[str, str]:
    out = git(root, "ls-tree", "-r", rev, "--", "series.yaml", "patches")
    return {line.split("\t", 1)[1]: line.split(" ", 1)[0] for line in out.splitlines()}


def executable_queue(tmp: Path) -> tuple[Path, str]:
    """A fork whose series.yaml and first patch file are committed as 100755."""
    fork = make_fork(tmp)
    migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main")
    first = sorted((fork / "patches").iterdir())[0]
    for p in (fork / "series.yaml", first):
        p.chmod(0o755)
    commit_all(fork, "queue files executable")
    return fork, f"patches/{first.name}"


def test_rebase_keeps_executable_queue_files(tmp_path: Path) -> None:
    fork, first = executable_queue(tmp_path)
    up = tmp_path / "upstream"
    write(up, "NEWS", "moved\n")
    commit_all(up, "upstream: news")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    after = modes(fork)
    assert after["series.yaml"] == after[first] == "100755"
    assert {m for p, m in after.items() if p not in ("series.yaml", first)} == {"100644"}
    assert git(fork, "status", "--porcelain") == ""
    assert os.access(fork / "series.yaml", os.X_OK)


@pytest.mark.parametrize("filemode", ["true", "false"])
def test_export_commit_stages_modes_as_git_add_would(tmp_path: Path, filemode: str) -> None:
    """With core.fileMode the bits on disk count (a chmod of series.yaml is committed, one
    taken away too); without it, the index's mode stays."""
    fork, first = executable_queue(tmp_path)
    git(fork, "config", "core.fileMode", filemode)
    (fork / first).chmod(0o644)
    write(fork, "csrc/ops.cc", "// one more line\n")
    commit_all(fork, "[cpp-compat] one more line")
    pq(fork, "export", "--commit")
    after = modes(fork)
    assert after["series.yaml"] == "100755"
    assert after[first] == ("100644" if filemode == "true" else "100755")
    assert git(fork, "status", "--porcelain") == ""


@pytest.mark.parametrize("umask,want", [(0o077, 0o600), (0o022, 0o644), (0o002, 0o664)])
def test_new_queue_files_take_the_umask_as_git_checks_files_out(
        tmp_path: Path, umask: int, want: int) -> None:
    """pq wrote every new series.yaml and patch file 0644, world-readable under a private
    umask (077) where git and any other tool make them 0600; a file replaced keeps its mode."""
    fork = make_fork(tmp_path)
    migrate(fork)
    old = os.umask(umask)
    try:
        pq(fork, "init", "--upstream", "upstream/main")
    finally:
        os.umask(old)
    files = [fork / "series.yaml", *sorted((fork / "patches").iterdir())]
    assert {p.stat().st_mode & 0o777 for p in files} == {want}
    (fork / "series.yaml").chmod(0o640)
    write(fork, "pkg/more.py", "import paddle\n")
    commit_all(fork, "python-glue: more")
    pq(fork, "export")
    assert (fork / "series.yaml").stat().st_mode & 0o777 == 0o640
