"""pq started in a folder a rebase empties (a shell in patches/, looking at the patch
files): git >= 2.35 never removes the folder a command started in, and neither do pq's
checkouts, so the shell's folder is still there and every next command works."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, make_upstream, one_patch_fork, pq, write


def run_in(folder: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pq", *args], cwd=folder, text=True,
                          capture_output=True, check=False)


def git_version(root: Path) -> tuple[int, int]:
    found = re.search(r"(\d+)\.(\d+)", git(root, "version"))
    assert found is not None
    return int(found.group(1)), int(found.group(2))


def conflicting_fork(tmp: Path) -> Path:
    return one_patch_fork(
        tmp, {"pkg/__init__.py": "import paddle\n\n\ndef op(x):\n    return x + 1\n"},
        {"pkg/__init__.py": "import torch\n\n\ndef op(x):\n    return x * 2\n"},
        "python-glue: op adds one")


def test_a_rebase_stopped_from_patches_keeps_that_folder(tmp_path: Path) -> None:
    fork = conflicting_fork(tmp_path)
    if git_version(fork) < (2, 35):
        pytest.skip("git before 2.35 removes the folder it was started in")
    before = git(fork, "rev-parse", "HEAD")
    here = fork / "patches"
    stopped = run_in(here, "rebase", "upstream/main")
    assert stopped.returncode == 1, stopped.stderr
    assert here.is_dir() and not any(here.iterdir())  # emptied, as git empties it
    status = run_in(here, "status")
    assert status.returncode == 0 and "conflicted" in status.stdout, status.stderr
    aborted = run_in(here, "rebase", "--abort")
    assert aborted.returncode == 0, aborted.stderr
    assert git(fork, "rev-parse", "HEAD") == before
    assert sorted(p.name for p in here.iterdir()) == ["0001-python-glue-op-adds-one.patch"]
    assert git(fork, "status", "--porcelain") == ""


def test_a_folder_removed_under_the_shell_is_one_line(tmp_path: Path) -> None:
    fork = conflicting_fork(tmp_path)
    gone = fork / "gone"
    gone.mkdir()
    proc = subprocess.run(
        [sys.executable, "-c", "import os, runpy, sys; os.chdir(sys.argv[1]); os.rmdir("
         "sys.argv[1]); sys.argv = ['pq', 'status']; runpy.run_module('pq', "
         "run_name='__main__')", str(gone)], text=True, capture_output=True, check=False,
        env={**os.environ, "PQ_DEBUG": ""})
    assert proc.returncode == 2
    assert proc.stderr.strip().splitlines() == [
        "pq: error: the folder pq was started in no longer exists (it was removed while the "
        "shell was in it) (`cd` to the repository's top folder, then run pq again)"]


def test_undo_from_patches_keeps_that_folder(tmp_path: Path) -> None:
    """`pq undo` of `pq init`, run in patches/: the files go, the folder stays."""
    fork = make_fork(tmp_path)
    write(fork, "pkg/__init__.py", "import paddle\n")
    commit_all(fork, "python-glue: import paddle")
    pq(fork, "init", "--upstream", "upstream/main")
    here = fork / "patches"
    undone = run_in(here, "undo")
    assert undone.returncode == 0, undone.stderr
    assert here.is_dir() and not any(here.iterdir())
    assert not (fork / "series.yaml").exists()


def test_a_rebase_that_puts_a_file_where_the_start_folder_is_still_lands(
        tmp_path: Path) -> None:
    """Upstream replaced the folder pq runs in by a file: git refuses to remove its start
    folder, so that checkout runs from the top, as before, and the folder goes."""
    up = make_upstream(tmp_path / "upstream")
    write(up, "docs/a.txt", "a\n")
    commit_all(up, "upstream: docs")
    fork = make_fork(tmp_path, up)
    write(fork, "setup.py", "patched\n")
    commit_all(fork, "python-glue: the patch")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(up, "rm", "-q", "-r", "docs")
    write(up, "docs", "now a file\n")
    commit_all(up, "upstream: docs is a file")
    git(fork, "fetch", "-q", "upstream")
    rebased = run_in(fork / "docs", "rebase", "upstream/main")
    assert rebased.returncode == 0, rebased.stderr
    assert (fork / "docs").read_text() == "now a file\n"
    assert git(fork, "status", "--porcelain") == ""
