"""Every working-tree state survives `pq rebase` (clean, stopped then --continue, --abort,
and `pq undo` of it), and the queue files are immune to checkout filters (autocrlf)."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, make_upstream, pq, worktree_files, write
from test_rebase import (
    SETUP,
    UPSTREAM_FILES,
    conflict_upstream,
    make_series,
    set_line,
    upstream_commit,
)

NEW_PATCH = "patches/0003-cpp-compat-return-2.patch"
GLUE = "0002-python-glue-scoped-compat.patch"


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


def metadata(fork: Path) -> None:
    """A summary and a layer changed: headers of the patch files go stale, no commit does."""
    text = (fork / "series.yaml").read_text()
    assert "summary: 'build: enable compat'" in text and "layer: python-glue" in text
    write(fork, "series.yaml", text.replace("summary: 'build: enable compat'",
                                            "summary: turn the compat layer on")
          .replace("layer: python-glue", "layer: cpp-compat"))


def untracked_note(fork: Path) -> None:
    write(fork, "patches/README", "the user's own notes\n")


DIRT: dict[str, Callable[[Path], None]] = {
    "unstaged-series": edit_unstaged,
    "staged-series": edit_staged,
    "staged-then-unstaged-series": edit_staged_then_more,
    "uncommitted-export": uncommitted_export,
    "metadata-edit": metadata,
    "untracked-note": untracked_note,
}


def state(root: Path) -> dict[str, object]:
    """Branch, HEAD, index (entries and staged diff) and every working-tree byte."""
    files = worktree_files(root)
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
    # The file is written as `pq export` writes it: values and the user's comments kept.
    if "series" in kind:
        assert "# a comment of the user's" in committed
    if kind == "uncommitted-export":
        assert "0003-cpp-compat-return-2.patch" in committed
        assert (fork / NEW_PATCH).read_bytes() == files[NEW_PATCH]
    if kind == "metadata-edit":
        assert "summary: turn the compat layer on" in committed
        assert "layer: cpp-compat" in committed
        assert b"X-Pq-Layer: cpp-compat\n" in (fork / "patches" / GLUE).read_bytes()
        assert b"Description: turn the compat layer on\n" in (
            fork / "patches/0001-build-enable-compat.patch").read_bytes()
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


@pytest.mark.parametrize("staged", [False, True])
def test_abort_puts_back_a_chmod_of_series_yaml(tmp_path: Path, staged: bool) -> None:
    """An executable bit the user set on series.yaml (staged or not) is there again after
    `--abort`, as every other byte of the working tree and index."""
    up, fork = make_series(tmp_path)
    (fork / "series.yaml").chmod(0o755)
    if staged:
        git(fork, "add", "series.yaml")
    before = state(fork)
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    pq(fork, "rebase", "--abort")
    assert state(fork) == before
    assert (fork / "series.yaml").stat().st_mode & 0o111 == 0o111


# -- checkout filters: core.autocrlf, core.eol, text=auto ------------------------------------


def blob(root: Path, rev: str) -> bytes:
    return subprocess.run(["git", "cat-file", "blob", rev], cwd=root, capture_output=True,
                          check=True).stdout


def queue_bytes(root: Path) -> dict[str, bytes]:
    files = {"series.yaml": (root / "series.yaml").read_bytes()}
    for p in sorted((root / "patches").iterdir()):
        files[f"patches/{p.name}"] = p.read_bytes()
    return files


def recheckout(root: Path) -> None:
    """Check every file out again, so that the repository's filters apply to them."""
    for rel in git(root, "ls-files").splitlines():
        (root / rel).unlink()
    git(root, "checkout", "--", ".")


def crlf_series(tmp: Path, how: str) -> tuple[Path, Path]:
    """A fork whose queue files are CRLF on disk, the way `how` makes them so."""
    up, fork = make_series(tmp)
    if how == "clone":  # a clone made with autocrlf=true: CRLF before pq ever runs
        clone = tmp / "clone"
        git(tmp, "clone", "-q", "-c", "core.autocrlf=true", str(fork), str(clone))
        git(clone, "remote", "add", "upstream", str(up))
        git(clone, "fetch", "-q", "upstream")
        fork = clone
    elif how == "autocrlf":
        git(fork, "config", "core.autocrlf", "true")
        recheckout(fork)
    else:  # core.eol=crlf with `* text=auto` in upstream's tracked .gitattributes
        upstream_commit(up, fork, "upstream: attributes", {".gitattributes": "* text=auto\n"})
        pq(fork, "rebase", "upstream/main")
        git(fork, "config", "core.eol", "crlf")
        recheckout(fork)
    assert b"\r\n" in (fork / "series.yaml").read_bytes()
    assert all(b"\r\n" in v for v in queue_bytes(fork).values())
    assert git(fork, "status", "--porcelain") == ""
    return up, fork


HOW = ["autocrlf", "clone", "eol-text-auto"]


@pytest.mark.parametrize("how", HOW)
def test_series_export_and_check_read_crlf_queue_files(tmp_path: Path, how: str) -> None:
    _, fork = crlf_series(tmp_path, how)
    before = queue_bytes(fork)
    listing = pq(fork, "series").output
    assert "0002-python-glue-scoped-compat.patch" in listing
    result = pq(fork, "export", "--json")
    assert '"changed": []' in result.output
    assert queue_bytes(fork) == before  # nothing rewritten
    assert git(fork, "status", "--porcelain") == ""
    pq(fork, "check")


@pytest.mark.parametrize("how", HOW)
def test_rebase_clean_and_with_a_conflict_under_crlf(tmp_path: Path, how: str) -> None:
    up, fork = crlf_series(tmp_path, how)
    upstream_commit(up, fork, "upstream: docs", {"README.md": "upstream, improved\n"})
    pq(fork, "rebase", "upstream/main")
    assert git(fork, "status", "--porcelain") == ""
    pq(fork, "check")
    conflict_upstream(up, fork)
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code == 1, result.output
    write(fork, "setup.py", set_line(SETUP, 3, "import other_framework; paddle.enable_compat()"))
    git(fork, "add", "setup.py")
    report = json.loads(pq(fork, "rebase", "--continue", "--json").output)
    assert [p["changed"] for p in report["patches"]] == [True, False]
    assert git(fork, "status", "--porcelain") == ""
    assert b"+import other_framework; paddle.enable_compat()" in git(
        fork, "show", "HEAD:patches/0001-build-enable-compat.patch").encode()
    pq(fork, "check")
    before = queue_bytes(fork)
    assert '"changed": []' in pq(fork, "export", "--json").output
    assert queue_bytes(fork) == before


@pytest.mark.parametrize("how", HOW)
def test_apply_under_crlf(tmp_path: Path, how: str) -> None:
    _, fork = crlf_series(tmp_path, how)
    tip = git(fork, "rev-parse", "HEAD")
    pq(fork, "apply", "--branch", "rebuilt")
    assert git(fork, "status", "--porcelain") == ""
    assert git(fork, "diff", tip, "HEAD", "--", ".", ":!series.yaml", ":!patches") == ""
    pq(fork, "check")


def test_patch_with_crlf_bytes_survives_autocrlf(tmp_path: Path) -> None:
    """A diff of a CRLF file holds CR bytes that belong to it: under autocrlf=true they
    must reach the patch file, its commit and the rebased branch unchanged."""
    files = dict(UPSTREAM_FILES)
    files["win.bat"] = "".join(f"echo {i}\r\n" for i in range(1, 21))
    up = make_upstream(tmp_path / "upstream", files)
    fork = make_fork(tmp_path, up)
    git(fork, "config", "core.autocrlf", "true")
    write(fork, "win.bat", files["win.bat"].replace("echo 3\r\n", "echo paddle\r\n"))
    commit_all(fork, "build: paddle in win.bat")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    name = "patches/0001-build-paddle-in-win-bat.patch"
    data = (fork / name).read_bytes()
    assert b"+echo paddle\r\n" in data and b"-echo 3\r\n" in data
    assert blob(fork, f"HEAD:{name}") == data
    assert git(fork, "status", "--porcelain") == ""
    assert '"changed": []' in pq(fork, "export", "--json").output
    upstream_commit(up, fork, "upstream: more", {"win.bat": files["win.bat"] + "echo 21\r\n"})
    pq(fork, "rebase", "upstream/main")
    assert git(fork, "status", "--porcelain") == ""
    assert (fork / name).read_bytes() == data
    assert (fork / "win.bat").read_bytes().count(b"\r\n") == 21
    pq(fork, "check")


def test_a_patch_file_a_text_attribute_cannot_give_back_is_named_with_its_fix(
        tmp_path: Path) -> None:
    """Under `* text eol=crlf`, a fresh checkout of a patch of a `-text` CRLF file writes
    each of its LF lines as CRLF, which git cannot undo: git calls the file changed in
    every clone. pq reads it as committed (export changes nothing), and `pq rebase`,
    which could not land over it, refuses at once with the fix, which works."""
    files = {**UPSTREAM_FILES, ".gitattributes": "* text eol=crlf\n*.bat -text\n",
             "run.bat": "x\r\ny\r\nz\r\n"}
    up = make_upstream(tmp_path / "upstream", files)
    fork = make_fork(tmp_path, up)
    write(fork, "run.bat", "x\r\nY\r\nz\r\n")
    commit_all(fork, "build: edit run.bat")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", "-b", "paddle", str(fork), str(clone))
    git(clone, "remote", "add", "upstream", str(up))
    git(clone, "fetch", "-q", "upstream")
    assert git(clone, "status", "--porcelain") == "M patches/0001-build-edit-run-bat.patch"
    assert '"changed": []' in pq(clone, "export", "--json").output
    upstream_commit(up, clone, "upstream: more", {"setup.py": SETUP + "# more\n"})
    refused = pq(clone, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "`patches/*.patch -text`" in refused.output
    assert not (clone / ".git/pq/rebase/state.json").exists()
    with (clone / ".gitattributes").open("a") as f:
        f.write("patches/*.patch -text\n")
    git(clone, "add", ".gitattributes")
    git(clone, "commit", "-q", "-m", "build: patch files as they are")
    git(clone, "checkout", "--", "patches")
    pq(clone, "export", "--commit")
    assert pq(clone, "rebase", "upstream/main").exit_code == 0
    assert git(clone, "status", "--porcelain") == ""
    assert pq(clone, "check").exit_code == 0


@pytest.mark.parametrize("kind", sorted(DIRT))
def test_apply_carries_them_and_undo_brings_them_back(tmp_path: Path, kind: str) -> None:
    up, fork, before = dirty_fork(tmp_path, kind)
    upstream_commit(up, fork, "upstream: docs", {"README.md": "upstream, improved\n"})
    result = pq(fork, "apply", "--onto", "upstream/main", ok=False)
    assert result.exit_code == 0, result.output
    status = git(fork, "status", "--porcelain", "--untracked-files=all")
    assert status == ("?? patches/README" if kind == "untracked-note" else ""), status
    pq(fork, "undo")
    assert state(fork) == before


@pytest.mark.parametrize("how", HOW)
def test_abort_under_crlf_restores_every_byte(tmp_path: Path, how: str) -> None:
    up, fork = crlf_series(tmp_path, how)
    edit_staged(fork)
    before = state(fork)
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    pq(fork, "rebase", "--abort")
    assert state(fork) == before


@pytest.mark.parametrize("how", HOW)
def test_undo_under_crlf_restores_every_byte(tmp_path: Path, how: str) -> None:
    up, fork = crlf_series(tmp_path, how)
    edit_staged(fork)
    before = state(fork)
    upstream_commit(up, fork, "upstream: docs", {"README.md": "upstream, improved\n"})
    pq(fork, "rebase", "upstream/main")
    assert git(fork, "status", "--porcelain") == ""
    pq(fork, "undo")
    assert state(fork) == before


@pytest.mark.parametrize("flow", ["rebase", "conflict", "apply"])
def test_committed_files_of_the_user_in_patches_stay(tmp_path: Path, flow: str) -> None:
    """patches/README and patches/old/x.patch are the user's: the bookkeeping commit keeps
    them, so the working tree does too."""
    up, fork = make_series(tmp_path)
    write(fork, "patches/README", "the user's own notes\n")
    write(fork, "patches/old/x.patch", "an old patch, kept for reference\n")
    commit_all(fork, "pq: notes")
    if flow == "apply":
        upstream_commit(up, fork, "upstream: docs", {"README.md": "upstream, improved\n"})
        pq(fork, "apply", "--onto", "upstream/main")
    elif flow == "rebase":
        upstream_commit(up, fork, "upstream: docs", {"README.md": "upstream, improved\n"})
        pq(fork, "rebase", "upstream/main")
    else:
        conflict_upstream(up, fork)
        assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
        write(fork, "setup.py", set_line(SETUP, 3, "import other_framework"))
        git(fork, "add", "setup.py")
        pq(fork, "rebase", "--continue")
    assert git(fork, "status", "--porcelain", "--untracked-files=all") == ""
    assert blob(fork, "HEAD:patches/README") == b"the user's own notes\n"
    assert (fork / "patches/old/x.patch").read_bytes() == b"an old patch, kept for reference\n"
    pq(fork, "check")


def test_landing_clears_queue_files_only_when_reset_keep_would_trip_over_them(
        tmp_path: Path) -> None:
    """Queue files as HEAD has them are left alone (no checkout, no index write); one
    rewritten with the same bytes (new inode: stat data differs from the index entry, and
    `git reset --keep` refuses such a file) is checked out again first."""
    from pq.git.repo import Git
    from pq.rebase import worktree

    _up, fork = make_series(tmp_path)
    text = (fork / "series.yaml").read_text()
    write(fork, "series.yaml", text + "# moved on\n")
    other = commit_all(fork, "series.yaml moved on")
    git(fork, "reset", "-q", "--hard", "HEAD~")
    index = fork / ".git/index"
    git(fork, "update-index", "-q", "--refresh")
    before = index.stat()
    with Git.open(fork) as g:
        worktree.clear_queue_files(g)
    after = index.stat()
    assert (after.st_ino, after.st_mtime_ns) == (before.st_ino, before.st_mtime_ns)
    # The same bytes through a new file: `git reset --keep` alone would refuse it.
    data = (fork / "series.yaml").read_bytes()
    (fork / "series.yaml.new").write_bytes(data)
    (fork / "series.yaml.new").rename(fork / "series.yaml")
    assert git(fork, "diff-files", "--name-only") == "series.yaml"
    with Git.open(fork) as g:
        worktree.clear_queue_files(g)
        g.reset("keep", other)
    assert (fork / "series.yaml").read_text() == text + "# moved on\n"
    assert git(fork, "status", "--porcelain") == ""


@pytest.mark.parametrize("conflict", [False, True])
def test_an_assume_unchanged_series_file_with_an_edit_still_lands(tmp_path: Path,
                                                                  conflict: bool) -> None:
    """`diff-files` trusts assume-unchanged, `reset --keep` and checkout do not: the queue
    files are cleared first, and the edit is carried as before."""
    up, fork = make_series(tmp_path)
    git(fork, "update-index", "--assume-unchanged", "series.yaml")
    add_note(fork, "a note of the user's")
    if conflict:
        conflict_upstream(up, fork)
        assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
        write(fork, "setup.py", set_line(SETUP, 3, "import other_framework; paddle.enable_compat()"))
        git(fork, "add", "setup.py")
        result = pq(fork, "rebase", "--continue", ok=False)
    else:
        upstream_commit(up, fork, "upstream: docs", {"README.md": "upstream, improved\n"})
        result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code == 0, result.output
    assert "notes: a note of the user's" in git(fork, "show", "HEAD:series.yaml")


def test_a_snapshot_stores_a_queue_file_whose_index_blob_was_never_written(
        tmp_path: Path) -> None:
    """An index entry added with --info-only names a blob the repository lacks: the
    snapshot writes the file's bytes itself (it skips only HEAD's blobs), so that undo can
    put them back."""
    from pq.git.repo import Git
    from pq.oplog.snapshot import take

    _up, fork = make_series(tmp_path)
    write(fork, "patches/9999-notes.patch", "my notes\n")
    git(fork, "update-index", "--add", "--info-only", "patches/9999-notes.patch")
    oid = git(fork, "ls-files", "-s", "patches/9999-notes.patch").split()[1]
    missing = subprocess.run(["git", "cat-file", "-e", oid], cwd=fork, capture_output=True)
    assert missing.returncode != 0  # no such object yet
    with Git.open(fork) as g:
        files = take(g)["files"]
    assert files["patches/9999-notes.patch"] == f"100644 {oid}"
    for entry in files.values():  # every blob the snapshot names is there
        git(fork, "cat-file", "-e", entry.split()[1])


@pytest.mark.parametrize("edit", ["staged-new", "modified", "staged-modified", "queue-folder"])
def test_uncommitted_edits_to_the_users_files_in_queue_folders_are_refused(
        tmp_path: Path, edit: str) -> None:
    """The user's files in patches/ (all but the patch files) and in the other queue folders
    leave the working tree at a conflict, and `--abort` puts the branch's back: an
    uncommitted edit there would be lost, so the rebase refuses to start (as `git rebase`
    refuses a dirty index), and nothing moves."""
    up, fork = make_series(tmp_path)
    if edit == "queue-folder":
        text = (fork / "series.yaml").read_text()
        write(fork, "series.yaml", text + "queue_paths:\n- mre\n")
        write(fork, "mre/repro.py", "print(1)\n")
        commit_all(fork, "pq: a queue folder")
        pq(fork, "export", "--commit")
        write(fork, "mre/repro.py", "print(2)  # the user's edit\n")
        dirty = "mre/repro.py"
    else:
        if edit != "staged-new":
            write(fork, "patches/README", "v1\n")
            commit_all(fork, "pq: notes")
        write(fork, "patches/README", "the user's edit\n")
        if edit != "modified":
            git(fork, "add", "patches/README")
        dirty = "patches/README"
    conflict_upstream(up, fork)
    before = state(fork)
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2, refused.output
    assert f"uncommitted changes in {dirty}; pq rebase would not carry them" in refused.output
    assert state(fork) == before and not (fork / ".git/pq/rebase").exists()


def test_redo_of_an_abort_after_undo_brought_the_stopped_rebase_back(tmp_path: Path) -> None:
    """`pq undo` of an abort brings the stopped rebase back, and says `pq redo` reverts
    that: the redo takes the conflict out of the index first (git moves no HEAD over
    unmerged entries), and a second undo brings every byte of it back again."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", "half-way resolution\n")
    write(fork, "pkg/scratch.py", "x = 1\n")
    git(fork, "add", "pkg/scratch.py")
    stopped = state(fork)
    pq(fork, "rebase", "--abort")
    aborted = state(fork)
    assert "`pq redo`" in pq(fork, "undo").output
    assert state(fork) == stopped
    result = pq(fork, "redo", ok=False)
    assert result.exit_code == 0, result.output
    assert state(fork) == aborted and not (fork / ".git/pq/rebase").exists()
    pq(fork, "undo")
    assert state(fork) == stopped
    write(fork, "setup.py", set_line(SETUP, 3, "import other_framework; paddle.enable_compat()"))
    git(fork, "add", "setup.py")
    git(fork, "rm", "-q", "--cached", "pkg/scratch.py")
    (fork / "pkg/scratch.py").unlink()
    result = pq(fork, "rebase", "--continue", ok=False)
    assert result.exit_code == 0, result.output


def test_a_redo_git_refuses_leaves_the_stopped_rebase_as_it_was(tmp_path: Path) -> None:
    """The conflict leaves the index before HEAD moves; when git then refuses the move (an
    edit it would overwrite), the conflict goes back: nothing changed, exit 2."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    pq(fork, "rebase", "--abort")
    pq(fork, "undo")
    marked = (fork / "setup.py").read_text().replace("<<<<<<< ", "<<<<<<< my work, ")
    write(fork, "setup.py", marked)  # a partial resolution, not staged
    write(fork, "pkg/__init__.py", GLUE + "# an edit the branch's version would overwrite\n")
    before = state(fork)
    refused = pq(fork, "redo", "--force", ok=False)
    assert refused.exit_code == 2, refused.output
    assert "uncommitted changes in pkg/__init__.py would be overwritten" in refused.output
    assert state(fork) == before
    assert "1 conflicted" in pq(fork, "status").output


def test_queue_files_pq_wrote_with_lf_stay_clean_under_autocrlf_through_abort_and_undo(
        tmp_path: Path) -> None:
    """Under core.autocrlf=true, series.yaml and patches/ as `pq init --commit` wrote them
    (LF; git's checkout would write CRLF): after `--abort`, `pq undo` and `pq redo`, the
    files hold the same bytes and `git status` stays clean (the index's stat data of a
    CRLF checkout made them look modified, for good)."""
    up, fork = make_series(tmp_path)
    git(fork, "config", "core.autocrlf", "true")
    before = queue_bytes(fork)
    assert git(fork, "status", "--porcelain") == ""
    upstream_commit(up, fork, "upstream: docs", {"README.md": "upstream, improved\n"})
    pq(fork, "rebase", "upstream/main")
    pq(fork, "undo")
    assert queue_bytes(fork) == before
    assert git(fork, "status", "--porcelain") == ""
    pq(fork, "redo")
    assert git(fork, "status", "--porcelain") == ""
    pq(fork, "undo")
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    pq(fork, "rebase", "--abort")
    assert queue_bytes(fork) == before
    assert git(fork, "status", "--porcelain") == ""
    pq(fork, "undo")
    pq(fork, "redo")
    assert queue_bytes(fork) == before
    assert git(fork, "status", "--porcelain") == ""


LINE_ENDS_BASE = {"f.txt": "a\nb\nc\n", "g.txt": "x\n", "h.txt": "1\n2\n"}


def clone_for_git(tmp: Path, up: Path, fork: Path) -> Path:
    """A clone of `up` with the fork's branch `paddle` checked out, for `git rebase` to
    do what pq does on the fork (made before `pq init`: the same commits)."""
    by_git = tmp / "by-git"
    git(tmp, "clone", "-q", "-o", "upstream", str(up), str(by_git))
    git(by_git, "fetch", "-q", str(fork), "paddle:paddle")
    git(by_git, "checkout", "-q", "paddle")
    return by_git


def line_ends_fork(tmp: Path, attributes: str) -> tuple[Path, Path]:
    """A fork whose patch edits f.txt and h.txt (g.txt untouched), a clone of it for git's
    rebase made before `pq init`, and upstream then adding `attributes` as .gitattributes,
    fetched by both: (fork, the clone)."""
    up = make_upstream(tmp / "upstream", LINE_ENDS_BASE)
    fork = make_fork(tmp, up)
    write(fork, "f.txt", "a\nB\nc\n")
    write(fork, "h.txt", "1\n2\n3\n")
    commit_all(fork, "patch f and h")
    by_git = clone_for_git(tmp, up, fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, ".gitattributes", attributes)
    commit_all(up, "upstream: line ends")
    for repo in (fork, by_git):
        git(repo, "fetch", "-q", "upstream")
    return fork, by_git


@pytest.mark.parametrize("attributes", ["*.txt eol=crlf\n", "* text=auto eol=crlf\n"])
def test_files_the_patches_wrote_follow_attributes_upstream_changed_as_with_git(
        tmp_path: Path, attributes: str) -> None:
    """Upstream adds a .gitattributes that changes line ends: git's rebase writes every
    file it picks with them, so pq writes the patches' files again too (the checkout that
    lands the stack leaves a file whose blob did not change alone); a file no patch
    touches stays as it is, in both."""
    fork, by_git = line_ends_fork(tmp_path, attributes)
    pq(fork, "rebase", "upstream/main")
    git(by_git, "rebase", "-q", "upstream/main")
    for name in ("f.txt", "g.txt", "h.txt"):
        assert (fork / name).read_bytes() == (by_git / name).read_bytes(), name
    assert (fork / "f.txt").read_bytes() != b"a\nB\nc\n"
    assert git(fork, "status", "--porcelain", "--", "f.txt", "g.txt", "h.txt") == ""


def test_a_file_git_is_told_not_to_look_at_keeps_its_bytes_when_attributes_change(
        tmp_path: Path) -> None:
    """An assume-unchanged file with an edit of the user's (which `git diff` does not
    show): the rewrite for new attributes leaves it, and its edit, alone."""
    fork, _ = line_ends_fork(tmp_path, "*.txt eol=crlf\n")
    git(fork, "update-index", "--assume-unchanged", "h.txt")
    write(fork, "h.txt", "1\n2\n3\nthe user's\n")
    pq(fork, "rebase", "upstream/main")
    assert (fork / "h.txt").read_bytes() == b"1\n2\n3\nthe user's\n"
    assert (fork / "f.txt").read_bytes() == b"a\r\nB\r\nc\r\n"


@pytest.mark.parametrize("upstream_attributes", ["*.txt eol=crlf\n", None])
def test_a_conflict_stop_writes_earlier_patches_files_under_the_new_attributes_as_git(
        tmp_path: Path, upstream_attributes: str | None) -> None:
    """Upstream adds (or takes out) an eol=crlf rule, and the rebase stops at patch 2: the
    file patch 1 added is on disk as git's rebase leaves it (git picked it under the new
    rule), also when its stat data is stale (the repository copied), so editing it there
    commits what git would commit. The checkout that shows the conflict left it alone."""
    base = {"a.txt": "1\n2\n3\n", ".gitattributes": "" if upstream_attributes else
            "*.txt text eol=crlf\n"}
    up = make_upstream(tmp_path / "upstream", base)
    fork = make_fork(tmp_path, up)
    write(fork, "new.txt", "one\ntwo\n" if upstream_attributes else "one\r\ntwo\r\n")
    commit_all(fork, "patch 1: add new.txt")  # on disk as a checkout would write it
    write(fork, "a.txt", "1\n2\nfork\n")
    commit_all(fork, "patch 2: edit a.txt")
    by_git = clone_for_git(tmp_path, up, fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, ".gitattributes", upstream_attributes or "")
    write(up, "a.txt", "1\n2\nup\n")
    commit_all(up, "upstream: line ends, and a.txt")
    for repo in (fork, by_git):
        git(repo, "fetch", "-q", "upstream")
    for repo in (fork, by_git):  # copied: every file's stat data is stale (a new inode)
        shutil.move(repo, tmp_path / "moved")
        shutil.copytree(tmp_path / "moved", repo, symlinks=True)
        shutil.rmtree(tmp_path / "moved")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    assert subprocess.run(["git", "rebase", "-q", "upstream/main"], cwd=by_git,
                          capture_output=True).returncode == 1
    assert (fork / "new.txt").read_bytes() == (by_git / "new.txt").read_bytes()
    for repo in (fork, by_git):
        write(repo, "a.txt", "1\n2\nboth\n")
        with (repo / "new.txt").open("ab") as f:
            f.write(b"three\n")
        git(repo, "add", "a.txt", "new.txt")
    pq(fork, "rebase", "--continue")
    assert subprocess.run(["git", "rebase", "--continue"], cwd=by_git, capture_output=True,
                          env={**os.environ, "GIT_EDITOR": "true"}).returncode == 0
    assert git(fork, "rev-parse", "HEAD~2:new.txt", "HEAD~1:a.txt") == git(
        by_git, "rev-parse", "HEAD~1:new.txt", "HEAD:a.txt")


def test_a_conflict_outside_a_sparse_checkout_names_git_add_sparse(tmp_path: Path) -> None:
    """Sparse checkout (`csrc`, patches/ and series.yaml in it): a patch to pkg/, outside,
    conflicts. Its hint said `git add pkg/__init__.py`, which git refuses there ("outside
    of your sparse-checkout definition"), and `--continue` repeated it; `git add
    --sparse` is what takes it."""
    up = make_upstream(tmp_path / "upstream", {"csrc/op.cc": "int f();\n",
                                               "pkg/__init__.py": "a = 1\nb = 2\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "pkg/__init__.py", "a = 11\nb = 2\n")
    commit_all(fork, "glue: a is 11")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(fork, "sparse-checkout", "set", "--no-cone", "/csrc/", "/patches/", "/series.yaml")
    assert not (fork / "pkg").exists()
    write(up, "pkg/__init__.py", "a = 12\nb = 2\n")
    commit_all(up, "upstream: a is 12")
    git(fork, "fetch", "-q", "upstream")
    stopped = pq(fork, "rebase", "upstream/main", ok=False)
    assert "`git add --sparse pkg/__init__.py`" in stopped.output, stopped.output
    write(fork, "pkg/__init__.py", "a = 13\nb = 2\n")
    again = pq(fork, "rebase", "--continue", ok=False)
    assert "`git add --sparse pkg/__init__.py`" in again.output, again.output
    write(fork, "pkg/__init__.py", "<<<<<<< ours\na = 13\n=======\na = 12\n>>>>>>> theirs\n")
    git(fork, "add", "--sparse", "pkg/__init__.py")
    marked = pq(fork, "rebase", "--continue", ok=False)  # the markers' refusal, too
    assert "conflict marker added" in marked.output, marked.output
    assert "`git add --sparse pkg/__init__.py`" in marked.output, marked.output
    write(fork, "pkg/__init__.py", "a = 13\nb = 2\n")
    unadded = pq(fork, "rebase", "--continue", ok=False)  # and the one of a change not added
    assert "are not added (`git add --sparse` what" in unadded.output, unadded.output
    git(fork, "add", "--sparse", "pkg/__init__.py")
    pq(fork, "rebase", "--continue")
    assert git(fork, "show", "HEAD~1:pkg/__init__.py") == "a = 13\nb = 2"


def test_a_file_named_head_at_the_top_is_no_revision(tmp_path: Path) -> None:
    """A top-level file named `HEAD` (or `ORIG_HEAD`): git took `HEAD` in a diff of the
    landing for both a revision and that file, and every `pq rebase` failed (exit 2)."""
    up = make_upstream(tmp_path / "upstream", {"HEAD": "ref\n", "ORIG_HEAD": "o\n",
                                               "f.txt": "1\n2\n3\n4\n5\n6\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "f.txt", "1\nP\n3\n4\n5\n6\n")
    write(fork, "HEAD", "ref\nfork\n")
    commit_all(fork, "edit f.txt and HEAD")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, "f.txt", "1\n2\n3\n4\nU\n6\n")
    commit_all(up, "upstream: f.txt")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    assert (fork / "f.txt").read_text() == "1\nP\n3\n4\nU\n6\n"
    assert (fork / "HEAD").read_text() == "ref\nfork\n"
    pq(fork, "check")
