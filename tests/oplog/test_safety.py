"""The operation log, undo/redo and the repository lock, on real repositories."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from gitrepo import commit_all, git, pq, series_fork, write
from test_faults import PQ, base_fork, conflict_fork, repo_state, run_pq

from pq.git.repo import Git
from pq.oplog import log as oplog
from pq.oplog.txn import Transaction


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    """A fork with a committed two-patch series and an upstream that moved on."""
    fork = series_fork(
        tmp_path, ("build: enable compat", {"setup.py": "import paddle\npaddle.enable_compat()\n"}),
        ("python-glue: scoped compat", {"pkg/__init__.py": "import torch  # scoped compat\n"}))
    write(tmp_path / "upstream", "csrc/extra.cc", "int g() { return 2; }\n")
    commit_all(tmp_path / "upstream", "upstream: extra")
    git(fork, "fetch", "-q", "upstream")
    return fork


def log_json(fork: Path) -> dict:  # type: ignore[type-arg]
    return json.loads(pq(fork, "log", "--json").output)


def one_line_error(result: object, code: int, *needles: str) -> str:
    out = result.output  # type: ignore[attr-defined]
    assert result.exit_code == code, out  # type: ignore[attr-defined]
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("pq: error: "), out
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def new_commit(fork: Path, text: str = "def helper():\n    return 3\n") -> str:
    write(fork, "pkg/util.py", text)
    return commit_all(fork, "python-glue: helper returns 3")


def work_on_main(fork: Path) -> str:
    """The user's own git work beside pq's: a branch `feature` at main, and a commit on
    main (its id), then back on paddle."""
    git(fork, "branch", "feature", "main")
    git(fork, "checkout", "-q", "main")
    write(fork, "NOTES.md", "main's own work\n")
    mine = commit_all(fork, "work on main")
    git(fork, "checkout", "-q", "paddle")
    return mine


# -- the log ------------------------------------------------------------------------------


def test_log_lists_operations_with_what_they_changed(fork: Path) -> None:
    before = new_commit(fork)
    pq(fork, "export", "--commit")
    after = git(fork, "rev-parse", "HEAD")
    data = log_json(fork)
    ops = data["operations"]
    assert [op["command"] for op in ops] == ["pq export --commit",
                                             "pq init --upstream upstream/main --commit"]
    top = ops[0]
    assert top["id"] == 2 and top["status"] == "done" and top["kind"] == "command"
    assert top["refs"] == [{"ref": "refs/heads/paddle", "old": before, "new": after}]
    assert {"path": "patches/0003-python-glue-helper-returns-3.patch",
            "change": "added"} in top["files"]
    assert {"path": "series.yaml", "change": "modified"} in top["files"]
    assert data["undo"] == 2 and data["redo"] is None
    text = pq(fork, "log").output
    assert "pq export" in text and "refs/heads/paddle" in text
    assert "`pq undo` restores the state before operation 2" in text
    assert pq(fork, "log", "-n", "1", "--json").output.count('"id"') == 1


def test_the_newest_n_are_the_whole_logs_first_n(fork: Path) -> None:
    """`pq log -n N` reads the snapshots of the N entries it shows only; their statuses
    (undone, say) rest on the entries after them, and come out as in the whole log."""
    new_commit(fork)
    pq(fork, "export", "--commit")
    pq(fork, "rebase", "upstream/main")
    pq(fork, "undo")
    pq(fork, "undo")
    pq(fork, "redo")
    whole = log_json(fork)
    assert [op["status"] for op in whole["operations"]][:5] == [
        "done", "done", "done", "undone", "done"]  # redo, undo, undo, rebase, export
    for n in range(len(whole["operations"]) + 2):
        part = json.loads(pq(fork, "log", "-n", str(n), "--json").output)
        assert part == {**whole, "operations": whole["operations"][:n]}
    lines = pq(fork, "log").output.splitlines()
    rows = [i for i, ln in enumerate(lines) if not ln.startswith("         ")]  # a row's
    for n in range(len(rows)):  # first line, or the closing one (`pq undo` restores ...)
        assert pq(fork, "log", "-n", str(n)).output.splitlines() == (
            lines[:rows[n]] + ([lines[-1]] if n else []))


def test_operations_that_change_nothing_are_not_logged(fork: Path) -> None:
    pq(fork, "export")
    pq(fork, "export", "--commit")
    assert [op["id"] for op in log_json(fork)["operations"]] == [1]


# -- undo after each mutating command ------------------------------------------------------


@pytest.mark.parametrize("command", [
    ["export"],
    ["export", "--commit"],
    ["apply", "--onto", "upstream/main"],
    ["apply", "--onto", "upstream/main", "--branch", "rebuilt"],
    ["init", "--upstream", "upstream/main", "--force", "--commit"],
])
def test_undo_restores_the_exact_state(fork: Path, command: list[str]) -> None:
    if command[0] in ("export", "init"):
        new_commit(fork)
    write(fork, "notes.txt", "untracked notes survive\n")
    expected = repo_state(fork)
    pq(fork, *command)
    assert repo_state(fork) != expected
    result = pq(fork, "undo")
    assert "undid operation 2" in result.output
    assert repo_state(fork) == expected
    assert git(fork, "status", "--porcelain") == "?? notes.txt"


def test_an_executable_bit_git_does_not_see_is_no_change_since(fork: Path) -> None:
    """core.fileMode=false (a FAT or 9p mount shows every file executable): `git status` is
    clean, yet undo refused ("series.yaml, patches/ ... changed since"), naming no file."""
    git(fork, "config", "core.fileMode", "false")
    before = git(fork, "rev-parse", "HEAD")
    new_commit(fork)
    pq(fork, "export", "--commit")
    for path in [fork / "series.yaml", *(fork / "patches").iterdir()]:
        path.chmod(0o755)
    assert git(fork, "status", "--porcelain") == ""
    pq(fork, "undo")
    assert git(fork, "rev-parse", "HEAD~1") == before


def test_undo_walks_back_and_redo_walks_forward(fork: Path) -> None:
    states = [repo_state(fork)]
    new_commit(fork)
    states.append(repo_state(fork))
    pq(fork, "export", "--commit")
    states.append(repo_state(fork))
    pq(fork, "apply", "--onto", "upstream/main")
    states.append(repo_state(fork))
    pq(fork, "undo")
    assert repo_state(fork) == states[2]
    pq(fork, "undo")
    assert repo_state(fork) == states[1]
    # The next is pq init, but the branch has moved since (the user's own commit).
    one_line_error(pq(fork, "undo", ok=False), 2, "refs/heads/paddle has moved",
                   "since operation 1")
    pq(fork, "undo", "--force")
    assert not (fork / "series.yaml").exists()
    one_line_error(pq(fork, "undo", ok=False), 2, "nothing to undo")
    pq(fork, "redo")
    assert repo_state(fork) == states[1]
    pq(fork, "redo")
    assert repo_state(fork) == states[2]
    pq(fork, "redo")
    assert repo_state(fork) == states[3]
    one_line_error(pq(fork, "redo", ok=False), 2, "nothing to redo")
    statuses = {op["id"]: op["status"] for op in log_json(fork)["operations"]}
    assert statuses[1] == statuses[2] == statuses[3] == "done"


def test_a_new_operation_clears_redo(fork: Path) -> None:
    new_commit(fork)
    pq(fork, "export", "--commit")
    pq(fork, "undo")
    new_commit(fork, "def helper():\n    return 4\n")
    pq(fork, "export")
    one_line_error(pq(fork, "redo", ok=False), 2, "nothing to redo")


def test_undo_is_itself_undoable(fork: Path) -> None:
    new_commit(fork)
    pq(fork, "export", "--commit")
    exported = repo_state(fork)
    result = json.loads(pq(fork, "undo", "--json").output)
    assert result["kind"] == "undo" and result["target"] == 2
    undone = repo_state(fork)
    assert undone != exported
    pq(fork, "undo", "--op", str(result["operation"]))  # undo the undo
    assert repo_state(fork) == exported
    ops = log_json(fork)["operations"]
    assert ops[0]["kind"] == "restore" and ops[0]["target"] == result["operation"]
    assert next(op for op in ops if op["id"] == 2)["status"] == "done"
    pq(fork, "undo")  # and plain undo now undoes the export again
    assert repo_state(fork) == undone


def test_undo_op_goes_back_several_operations_at_once(fork: Path) -> None:
    new_commit(fork)
    start = repo_state(fork)
    pq(fork, "export", "--commit")
    pq(fork, "apply", "--onto", "upstream/main", "--branch", "rebuilt")
    pq(fork, "undo", "--op", "2")
    assert repo_state(fork) == start
    statuses = {op["id"]: op["status"] for op in log_json(fork)["operations"]}
    assert statuses == {1: "done", 2: "undone", 3: "undone", 4: "done"}
    one_line_error(pq(fork, "undo", "--op", "99", ok=False), 2, "no operation 99")


# -- undo never loses work ---------------------------------------------------------------------


def test_undo_keeps_uncommitted_changes_to_other_files(fork: Path) -> None:
    pq(fork, "apply", "--onto", "upstream/main")
    write(fork, "README.md", "my local edit\n")  # a file neither tip changes
    write(fork, "scratch/new.txt", "untracked\n")
    pq(fork, "undo")
    assert (fork / "README.md").read_text() == "my local edit\n"
    assert (fork / "scratch/new.txt").read_text() == "untracked\n"
    assert git(fork, "status", "--porcelain") == "M README.md\n?? scratch/"  # (stripped)


def test_undo_keeps_what_is_staged_in_other_files(fork: Path) -> None:
    """Undo moved the branch with `git reset --keep`, which unstaged every other file: a
    partly staged file lost its split, a newly added one became untracked."""
    new_commit(fork)
    pq(fork, "export", "--commit")
    write(fork, "README.md", "staged\n")
    git(fork, "add", "README.md")
    write(fork, "README.md", "staged\nand not\n")
    write(fork, "notes.txt", "new\n")
    git(fork, "add", "notes.txt")
    staged = git(fork, "diff", "--cached")
    pq(fork, "undo")
    assert git(fork, "status", "--porcelain") == "MM README.md\nA  notes.txt"
    assert git(fork, "diff", "--cached") == staged
    pq(fork, "redo")
    assert git(fork, "diff", "--cached") == staged


def test_undo_refuses_to_overwrite_uncommitted_changes(fork: Path) -> None:
    pq(fork, "apply", "--onto", "upstream/main")
    write(fork, "csrc/extra.cc", "my edit of a file the undo removes\n")
    state = repo_state(fork)
    records = len(oplog.read(Git.open(fork)))
    one_line_error(pq(fork, "undo", ok=False), 2,
                   "uncommitted changes in csrc/extra.cc would be overwritten",
                   "operation 2", "git stash")
    assert repo_state(fork) == state
    assert len(oplog.read(Git.open(fork))) == records  # the refused undo left no trace
    assert not (fork / ".git/pq/lock").exists()


def test_undo_refuses_when_the_branch_moved_since(fork: Path) -> None:
    new_commit(fork)
    pq(fork, "export", "--commit")
    write(fork, "pkg/more.py", "x = 1\n")
    mine = commit_all(fork, "my own commit after the export")
    one_line_error(pq(fork, "undo", ok=False), 2, "refs/heads/paddle has moved",
                   "since operation 2", "--force")
    assert git(fork, "rev-parse", "HEAD") == mine
    pq(fork, "undo", "--force")
    assert git(fork, "rev-parse", "HEAD") != mine
    pq(fork, "redo")  # the forced undo logged the state it threw away
    assert git(fork, "rev-parse", "HEAD") == mine


def test_undo_refuses_when_queue_files_were_edited_since(fork: Path) -> None:
    new_commit(fork)
    pq(fork, "export")
    series = fork / "series.yaml"
    series.write_text(series.read_text() + "# my note\n")
    one_line_error(pq(fork, "undo", ok=False), 2, "series.yaml, patches/, mre/ or .pq/ changed")
    pq(fork, "undo", "--force")
    pq(fork, "redo")
    assert series.read_text().endswith("# my note\n")


def test_undo_leaves_the_users_own_untracked_files_in_patches_alone(fork: Path) -> None:
    """Files in patches/ that are not *.patch are the user's: an untracked one counted as
    a queue edit (undo refused, naming none), and `--force` then deleted it."""
    new_commit(fork)
    pq(fork, "export", "--commit")
    notes = fork / "patches" / "README.md"
    notes.write_text("my notes\n")
    (fork / "patches" / "drafts").mkdir()
    (fork / "patches" / "drafts" / "idea.txt").write_text("later\n")
    pq(fork, "undo")  # the export
    pq(fork, "redo")
    pq(fork, "undo", "--op", "1")  # the init: patches/ holds no patch then
    assert notes.read_text() == "my notes\n"
    assert (fork / "patches" / "drafts" / "idea.txt").read_text() == "later\n"
    assert sorted(p.name for p in (fork / "patches").iterdir()) == ["README.md", "drafts"]
    pq(fork, "undo", "--op", str(log_json(fork)["operations"][0]["id"]))  # back again
    assert notes.read_text() == "my notes\n"
    assert git(fork, "status", "--porcelain") == "?? patches/README.md\n?? patches/drafts/"


def test_undo_puts_back_mre_files_an_operation_committed(fork: Path) -> None:
    """A bookkeeping commit carries mre/ as the working tree has it, untracked files and
    uncommitted edits too; undo moved the branch back and deleted them (or reverted the
    edit), since snapshots held series.yaml and patches/ only."""
    write(fork, "mre/gap/run.sh", "v1\n")
    commit_all(fork, "mre: v1")  # one more commit: the export below commits the queue
    pq(fork, "export", "--commit")
    new_commit(fork)
    write(fork, "mre/gap/run.sh", "v2, not committed\n")
    write(fork, "mre/new/notes.txt", "untracked\n")
    status = git(fork, "status", "--porcelain")
    assert status == "M mre/gap/run.sh\n?? mre/new/"  # (stripped)
    pq(fork, "export", "--commit")
    assert git(fork, "show", "HEAD:mre/new/notes.txt") == "untracked"
    pq(fork, "undo")
    assert (fork / "mre/gap/run.sh").read_text() == "v2, not committed\n"
    assert (fork / "mre/new/notes.txt").read_text() == "untracked\n"
    assert git(fork, "status", "--porcelain") == status
    pq(fork, "redo")
    assert git(fork, "status", "--porcelain") == ""


def test_undo_leaves_ignored_files_under_mre_and_runs_no_checkout_hook(fork: Path) -> None:
    """An MRE's ignored build output is no queue file (undo refused, then deleted it when
    forced); and undo's branch move ran the user's post-checkout hook, whose failure left
    the undo half done."""
    write(fork, ".gitignore", "mre/**/build/\n")
    write(fork, "mre/gap/run.sh", "echo run\n")
    commit_all(fork, "mre: gap")
    pq(fork, "export", "--commit")
    write(fork, "mre/gap/build/ext.so", b"\0binary\0" * 1000)
    write(fork, ".git/hooks/post-checkout", "#!/bin/sh\nexit 1\n", mode=0o755)
    pq(fork, "undo")
    pq(fork, "undo", "--force")  # the init: the branch moved by the commits after it
    assert (fork / "mre/gap/build/ext.so").read_bytes() == b"\0binary\0" * 1000


def test_an_entry_of_an_older_pq_leaves_mre_alone(fork: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """Snapshots of older versions held series.yaml and patches/ only: undoing such an entry
    read its missing mre/ files as "none" (undo refused, and --force deleted mre/)."""
    from pq.oplog import snapshot, txn

    def older_take(git: Git, commits: set[str] | None = None) -> dict:  # type: ignore[type-arg]
        snap = snapshot.take(git, commits)
        snap.pop("scope", None)
        snap["files"] = {p: v for p, v in snap["files"].items() if not p.startswith("mre/")}
        snap["index"] = [e for e in snap["index"] if "\tmre/" not in e]
        return snap

    write(fork, "mre/gap/run.sh", "echo run\n")
    commit_all(fork, "mre: gap")
    pq(fork, "export", "--commit")
    write(fork, "mre/gap/notes.txt", "untracked\n")
    with monkeypatch.context() as m:
        m.setattr(txn, "take", older_take)
        pq(fork, "rebase", "upstream/main")
    status = git(fork, "status", "--porcelain")
    pq(fork, "undo")
    assert git(fork, "status", "--porcelain") == status == "?? mre/gap/notes.txt"
    assert (fork / "mre/gap/run.sh").read_text() == "echo run\n"


def test_undo_never_moves_a_branch_another_worktree_has_checked_out(fork: Path) -> None:
    """`git checkout -B` (git 2.39) and `update-ref` moved or deleted such a branch, and
    that worktree's clean files showed the undo as staged changes."""
    pq(fork, "rebase", "upstream/main")
    git(fork, "checkout", "-q", "-b", "side")
    wt = fork.parent / "wt"
    git(fork, "worktree", "add", "-q", str(wt), "paddle")
    tip = git(fork, "rev-parse", "paddle")
    refused = pq(fork, "undo", "--force", ok=False)
    assert refused.exit_code == 2, refused.output
    assert f"refs/heads/paddle is checked out in the worktree {wt}" in refused.output
    assert git(fork, "rev-parse", "paddle") == tip and git(wt, "status", "--porcelain") == ""
    git(fork, "worktree", "remove", str(wt))
    pq(fork, "undo", "--force")
    assert git(fork, "rev-parse", "paddle") != tip


def test_undo_data_survives_gc(fork: Path) -> None:
    new_commit(fork)
    pq(fork, "export")  # uncommitted queue files: their bytes live only in the log
    exported = repo_state(fork)
    pq(fork, "undo")
    git(fork, "reflog", "expire", "--expire=now", "--all")
    git(fork, "gc", "-q", "--prune=now")
    pq(fork, "redo")
    assert repo_state(fork) == exported


def first_checkpoint_after_logging(fork: Path, args: list[str]) -> int:
    """The checkpoint right after the command's log record is in place."""
    trial = fork.parent / "trial"
    shutil.copytree(fork, trial, symlinks=True)
    log = fork.parent / "checkpoints.log"
    assert run_pq(trial, args, PQ_FAULT_LOG=str(log)).returncode == 0
    labels = [ln.split(" ", 1)[1] for ln in log.read_text().splitlines()]
    shutil.rmtree(trial)
    log.unlink()
    return labels.index("git update-ref") + 2  # the first: the log entry at the start


def test_an_interrupted_operation_shows_and_undoes(fork: Path) -> None:
    new_commit(fork)
    expected = repo_state(fork)
    k = first_checkpoint_after_logging(fork, ["export", "--commit"]) + 2
    proc = run_pq(fork, ["export", "--commit"], PQ_FAULT_AT=str(k))
    assert proc.returncode == -9
    ops = log_json(fork)["operations"]
    assert ops[0]["status"] == "interrupted" and ops[0]["refs"] == []
    assert "interrupted" in pq(fork, "log").output
    pq(fork, "undo")
    assert repo_state(fork) == expected


def test_undo_of_an_interrupted_operation_leaves_branches_the_user_made_or_moved(
        fork: Path) -> None:
    """Killed after its log entry: no `after` said what it changed, so the present was
    taken for it, and `pq undo` reset every branch the user made or moved since (a commit
    on main, a new branch: gone from every branch, exit 0). Only the command's own refs
    go back, and its branch only where pq's commit is still its tip."""
    new_commit(fork)
    k = first_checkpoint_after_logging(fork, ["export", "--commit"]) + 2
    assert run_pq(fork, ["export", "--commit"], PQ_FAULT_AT=str(k)).returncode == -9
    main = git(fork, "rev-parse", "main")
    mine = work_on_main(fork)
    pq(fork, "undo")
    assert git(fork, "rev-parse", "main") == mine != main
    assert git(fork, "rev-parse", "feature") == main
    # A commit on the killed command's own branch since: refused, not thrown away.
    k = first_checkpoint_after_logging(fork, ["export", "--commit"]) + 2
    assert run_pq(fork, ["export", "--commit"], PQ_FAULT_AT=str(k)).returncode == -9
    write(fork, "pkg/util.py", "def later():\n    return 4\n")
    tip = commit_all(fork, "pq: update series")  # the subject pq names for a hand commit
    refused = pq(fork, "undo", ok=False)
    assert refused.exit_code == 2 and "refs/heads/paddle has moved" in refused.output
    assert "a commit no pq command wrote" in refused.output
    assert git(fork, "rev-parse", "paddle") == tip


@pytest.mark.parametrize("spelled", [["-b", "NEW"], ["-bNEW"], ["--branch=NEW"]])
def test_undo_of_a_killed_apply_deletes_the_branch_it_made(fork: Path,
                                                           spelled: list[str]) -> None:
    """Killed after `pq apply -bNEW` made NEW: the command's own branch is read from its
    command line in each spelling click takes (`-bNEW` was left behind)."""
    before = git(fork, "for-each-ref", "refs/heads")
    trial = fork.parent / "trial"
    shutil.copytree(fork, trial, symlinks=True)
    log = fork.parent / "checkpoints.log"
    assert run_pq(trial, ["apply", *spelled], PQ_FAULT_LOG=str(log)).returncode == 0
    labels = [ln.split(" ", 1)[1] for ln in log.read_text().splitlines()]
    k = len(labels) - labels[::-1].index("git update-ref")  # the last record's write
    assert run_pq(fork, ["apply", *spelled], PQ_FAULT_AT=str(k)).returncode == -9
    assert git(fork, "rev-parse", "--verify", "-q", "NEW")
    pq(fork, "undo")
    assert git(fork, "for-each-ref", "refs/heads") == before


def test_undo_of_a_killed_rebase_refuses_a_commit_made_before_the_next_operation(
        fork: Path) -> None:
    """A rebase killed at its last log write (landed), a commit of the user's, then
    `pq export --commit` and two undos: the second took the user's commit away without a
    word (what the killed rebase left was read from the next operation's `before`, which
    holds that commit)."""
    trial = fork.parent / "trial"
    shutil.copytree(fork, trial, symlinks=True)
    log = fork.parent / "checkpoints.log"
    assert run_pq(trial, ["rebase", "upstream/main"], PQ_FAULT_LOG=str(log)).returncode == 0
    k = len(log.read_text().splitlines())
    assert run_pq(fork, ["rebase", "upstream/main"], PQ_FAULT_AT=str(k)).returncode == -9
    mine = new_commit(fork)
    pq(fork, "export", "--commit")
    pq(fork, "undo")
    refused = pq(fork, "undo", ok=False)
    assert refused.exit_code == 2 and "a commit no pq command wrote" in refused.output
    assert git(fork, "rev-parse", "paddle") == mine


def test_undo_op_leaves_branches_no_operation_since_changed(fork: Path) -> None:
    """`pq undo --op N` put back every ref that differed from N's `before`: a branch the
    user made, and main's commit, between two operations that only moved paddle."""
    new_commit(fork)
    pq(fork, "export", "--commit")
    first = log_json(fork)["operations"][0]["id"]
    mine = work_on_main(fork)
    new_commit(fork, "def later():\n    return 4\n")
    pq(fork, "export", "--commit")
    pq(fork, "undo", "--op", str(first))
    assert git(fork, "rev-parse", "main") == mine
    assert git(fork, "rev-parse", "--verify", "-q", "feature")


def test_a_note_cut_off_as_it_was_written_is_no_operation(fork: Path) -> None:
    """`pq hook install --force` killed between its note's two writes: `pq status` named a
    half-way operation, `pq undo` "undid" it (changing nothing), and `pq log` said
    "(None)"."""
    hook = Path(git(fork, "rev-parse", "--git-path", "hooks/pre-push"))
    hook = hook if hook.is_absolute() else fork / hook
    hook.parent.mkdir(parents=True, exist_ok=True)
    hook.write_text("#!/bin/sh\nexit 0\n")
    pq(fork, "init", "--upstream", "upstream/main", "--force", "--commit")
    before = log_json(fork)["operations"][0]["id"]
    k = first_checkpoint_after_logging(fork, ["hook", "install", "--force"])
    assert run_pq(fork, ["hook", "install", "--force"], PQ_FAULT_AT=str(k)).returncode == -9
    assert "stopped half-way" not in pq(fork, "status").output
    assert "its text was not written" in pq(fork, "log").output
    assert f"undid operation {before} " in pq(fork, "undo").output


def _edit_entry(fork: Path, path: str, blob: str | None) -> None:
    """Replace the newest log entry by a copy whose tree has `path` set to `blob` (or
    removed), as a hand edit of refs/pq/oplog would."""
    env = {**os.environ, "GIT_INDEX_FILE": str(fork / ".git/pq-test-index")}
    tip = git(fork, "rev-parse", "refs/pq/oplog")

    def run(*args: str, input: bytes | None = None) -> str:
        return subprocess.run(["git", *args], cwd=fork, env=env, input=input, check=True,
                              capture_output=True).stdout.decode().strip()

    run("read-tree", f"{tip}^{{tree}}")
    if blob is None:
        run("rm", "-q", "--cached", "--", path)
    else:
        run("update-index", "--add", "--cacheinfo", f"100644,{blob},{path}")
    tree = run("write-tree")
    parents = [a for p in git(fork, "rev-parse", f"{tip}^@").split() for a in ("-p", p)]
    new = run("commit-tree", tree, *parents, "-m", "edited", input=b"")
    git(fork, "update-ref", "refs/pq/oplog", new)


def test_hand_edited_log_entries_cannot_escape(fork: Path) -> None:
    new_commit(fork)
    pq(fork, "export")
    series = git(fork, "rev-parse", "refs/pq/oplog:before/queue/series.yaml")
    _edit_entry(fork, "before/queue/outside.txt", series)  # (git writes no `..` in a tree)
    one_line_error(pq(fork, "undo", ok=False), 2, "'outside.txt', outside the queue")
    assert not (fork / "outside.txt").exists()


def test_foreign_log_entry_is_one_line_naming_the_ref_and_the_fix(fork: Path) -> None:
    new_commit(fork)
    pq(fork, "export")
    parent = git(fork, "rev-parse", "refs/pq/oplog^")
    _edit_entry(fork, "record/kind", None)
    for args in (["log"], ["undo"], ["export"]):
        one_line_error(pq(fork, *args, ok=False), 2, "refs/pq/oplog: entry",
                       "record/kind is missing", f"git update-ref refs/pq/oplog {parent}")
    git(fork, "update-ref", "refs/pq/oplog", parent)  # the fix the message names
    assert [op["id"] for op in log_json(fork)["operations"]] == [1]
    foreign = git(fork, "commit-tree", git(fork, "rev-parse", "HEAD^{tree}"), "-m", "x")
    git(fork, "update-ref", "refs/pq/oplog", foreign)
    one_line_error(pq(fork, "log", ok=False), 2, "has no record/ folder",
                   "git update-ref -d refs/pq/oplog")


def test_a_legacy_json_log_is_left_alone(fork: Path) -> None:
    """A repository logged by the JSON format: its records are not read (nor touched), its
    pin chain stays reachable under the new log, and numbering goes on after it."""
    legacy = fork / ".git/pq/oplog"
    legacy.mkdir(parents=True)
    (legacy / "000041.json").write_text("{}")
    empty = git(fork, "hash-object", "-t", "tree", "-w", "/dev/null")
    pin = git(fork, "commit-tree", empty, "-p", "HEAD", "-m", "pq oplog: 41 pq x (after)")
    git(fork, "update-ref", "refs/pq/oplog", pin)
    assert log_json(fork)["operations"] == []
    new_commit(fork)
    pq(fork, "export")
    assert [op["id"] for op in log_json(fork)["operations"]] == [42]
    assert (legacy / "000041.json").read_text() == "{}"
    git(fork, "merge-base", "--is-ancestor", pin, "refs/pq/oplog")
    pq(fork, "undo")
    assert log_json(fork)["undo"] is None  # nothing before the new log's first entry


def test_nested_transactions_make_one_record(fork: Path) -> None:
    with Git.open(fork) as g:
        with Transaction(g, "pq outer") as outer:
            with Transaction(g, "pq inner") as inner:
                assert inner.nested
                g.update_ref("refs/pq/test", g.head())
                inner.done()
            outer.done()
        records = oplog.read(g)
        last = oplog.load(g, records[-1])
    assert [r["command"] for r in records] == ["pq init --upstream upstream/main --commit",
                                               "pq outer"]
    assert last["after"]["refs"]["refs/pq/test"] == last["before"]["head_commit"]


# -- the lock --------------------------------------------------------------------------------------


HOLD = """
import sys
from pathlib import Path
from pq.oplog.lock import Lock
lock = Lock(Path(sys.argv[1]), "pq rebase upstream/main")
lock.acquire()
print("held", flush=True)
sys.stdin.read()
"""


def test_second_command_waits_then_names_the_holder(fork: Path) -> None:
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(fork / ".git/pq/lock")],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    try:
        assert holder.stdout is not None and holder.stdout.readline() == b"held\n"
        new_commit(fork)
        t0 = time.monotonic()
        result = pq(fork, "export", ok=False)
        waited = time.monotonic() - t0
        line = one_line_error(result, 2, "another pq command is running in this repository",
                              "`pq rebase upstream/main`", f"pid {holder.pid}", "started 20")
        assert "wait for it to finish" in line
        assert waited >= float(os.environ["PQ_LOCK_WAIT"])
        assert len(log_json(fork)["operations"]) == 1  # pq log reads without the lock
    finally:
        holder.kill()
        holder.wait()
    pq(fork, "export")  # the kernel released the dead holder's lock: no manual cleanup


def test_stale_lock_of_a_dead_process_is_cleared(fork: Path) -> None:
    dead = subprocess.Popen(["true"])
    dead.wait()
    lock = fork / ".git/pq/lock"
    lock.write_text(json.dumps({"pid": dead.pid, "command": "pq apply",
                                "started": "2026-01-01T00:00:00+0000", "host": "x"}))
    new_commit(fork)
    pq(fork, "export")
    assert not lock.exists()
    assert log_json(fork)["operations"][0]["command"] == "pq export"


def test_killed_command_leaves_no_lock_in_the_way(fork: Path) -> None:
    new_commit(fork)
    k = first_checkpoint_after_logging(fork, ["export"])
    proc = run_pq(fork, ["export"], PQ_FAULT_AT=str(k))
    assert proc.returncode == -9
    assert (fork / ".git/pq/lock").exists()  # the file stays; nobody holds it
    proc = subprocess.run([PQ, "undo"], cwd=fork, capture_output=True, timeout=60,
                          env=dict(os.environ, PQ_LOCK_WAIT="0"), check=False)
    assert proc.returncode == 0, proc.stderr.decode()


def test_undo_ignores_files_that_were_only_touched(fork: Path) -> None:
    expected = repo_state(fork)
    pq(fork, "apply", "--onto", "upstream/main")
    later = time.time() + 100
    for p in fork.rglob("*"):
        if ".git" not in p.parts and p.is_file():
            os.utime(p, (later, later))
    pq(fork, "undo")
    assert repo_state(fork) == expected


# -- undo and rebase -------------------------------------------------------------------------


def test_undo_a_finished_rebase(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)
    expected = repo_state(fork)
    pq(fork, "rebase", "upstream/main")
    assert repo_state(fork) != expected
    assert "undid operation 2 (`pq rebase upstream/main`)" in pq(fork, "undo").output
    assert repo_state(fork) == expected


def test_undo_waits_for_a_rebase_in_progress(tmp_path: Path) -> None:
    fork = conflict_fork(tmp_path)
    expected = repo_state(fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    stopped = repo_state(fork)
    one_line_error(pq(fork, "undo", ok=False), 2, "a pq rebase is in progress",
                   "pq rebase --abort")
    assert repo_state(fork) == stopped
    write(fork, "setup.py", "half-way resolution\n")
    pq(fork, "rebase", "--abort")
    assert repo_state(fork) == expected
    # Undo the abort: the rebase is stopped at its conflict again, with the half-way
    # resolution the abort threw away.
    result = pq(fork, "undo", "--json")
    assert json.loads(result.output)["rebase_in_progress"] is True
    assert (fork / "setup.py").read_text() == "half-way resolution\n"
    now = repo_state(fork)
    now["files"]["setup.py"] = stopped["files"]["setup.py"]  # type: ignore[index]
    assert now == stopped  # the unmerged index entries too
    write(fork, "setup.py", "import paddle\npaddle.enable_compat()\n"
          "from torch.utils import cpp_extension as ext\n\nsetup(name='x')\n")
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    pq(fork, "undo")  # the finished rebase: stopped at the conflict, resolution staged
    assert git(fork, "diff", "--cached", "--name-only") == "setup.py"
    pq(fork, "rebase", "--abort")
    assert repo_state(fork) == expected


def test_undo_over_a_conflict_pq_no_longer_follows_names_the_fix_that_works(
        tmp_path: Path) -> None:
    """The rebase's state deleted mid-conflict (as pq's hint for a damaged one says):
    `pq undo --force` cannot move HEAD over the unmerged file. Its hint said `git stash`,
    which fails on an unmerged file; `git reset --merge`, which it names now, works."""
    fork = conflict_fork(tmp_path)
    expected = repo_state(fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    (fork / ".git/pq/rebase/state.json").unlink()
    refused = pq(fork, "undo", "--force", ok=False)
    one_line_error(refused, 2, "setup.py unmerged", "`git reset --merge`")
    assert "git stash" not in refused.output
    git(fork, "reset", "-q", "--merge")
    pq(fork, "undo", "--force")
    assert repo_state(fork) == expected


# -- commands run only from the committed series ------------------------------------------------


def test_gate_runs_only_what_the_committed_series_says(tmp_path: Path) -> None:
    fork = base_fork(tmp_path)
    marks = tmp_path / "marks"
    marks.mkdir()
    series = fork / "series.yaml"
    text = series.read_text() + (f"gate:\n  stages:\n    - name: smoke\n"
                                 f"      run: touch {marks}/committed\n")
    series.write_text(text)
    git(fork, "commit", "-qm", "gate", "--", "series.yaml")
    series.write_text(text.replace("committed", "from-the-working-tree"))
    patch = next((fork / "patches").iterdir())
    patch.write_text(patch.read_text() + f"gate:\n  stages:\n    - run: touch {marks}/patch\n")
    pq(fork, "gate", "--json", ok=False)
    assert sorted(p.name for p in marks.iterdir()) == ["committed"]
