"""Undo planning: which operation undo/redo/--op restore, and what refuses (real repos)."""

from __future__ import annotations

from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, pq, write

from pq.errors import ConfigError
from pq.git.repo import Git
from pq.oplog import log
from pq.oplog.snapshot import take
from pq.oplog.txn import Transaction
from pq.oplog.undo import history, plan, run


def rec(rid: int, kind: str = "command", target: int | None = None,
        status: str = "done") -> dict[str, object]:
    return {"id": rid, "kind": kind, "target": target, "status": status}


def test_history_walks_back_through_undos_and_redos() -> None:
    h = history([rec(1), rec(2), rec(3, "undo", 2), rec(4, "undo", 1)])
    assert h.view == [] and h.redo == [3, 4]
    h = history([rec(1), rec(2), rec(3, "undo", 2), rec(4, "undo", 1), rec(5, "redo", 4)])
    assert h.view == [1] and h.redo == [3]
    h = history([rec(1), rec(2), rec(3, "undo", 2), rec(4)])  # a new command ends redo
    assert h.view == [1, 4] and h.redo == []
    assert h.undone(2) and not h.undone(4)


def test_history_restore_and_unfinished_undo() -> None:
    h = history([rec(1), rec(2), rec(3), rec(4, "restore", 2)])
    assert h.view == [1] and h.redo == []
    # A restore to before an operation that came after an undo: the redo list that
    # operation cleared stays cleared (a restore is an operation too).
    h = history([rec(1), rec(2), rec(3, "undo", 2), rec(4), rec(5, "restore", 4)])
    assert h.view == [1] and h.redo == []
    h = history([rec(1), rec(2, "undo", 1, status="started")])  # killed: acts as a command
    assert h.view == [1, 2]
    h = history([rec(1), rec(2, "note")])
    assert h.view == [1]  # notes are stepped over


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    write(root, "a.txt", "a\n")
    commit_all(root, "base")
    with Git.open(root) as g:
        for n in (1, 2):
            with Transaction(g, f"pq op{n}") as t:
                write(root, "series.yaml", f"version {n}\n")
                g.update_ref(f"refs/pq/op{n}", g.head())
                t.done()
    return root


def test_plan_undoes_the_newest_operation_still_in_effect(repo: Path) -> None:
    with Git.open(repo) as g:
        p = plan(g, "undo", None, take(g), False)
        assert p.record["id"] == 2 and p.kind == "undo"
        assert p.changed == ["queue", "ref refs/pq/op2"] and p.drift == []
        assert p.refs == {"refs/pq/op2": None}
        p = plan(g, "undo", 1, take(g), False)
        assert p.kind == "restore" and p.target["files"] == {}
        with pytest.raises(ConfigError, match="nothing to redo"):
            plan(g, "redo", None, take(g), False)
        with pytest.raises(ConfigError, match="no operation 9 in the log"):
            plan(g, "undo", 9, take(g), False)


def test_plan_refuses_what_changed_since_unless_forced(repo: Path) -> None:
    moved = git(repo, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-m", "someone else")
    with Git.open(repo) as g:
        git(repo, "update-ref", "refs/pq/op2", moved)
        with pytest.raises(ConfigError, match=r"refs/pq/op2 has moved .* since operation 2"):
            plan(g, "undo", None, take(g), False)
        assert plan(g, "undo", None, take(g), True).drift == ["ref refs/pq/op2"]


def test_undo_then_redo_is_logged_and_restores_exactly(repo: Path) -> None:
    with Git.open(repo) as g:
        now = take(g)
        result = run(g, "undo")
        assert (result.kind, result.target_id, result.record_id) == ("undo", 2, 3)
        assert (repo / "series.yaml").read_text() == "version 1\n"
        assert plan(g, "redo", None, take(g), False).record["id"] == 3
        run(g, "redo")
        assert take(g) == now
        assert [(r["kind"], r["target"]) for r in log.read(g)] == [
            ("command", None), ("command", None), ("undo", 2), ("redo", 3)]


def test_undo_refuses_while_head_is_off_the_branch_the_operation_ran_on(
        tmp_path: Path) -> None:
    """HEAD detached (or on another branch) since the operation: undoing it moved the
    branch back but put the branch's queue files and index entries under the detached
    checkout, staging the deletion of the whole series there. Refused now; forced, HEAD
    goes back to the branch with them."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "build: paddle")
    before = git(fork, "rev-parse", "HEAD")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(fork, "checkout", "-q", "--detach")
    refused = pq(fork, "undo", ok=False)
    assert refused.exit_code == 2, refused.output
    assert "HEAD has changed (it is detached at" in refused.output and "was paddle" in refused.output
    assert git(fork, "status", "--porcelain") == ""
    pq(fork, "undo", "--force")
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    assert git(fork, "rev-parse", "HEAD") == before
    assert git(fork, "status", "--porcelain") == ""


def test_an_operation_cut_short_after_a_change_says_undo_puts_it_back(repo: Path) -> None:
    """Ctrl-C half-way through an operation that changed something: its log entry says
    failed, and the one line pq prints names it and `pq undo`; cut short before any
    change, there is no entry, and the line says nothing changed."""
    from pq.cli.failure import failure_of

    with Git.open(repo) as g:
        with pytest.raises(KeyboardInterrupt) as cut, Transaction(g, "pq op3"):
            write(repo, "series.yaml", "version 3\n")
            raise KeyboardInterrupt
        with pytest.raises(KeyboardInterrupt) as early, Transaction(g, "pq op4"):
            raise KeyboardInterrupt
        records = log.read(g)
    said = failure_of(cut.value)
    assert said is not None and said.exit_code == 130
    assert said.line() == ("pq: interrupted half-way: operation 3 is logged as failed (`pq log` "
                           "shows it), and `pq undo` puts back the state before it")
    assert [r["status"] for r in records][-1] == "failed" and len(records) == 3
    quiet = failure_of(early.value)
    assert quiet is not None and quiet.line() == "pq: interrupted before it changed anything"


def test_undo_runs_only_in_the_worktree_its_operation_ran_in(tmp_path: Path) -> None:
    """An operation's snapshots are of one worktree's HEAD, index and files: undone from
    another worktree (even with --force) it checked the branch out there too."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "build: paddle")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    linked = tmp_path / "linked"
    git(fork, "worktree", "add", "-q", "-b", "other", str(linked), "upstream/main")
    for args in (["undo"], ["undo", "--force"]):
        refused = pq(linked, *args, ok=False)
        assert refused.exit_code == 2, refused.output
        assert f"ran in the worktree {fork}" in refused.output
        assert git(linked, "symbolic-ref", "HEAD") == "refs/heads/other"
    pq(fork, "undo")
    assert not (fork / "series.yaml").exists()


def test_undo_op_behind_another_worktrees_operation_names_that_worktree(
        tmp_path: Path) -> None:
    """An operation of this worktree, with a later one of another worktree on top: the
    refusal says where that later one ran and to undo it there first."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "build: paddle")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")  # operation 1
    linked = tmp_path / "linked"
    git(fork, "worktree", "add", "-q", "-b", "p2", str(linked), "paddle")
    write(linked, "pkg/__init__.py", "import torch  # scoped\n")
    commit_all(linked, "python-glue: scoped")
    pq(linked, "export", "--commit")  # operation 2, in the other worktree
    refused = pq(fork, "undo", "--op", "1", ok=False)
    assert refused.exit_code == 2, refused.output
    assert f"since operation 2 (`pq export --commit`, in the worktree {linked})" in \
        refused.output and f"undo operation 2 in {linked} first" in refused.output


def test_undo_op_refuses_what_changed_since_pqs_last_operation(tmp_path: Path) -> None:
    """`pq undo --op N` returns to the state before N, throwing away what pq did since; a
    commit made by hand since pq's last entry is not pq's to throw away (it went without a
    word). Forced, it is logged first, and `pq undo --op` of that entry brings it back."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "build: paddle")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(fork, "pkg/__init__.py", "import torch  # scoped\n")
    commit_all(fork, "python-glue: scoped")
    pq(fork, "export", "--commit")  # operation 2
    write(fork, "README.md", "mine\n")
    mine = commit_all(fork, "my hand commit")
    refused = pq(fork, "undo", "--op", "2", ok=False)
    assert refused.exit_code == 2, refused.output
    assert "refs/heads/paddle has moved" in refused.output
    assert "since operation 2 (`pq export --commit`); `pq undo --op 2` would throw that " \
           "away" in refused.output
    assert "`pq undo --op 3` brings it back" in refused.output
    assert git(fork, "rev-parse", "HEAD") == mine
    forced = pq(fork, "undo", "--op", "2", "--force")
    assert "logged as operation 3; `pq undo --op 3` reverts this" in forced.output
    assert "pq redo" not in forced.output  # redo does not revert a restore
    assert git(fork, "rev-parse", "HEAD") != mine
    pq(fork, "undo", "--op", "3")
    assert git(fork, "rev-parse", "HEAD") == mine


def test_undo_op_refuses_to_delete_a_branch_made_by_hand_since(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "build: paddle")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    pq(fork, "apply", "--onto", "upstream/main", "--branch", "rebuilt")  # operation 2
    pq(fork, "undo")  # operation 3: rebuilt is gone
    git(fork, "switch", "-q", "-c", "rebuilt", "upstream/main")
    write(fork, "mine.txt", "mine\n")
    mine = commit_all(fork, "my own work")
    git(fork, "switch", "-q", "paddle")
    for command, again in ((["redo"], "pq redo"), (["undo", "--op", "2"], "pq undo --op 2")):
        refused = pq(fork, *command, ok=False)
        assert refused.exit_code == 2, refused.output
        assert "refs/heads/rebuilt has moved" in refused.output
        assert f"since operation 3 (`pq undo`); `{again}` would throw that away" \
            in refused.output
        assert "`pq undo --op 4` brings it back" in refused.output
    assert git(fork, "rev-parse", "rebuilt") == mine


def test_undo_op_looks_past_a_note_for_pqs_last_operation(tmp_path: Path) -> None:
    """A note (`pq hook install --force`) records the state when it was written: a hand
    commit made before it passed unseen, and `undo --op` threw it away."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "build: paddle")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(fork, "README.md", "mine\n")
    mine = commit_all(fork, "my hand commit")
    write(fork, ".git/hooks/pre-push", "#!/bin/sh\nexit 0\n", mode=0o755)
    pq(fork, "hook", "install", "--force")  # operation 2: a note
    refused = pq(fork, "undo", "--op", "1", ok=False)
    assert refused.exit_code == 2 and "refs/heads/paddle has moved" in refused.output
    assert git(fork, "rev-parse", "HEAD") == mine


def test_a_detached_head_that_moves_is_listed_by_the_log_and_the_undo(tmp_path: Path
                                                                       ) -> None:
    """`pq export --commit` on a detached HEAD moves HEAD and no branch: `pq log` and
    `pq undo` list it as the ref `HEAD` (the JSON's `refs` were empty)."""
    import json

    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "enable compat")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(fork, "checkout", "-q", "--detach")
    write(fork, "pkg/y.py", "y = 1\n")
    commit_all(fork, "glue: y")
    before = git(fork, "rev-parse", "HEAD")
    pq(fork, "export", "--commit")
    after = git(fork, "rev-parse", "HEAD")
    assert before != after
    entry = json.loads(pq(fork, "log", "-n", "1", "--json").output)["operations"][0]
    assert entry["refs"] == [{"ref": "HEAD", "old": before, "new": after}]
    assert f"HEAD  {before[:12]} -> {after[:12]}" in pq(fork, "log", "-n", "1").output
    undone = json.loads(pq(fork, "undo", "--json").output)
    assert undone["refs"] == [{"ref": "HEAD", "old": after, "new": before}]
    assert git(fork, "rev-parse", "HEAD") == before
