"""`pq undo` while a rebase is stopped says how to go back past it, and that way works:
a plain `pq undo` after `--abort` brings the rebase back again."""

from __future__ import annotations

import re
from pathlib import Path

from gitrepo import commit_all, git, make_fork, pq, write


def stopped(tmp: Path) -> tuple[Path, Path]:
    """A fork (one logged `pq init`) whose rebase stopped at a conflict in setup.py."""
    fork = make_fork(tmp)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "build: paddle")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    up = tmp / "upstream"
    write(up, "setup.py", "import other\n")
    commit_all(up, "upstream: other")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    return up, fork


def test_the_undo_refusal_names_the_operation_before_the_rebase(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    result = pq(fork, "undo", ok=False)
    assert result.exit_code == 2
    found = re.search(r"`pq undo --op (\d+)` goes further back, to before `pq init ", result.output)
    assert found, result.output
    pq(fork, "rebase", "--abort")
    pq(fork, "undo", "--op", found.group(1))
    assert git(fork, "ls-files", "series.yaml", "patches") == ""  # before `pq init` again
    assert not (fork / ".git/pq/rebase/state.json").exists()


def test_a_rebase_with_nothing_logged_before_it_names_no_further_undo(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    git(fork, "update-ref", "-d", "refs/pq/oplog")  # a log that starts with the rebase
    result = pq(fork, "undo", ok=False)
    assert result.exit_code == 2 and "pq rebase --abort" in result.output
    assert "further back" not in result.output, result.output


def test_undo_with_a_rebase_state_nested_too_deep_is_one_line(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    (fork / ".git/pq/rebase/state.json").write_text("[" * 200_000 + "]" * 200_000)
    result = pq(fork, "undo", ok=False)
    assert result.exit_code == 2, result.output
    assert "internal error" not in result.output and len(result.output.strip().splitlines()) \
        == 1, result.output
