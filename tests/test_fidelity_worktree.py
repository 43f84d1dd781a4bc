"""Every working-tree state survives `pq rebase` (clean, stopped then --continue, --abort,
and `pq undo` of it), and the queue files are immune to checkout filters (autocrlf)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
from gitrepo import commit_all, git, pq, write
from test_rebase import (
    SETUP,
    conflict_upstream,
    make_series,
    set_line,
    upstream_commit,
)

NEW_PATCH = "patches/0003-cpp-compat-return-2.patch"


def add_note(fork: Path, note: str) -> None:
    """A value pq keeps but does not use (it stays out of the patch files), and a comment."""
    text = (fork / "series.yaml").read_text()
    text = "".join(line for line in text.splitlines(keepends=True)
                   if not line.startswith(("notes:", "# a comment")))
    write(fork, "series.yaml", text + f"notes: {note}\n# a comment of the user's\n")


def edit_unstaged(fork: Path) -> None:
    add_note(fork, "a note of the user's")


def edit_staged(fork: Path) -> None:
    edit_unstaged(fork)
    git(fork, "add", "series.yaml")


def edit_staged_then_more(fork: Path) -> None:
    edit_staged(fork)
    add_note(fork, "an unstaged note")


def uncommitted_export(fork: Path) -> None:
    write(fork, "csrc/ops.cc", "#include <torch/extension.h>\n\nint f() { return 2; }\n")
    commit_all(fork, "cpp-compat: return 2")
    pq(fork, "export")


def untracked_note(fork: Path) -> None:
    write(fork, "patches/README", "the user's own notes\n")


DIRT: dict[str, Callable[[Path], None]] = {
    "unstaged-series": edit_unstaged,
    "staged-series": edit_staged,
    "staged-then-unstaged-series": edit_staged_then_more,
    "uncommitted-export": uncommitted_export,
    "untracked-note": untracked_note,
}


def state(root: Path) -> dict[str, object]:
    """Branch, HEAD, index (entries and staged diff) and every working-tree byte."""
    files = {}
    for p in sorted(root.rglob("*")):
        if ".git" in p.relative_to(root).parts or not p.is_file():
            continue
        files[p.relative_to(root).as_posix()] = p.read_bytes()
    return {"branch": git(root, "rev-parse", "refs/heads/paddle"),
            "HEAD": git(root, "symbolic-ref", "-q", "HEAD", check=False),
            "index": git(root, "ls-files", "-s"),
            "cached": git(root, "diff", "--cached"),
            "status": git(root, "status", "--porcelain", "--untracked-files=all"),
            "files": files}


def dirty_fork(tmp: Path, kind: str) -> tuple[Path, Path, dict[str, object]]:
    up, fork = make_series(tmp)
    DIRT[kind](fork)
    return up, fork, state(fork)


def check_carried(fork: Path, kind: str, before: dict[str, object]) -> None:
    """After a finished rebase: the edits are in the bookkeeping commit, nothing is left
    staged or modified, and the user's untracked file is still there."""
    status = git(fork, "status", "--porcelain", "--untracked-files=all")
    assert status == ("?? patches/README" if kind == "untracked-note" else ""), status
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    committed = git(fork, "show", "HEAD:series.yaml")
    files = before["files"]
    assert isinstance(files, dict)
    if kind == "staged-then-unstaged-series":
        assert "notes: an unstaged note" in committed
    elif "series" in kind:
        assert "notes: a note of the user's" in committed
    # The file is written as `pq export` writes it: values kept, comments not.
    assert "# a comment" not in committed
    if kind == "uncommitted-export":
        assert "0003-cpp-compat-return-2.patch" in committed
        assert (fork / NEW_PATCH).read_bytes() == files[NEW_PATCH]
    if kind == "untracked-note":
        assert (fork / "patches/README").read_bytes() == b"the user's own notes\n"
    assert not (fork / ".git/pq/rebase").exists()


@pytest.mark.parametrize("kind", sorted(DIRT))
def test_clean_rebase_carries_uncommitted_queue_files(tmp_path: Path, kind: str) -> None:
    up, fork, before = dirty_fork(tmp_path, kind)
    upstream_commit(up, fork, "upstream: docs", {"README.md": "upstream, improved\n"})
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code == 0, result.output
    check_carried(fork, kind, before)


@pytest.mark.parametrize("kind", sorted(DIRT))
def test_undo_of_a_rebase_brings_back_the_index_and_files(tmp_path: Path, kind: str) -> None:
    up, fork, before = dirty_fork(tmp_path, kind)
    upstream_commit(up, fork, "upstream: docs", {"README.md": "upstream, improved\n"})
    pq(fork, "rebase", "upstream/main")
    pq(fork, "undo")
    assert state(fork) == before


@pytest.mark.parametrize("kind", sorted(DIRT))
def test_conflict_then_continue_carries_them(tmp_path: Path, kind: str) -> None:
    up, fork, before = dirty_fork(tmp_path, kind)
    conflict_upstream(up, fork)
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code == 1, result.output
    write(fork, "setup.py", set_line(SETUP, 3, "import other_framework; paddle.enable_compat()"))
    git(fork, "add", "setup.py")
    result = pq(fork, "rebase", "--continue", ok=False)
    assert result.exit_code == 0, result.output
    check_carried(fork, kind, before)


@pytest.mark.parametrize("kind", sorted(DIRT))
def test_conflict_then_abort_restores_index_and_files(tmp_path: Path, kind: str) -> None:
    up, fork, before = dirty_fork(tmp_path, kind)
    conflict_upstream(up, fork)
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code == 1, result.output
    write(fork, "setup.py", "half-way resolution\n")
    result = pq(fork, "rebase", "--abort", ok=False)
    assert result.exit_code == 0, result.output
    assert state(fork) == before
