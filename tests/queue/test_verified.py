"""The export cache (pq.queue.verified): a state checked once is not exported again, and
no change to the branch or the queue files can make pq skip a check it needs."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, migrate, one_patch_fork, pq, snapshot_queue, write

from pq.git.repo import Git
from pq.queue import verified
from pq.queue.files import read_worktree

CACHE = Path(".git/pq") / verified.CACHE_FILE


def _fork(tmp_path: Path) -> Path:
    fork = make_fork(tmp_path)
    migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    return fork


def _keys(fork: Path) -> list[str]:
    return list(json.loads((fork / CACHE).read_text())["verified"])


def test_a_no_op_export_is_remembered_and_answers_the_next_one(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    assert "already up to date" in pq(fork, "export").output
    with Git.open(fork) as g:
        assert verified.known(g, g.head(), read_worktree(g))
    assert len(_keys(fork)) == 1
    before = snapshot_queue(fork)
    assert "already up to date" in pq(fork, "export").output  # from the cache
    assert snapshot_queue(fork) == before
    assert len(_keys(fork)) == 1


def test_an_amended_commit_is_exported_and_refused_by_rebase(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    pq(fork, "export")  # remembered
    # A commit on top, not exported: HEAD is another commit, so the entry does not apply.
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "python-glue: change the helper")
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code != 0 and "differ" in result.output
    assert "already up to date" not in pq(fork, "export").output
    assert any("change-the-helper" in p for p in snapshot_queue(fork))


def test_a_hand_edited_patch_file_is_still_refused(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    pq(fork, "export")  # remembered for the committed bytes
    patch = sorted((fork / "patches").iterdir())[0]
    patch.write_bytes(patch.read_bytes().replace(b"+", b"+ ", 1))
    result = pq(fork, "export", ok=False)
    assert result.exit_code != 0 and "uncommitted edits" in result.output


def test_a_forged_or_broken_cache_changes_nothing(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    (fork / CACHE).parent.mkdir(exist_ok=True)
    (fork / CACHE).write_text("{not json")
    assert "already up to date" in pq(fork, "export").output
    # An entry for this queue at another commit does not vouch for this one.
    write(fork, "pkg/util.py", "def helper():\n    return 4\n")
    commit_all(fork, "python-glue: another helper")
    with Git.open(fork) as g:
        old = g.resolve("HEAD~1")
        verified.remember(g, old, read_worktree(g))
        assert not verified.known(g, g.head(), read_worktree(g))
    assert "already up to date" not in pq(fork, "export").output


def test_force_is_not_remembered(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    (fork / CACHE).unlink(missing_ok=True)  # what `init --commit` committed
    pq(fork, "export", "--force")
    assert not (fork / CACHE).exists()


def _fork_with_bookkeeping_inside(tmp_path: Path) -> Path:
    """A fork whose stack holds every kind of change, an empty patch commit and a
    bookkeeping commit between patches, exported and committed (so remembered), with
    upstream moved on."""
    fork = _fork(tmp_path)  # ... patches, bookkeeping (init --commit)
    git(fork, "commit", "-q", "--allow-empty", "-m", "python-glue: an empty marker")
    write(fork, "pkg/extra.py", "EXTRA = 1\n")
    commit_all(fork, "python-glue: add extra")
    pq(fork, "export", "--commit")  # ... bookkeeping again, at the tip
    assert "already up to date" in pq(fork, "export").output  # remembered
    upstream = tmp_path / "upstream"
    write(upstream, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    return x  # up\n")
    commit_all(upstream, "upstream: touch pkg")
    git(fork, "fetch", "-q", "upstream")
    return fork


def test_a_rebase_of_a_verified_queue_takes_its_diffs_from_the_patch_files(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The same rebase twice from the same commit: once with the queue known to be the
    stack's export (the diffs come from the patch files: no `diff-tree -p` of the stack),
    once without (the stack is diffed). Both land the same trees and queue files."""
    fork = _fork_with_bookkeeping_inside(tmp_path)
    tip = git(fork, "rev-parse", "HEAD").strip()
    results = []
    for cached in (True, False):
        git(fork, "checkout", "-q", "-B", f"try-{cached}", tip)
        if not cached:
            (fork / CACHE).unlink()
        trace = tmp_path / f"trace-{cached}"
        monkeypatch.setenv("GIT_TRACE", str(trace))
        pq(fork, "rebase", "upstream/main")
        monkeypatch.delenv("GIT_TRACE")
        diffed = sum(1 for ln in trace.read_text().splitlines()
                     if "diff-tree --stdin --always --root -p" in ln)
        log = git(fork, "log", "--format=%T %s%n%b", "upstream/main..HEAD")
        results.append((log, snapshot_queue(fork), diffed))
    assert results[0][:2] == results[1][:2]
    assert "an empty marker" in results[0][0]
    assert results[0][2] == results[1][2] - 1  # the stack's own diff, not run


def _remembered_as_exported(fork: Path) -> None:
    """HEAD and the queue files are remembered, and rightly: with the cache gone, a full
    `pq export` of HEAD finds exactly these bytes (nothing to write)."""
    with Git.open(fork) as g:
        assert verified.known(g, g.head(), read_worktree(g))
    before = snapshot_queue(fork)
    (fork / CACHE).unlink()
    assert "already up to date" in pq(fork, "export").output
    assert snapshot_queue(fork) == before


def test_a_rebase_remembers_the_queue_it_landed(tmp_path: Path) -> None:
    fork = _fork_with_bookkeeping_inside(tmp_path)
    (fork / CACHE).unlink()
    assert "patch files changed" in pq(fork, "rebase", "upstream/main").output
    _remembered_as_exported(fork)


def test_a_rebase_continued_after_a_conflict_remembers_the_queue_it_landed(
        tmp_path: Path) -> None:
    fork = one_patch_fork(tmp_path, {"pkg/__init__.py": "import paddle\nVALUE = 1\n"},
                          {"pkg/__init__.py": "import torch\nVALUE = 2\n"})
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "pkg/__init__.py", "import paddle\nVALUE = 2\n")
    git(fork, "add", "pkg/__init__.py")
    pq(fork, "rebase", "--continue")
    _remembered_as_exported(fork)


def test_a_committed_export_remembers_the_queue_it_committed(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    write(fork, "pkg/extra.py", "EXTRA = 1\n")
    commit_all(fork, "python-glue: add extra")
    head = git(fork, "rev-parse", "HEAD").strip()
    pq(fork, "export", "--commit")
    assert git(fork, "rev-parse", "HEAD~1").strip() == head  # a bookkeeping commit on it
    _remembered_as_exported(fork)


def test_a_rebase_check_of_stale_patch_headers_does_not_stop_export_rewriting_them(
        tmp_path: Path) -> None:
    """A summary edited in series.yaml leaves the patch files' headers stale (the same
    commits: `pq rebase` takes them); `pq rebase` finding nothing to do must not vouch
    for them, so that `pq export` still writes the new header."""
    fork = _fork(tmp_path)
    text = (fork / "series.yaml").read_text()
    first = next(ln for ln in text.splitlines() if ln.strip().startswith("summary:"))
    indent = first[:len(first) - len(first.lstrip())]
    write(fork, "series.yaml", text.replace(first, f"{indent}summary: turned on by hand", 1))
    assert "already up to date" in pq(fork, "rebase", "upstream/main").output
    assert "already up to date" not in pq(fork, "export").output
    assert any(b"Description: turned on by hand\n" in data
               for data in snapshot_queue(fork).values())


def _plain_fork(tmp_path: Path) -> Path:
    """A repository whose `fork` branch sits on `upstream` (a local branch), one file."""
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, "f.txt", "line1\nline2\nline3\n")
    commit_all(repo, "base")
    git(repo, "branch", "upstream")
    git(repo, "checkout", "-q", "-b", "fork")
    return repo


def test_a_landed_commit_that_changes_only_queue_files_is_not_vouched_for(
        tmp_path: Path) -> None:
    """Rebased with --force onto a ref that holds the branch (its queue files too), a
    conflict resolved by keeping nothing of the patch leaves a commit that only removes
    queue files: an export takes it for pq's bookkeeping, so the landing's empty patch
    file for it is no export, and `pq export` must still drop it."""
    repo = _plain_fork(tmp_path)
    write(repo, "a.txt", "a\n")
    commit_all(repo, "python-glue: add a")
    pq(repo, "init", "--upstream", "upstream", "--commit")
    git(repo, "branch", "up")
    write(repo, "f.txt", "line1\nX\nline3\n")
    commit_all(repo, "python-glue: change line2")
    pq(repo, "export", "--commit")
    git(repo, "checkout", "-q", "up")
    write(repo, "f.txt", "line1\nY\nline3\n")
    commit_all(repo, "upstream moved")
    git(repo, "checkout", "-q", "fork")
    assert pq(repo, "rebase", "--force", "up", ok=False).exit_code == 1
    git(repo, "checkout", "--ours", "f.txt")
    git(repo, "add", "f.txt")
    pq(repo, "rebase", "--continue")
    with Git.open(repo) as g:
        assert not verified.known(g, g.head(), read_worktree(g))
    assert "already up to date" not in pq(repo, "export").output


def test_a_committed_export_whose_next_export_refuses_is_not_vouched_for(
        tmp_path: Path) -> None:
    """A commit whose message names two patches (squashed after `pq apply`) is exported
    while no entry has those names yet; the next export refuses it, and must still."""
    repo = _plain_fork(tmp_path)
    write(repo, "a.txt", "a\n")
    git(repo, "add", "a.txt")
    git(repo, "commit", "-q", "-m", "squashed\n\nPq-Patch: 0001-a.patch\n\n"
        "Pq-Patch: 0002-b.patch")
    write(repo, "b.txt", "b\n")
    git(repo, "add", "b.txt")
    git(repo, "commit", "-q", "-m", "other\n\nPq-Patch: 0001-a.patch")
    pq(repo, "init", "--upstream", "upstream", "--commit")
    result = pq(repo, "export", ok=False)
    assert result.exit_code == 2 and "carries a `Pq-Patch:` line for each" in result.output


def test_a_check_of_names_swapped_in_the_working_tree_is_not_vouched_for(
        tmp_path: Path) -> None:
    """Two patch files' names swapped in the working tree (files and series.yaml, not
    committed): `pq rebase` finding nothing to do exported them with only those files as
    evidence; `pq export` weighs the committed ones too and refuses, and must still."""
    repo = _plain_fork(tmp_path)
    for name in ("one", "two"):
        write(repo, f"{name}.txt", f"{name}\n")
        commit_all(repo, f"python-glue: {name}")
    pq(repo, "init", "--upstream", "upstream", "--commit")
    one, two = (repo / "patches/0001-python-glue-one.patch",
                repo / "patches/0002-python-glue-two.patch")
    data_one, data_two = one.read_bytes(), two.read_bytes()
    one.write_bytes(data_two)
    two.write_bytes(data_one)
    series = (repo / "series.yaml").read_text()
    write(repo, "series.yaml", series.replace("name: 0001-python-glue-one", "name: @")
          .replace("name: 0002-python-glue-two", "name: 0001-python-glue-one")
          .replace("name: @", "name: 0002-python-glue-two"))
    before = pq(repo, "export", ok=False)
    assert before.exit_code == 2, before.output  # what a full export says
    (repo / CACHE).unlink(missing_ok=True)
    assert "already up to date" in pq(repo, "rebase", "upstream").output
    again = pq(repo, "export", ok=False)
    assert again.exit_code == 2 and again.output == before.output
