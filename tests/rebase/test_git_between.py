"""Plain git commands run while a pq rebase is stopped at a conflict: what pq says next
works when followed, and nothing of the user's is lost."""

from __future__ import annotations

import json
import re
import shlex
from pathlib import Path

from gitrepo import git, pq, write
from test_in_progress import RESOLVED, stopped


def _quoted(text: str, start: str) -> list[str]:
    """The first `...` command in `text` that starts with `start`, as its arguments."""
    found = re.search(r"`(" + re.escape(start) + r"[^`]*)`", text)
    assert found, text
    return shlex.split(found.group(1))


def test_a_branch_checked_out_at_the_stop_is_left_by_the_hint(tmp_path: Path) -> None:
    """`git checkout -b NEW` at the stop keeps the unmerged index (git allows it, at the
    same commit); `git switch --detach <tip>` then refuses ("you need to resolve your
    current index first"), so the hint is `git switch --detach` where HEAD is."""
    _, fork = stopped(tmp_path)
    git(fork, "checkout", "-b", "other")
    for action in ("continue", "skip"):
        result = pq(fork, "rebase", f"--{action}", ok=False)
        assert result.exit_code == 2, result.output
        assert "HEAD is on the branch other" in result.output, result.output
        assert f"then `pq rebase --{action}`" in result.output, result.output
    assert "HEAD is on the branch other" in pq(fork, "status").output
    git(fork, *_quoted(pq(fork, "rebase", "--continue", ok=False).output, "git switch")[1:])
    assert git(fork, "status", "--porcelain") == "UU setup.py"  # the conflict stays
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    assert git(fork, "show", "paddle~2:setup.py") == RESOLVED.rstrip("\n")
    assert git(fork, "rev-parse", "--abbrev-ref", "HEAD") == "paddle"


def test_gate_while_stopped_names_the_rebase_not_pq_init(tmp_path: Path) -> None:
    """HEAD is the stack so far, without series.yaml: the gate's hint was `run pq init`,
    which pq refuses while the rebase is stopped."""
    _, fork = stopped(tmp_path)
    result = pq(fork, "gate", ok=False)
    assert result.exit_code == 2, result.output
    assert "is a stopped pq rebase's commit" in result.output, result.output
    assert "pq init" not in result.output and "pq rebase --abort" in result.output
    pq(fork, "rebase", "--abort")
    assert "stopped pq rebase" not in pq(fork, "gate", ok=False).output


def test_abort_keeps_uncommitted_edits_made_on_another_branch(tmp_path: Path) -> None:
    """A hotfix started on another branch while the rebase was stopped: `--abort` resets
    the working tree to the rebased branch, and threw that uncommitted edit away silently.
    It refuses now (exit 2, naming the file); its hint, followed, keeps the edit."""
    _, fork = stopped(tmp_path)
    git(fork, "reset", "-q", "--hard")
    git(fork, "switch", "-q", "-c", "hotfix", "upstream/main~1")
    write(fork, "README.md", "hotfix in progress\n")
    result = pq(fork, "rebase", "--abort", ok=False)
    assert result.exit_code == 2, result.output
    assert "uncommitted changes in README.md on hotfix" in result.output, result.output
    assert (fork / "README.md").read_text() == "hotfix in progress\n"
    assert "`pq rebase --abort` refuses too: uncommitted changes in README.md" in pq(
        fork, "status").output
    git(fork, "stash", "-q")  # as the hint says
    pq(fork, "rebase", "--abort")
    git(fork, "switch", "-q", "hotfix")
    git(fork, "stash", "pop", "-q")
    assert (fork / "README.md").read_text() == "hotfix in progress\n"


def test_abort_force_and_edits_on_the_stack_are_thrown_away_as_before(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    write(fork, "README.md", "a resolution in progress elsewhere\n")  # on the stack: the
    pq(fork, "rebase", "--abort")                                     # abort's to drop
    assert (fork / "README.md").read_text() == "upstream\n"
    _, fork = stopped(tmp_path / "again")
    git(fork, "reset", "-q", "--hard")
    git(fork, "switch", "-q", "-c", "hotfix", "upstream/main~1")
    write(fork, "README.md", "hotfix in progress\n")
    pq(fork, "rebase", "--abort", "--force")
    assert git(fork, "rev-parse", "--abbrev-ref", "HEAD") == "paddle"
    assert (fork / "README.md").read_text() == "upstream\n"


def _stopped_at_landing(tmp: Path) -> Path:
    """A rebase whose `--continue` took the resolution and stopped before landing: an
    untracked file `patches` stands where the rebased branch has a folder."""
    _, fork = stopped(tmp)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    write(fork, "patches", "a file where the rebased branch has a folder\n")
    assert pq(fork, "rebase", "--continue", ok=False).exit_code == 2
    return fork


def test_a_commit_made_at_a_landing_stop_is_not_left_on_no_branch(tmp_path: Path) -> None:
    """HEAD is detached while a rebase waits for files to be moved aside; a commit made
    there was dropped by `--continue` (its `git reset --hard` to the stack), silently."""
    fork = _stopped_at_landing(tmp_path)
    write(fork, "README.md", "my note\n")
    git(fork, "commit", "-q", "-am", "user: my note")
    mine = git(fork, "rev-parse", "HEAD")
    for action in ("continue", "abort"):
        result = pq(fork, "rebase", f"--{action}", ok=False)
        assert result.exit_code == 2, result.output
        assert f"HEAD moved to {mine[:12]} (user: my note) while the rebase was stopped" \
            in result.output, result.output
    assert "HEAD moved to" in json.loads(pq(fork, "status", "--json").output)["rebase"][
        "blocked"]
    hint = pq(fork, "rebase", "--continue", ok=False).output
    git(fork, *_quoted(hint, "git branch keep-")[1:])
    git(fork, *_quoted(hint, "git switch --detach")[1:])
    (fork / "patches").unlink()
    pq(fork, "rebase", "--continue")
    assert git(fork, "rev-parse", "keep-paddle") == mine
    assert git(fork, "show", "paddle~2:setup.py") == RESOLVED.rstrip("\n")


def test_an_edit_made_at_a_landing_stop_is_not_thrown_away(tmp_path: Path) -> None:
    fork = _stopped_at_landing(tmp_path)
    write(fork, "README.md", "my note\n")
    result = pq(fork, "rebase", "--continue", ok=False)
    assert result.exit_code == 2, result.output
    assert "uncommitted changes in README.md while the rebase was stopped" in result.output
    assert (fork / "README.md").read_text() == "my note\n"
    git(fork, "stash", "-q")  # as the hint says
    (fork / "patches").unlink()
    pq(fork, "rebase", "--continue")
    git(fork, "stash", "pop", "-q")
    assert (fork / "README.md").read_text() == "my note\n"
    assert git(fork, "rev-parse", "--abbrev-ref", "HEAD") == "paddle"


def test_abort_keeps_edits_made_on_the_rebased_branch_or_at_a_landing_stop(
        tmp_path: Path) -> None:
    """Edits on the rebased branch itself (`git switch paddle` at a conflict stop), or on a
    branch made at a stop outside a conflict, are the user's too: --abort refuses."""
    _, fork = stopped(tmp_path)
    git(fork, "reset", "-q", "--hard")
    git(fork, "switch", "-q", "paddle")
    write(fork, "README.md", "edited on paddle\n")
    result = pq(fork, "rebase", "--abort", ok=False)
    assert result.exit_code == 2 and "uncommitted changes in README.md on paddle" \
        in result.output, result.output
    assert (fork / "README.md").read_text() == "edited on paddle\n"
    fork = _stopped_at_landing(tmp_path / "landing")
    git(fork, "switch", "-q", "-c", "hotfix")
    write(fork, "README.md", "hotfix in progress\n")
    result = pq(fork, "rebase", "--abort", ok=False)
    assert result.exit_code == 2 and "uncommitted changes in README.md on hotfix" \
        in result.output, result.output
    assert (fork / "README.md").read_text() == "hotfix in progress\n"


def test_an_abort_killed_half_way_is_finished_by_the_next(tmp_path: Path) -> None:
    """The abort marks the state before it moves HEAD: a second --abort after one killed
    there finishes it, whatever the files hold."""
    _, fork = stopped(tmp_path)
    state_file = fork / ".git/pq/rebase/state.json"
    state = json.loads(state_file.read_text())
    state["aborting"] = True  # as the abort leaves it, killed after putting HEAD back
    state_file.write_text(json.dumps(state))
    git(fork, "reset", "-q", "--hard")
    git(fork, "switch", "-q", "paddle")
    write(fork, "README.md", "what the killed abort left\n")
    pq(fork, "rebase", "--abort")
    assert (fork / "README.md").read_text() == "upstream\n"
    assert not state_file.exists()


def test_head_detached_on_a_branch_at_a_landing_stop_is_no_commit_to_lose(
        tmp_path: Path) -> None:
    fork = _stopped_at_landing(tmp_path)
    (fork / "patches").unlink()
    git(fork, "checkout", "-q", "--detach", "paddle")  # the branch's own tip: on a branch
    pq(fork, "rebase", "--abort")
    assert git(fork, "rev-parse", "--abbrev-ref", "HEAD") == "paddle"

