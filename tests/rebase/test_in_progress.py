"""A rebase in progress, on real repositories: every command knows it (`pq status`, the
first line of `pq series` and `pq log`, rewriting commands refuse), landing resumes after
git refused it, conflict markers never reach a commit, --skip says where the patch is
kept, refs/pq/orig-head per branch, rebasing backwards needs --force, modify/delete
conflicts get their own fix, and the operation log tells a stopped rebase apart."""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from gitrepo import commit_all, git, make_fork, make_upstream, pq, write
from test_rebase import (
    SETUP,
    UPSTREAM_FILES,
    conflict_upstream,
    make_series,
    set_line,
    upstream_commit,
    whole_state,
)

BUILD = "0001-build-enable-compat.patch"
GLUE = "0002-python-glue-scoped-compat.patch"
RESOLVED = set_line(SETUP, 3, "import other_framework; paddle.enable_compat()")


def stopped(tmp: Path) -> tuple[Path, Path]:
    """A fork whose rebase stopped at a conflict in setup.py (patch 1 of 2)."""
    up, fork = make_series(tmp)
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    return up, fork


def test_status_series_and_log_say_a_rebase_is_stopped(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    text = pq(fork, "status").output.splitlines()
    assert text[0].startswith("rebase in progress (conflict): paddle onto upstream/main")
    assert f"stopped at patch 1 of 2, patches/{BUILD} (layer build)" in text[0]
    assert any(line.split()[:2] == ["conflicted", "setup.py"] and "git add setup.py" in line
               for line in text)
    data = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert data["patch"] == {"index": 1, "of": 2, "name": BUILD, "file": f"patches/{BUILD}",
                             "layer": "build"}
    assert [(c["path"], c["code"]) for c in data["conflicted"]] == [("setup.py", "UU")]
    assert data["resolved"] == [] and "pq rebase --abort" in data["next"]
    # Resolved and added: listed as resolved, nothing conflicted.
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    data = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert data["conflicted"] == [] and data["resolved"] == ["setup.py"]
    # pq series: the status first, then the series as it was when the rebase started.
    series = pq(fork, "series").output.splitlines()
    assert series[0] == pq(fork, "status").output.splitlines()[0]
    assert series[1].startswith("base ") and "(upstream/main): 2 patches" in series[1] and BUILD in series[2]
    log = pq(fork, "log").output.splitlines()
    assert log[0] == series[0]
    pq(fork, "rebase", "--continue")
    assert pq(fork, "status").output.splitlines() == [
        "no rebase in progress", pq(fork, "series").output.splitlines()[0]]
    assert pq(fork, "series").output.startswith("base ")


def test_status_names_a_rebase_of_gits_own(tmp_path: Path) -> None:
    """No pq rebase, but a `git rebase -i` stopped on the branch: `pq status` says so
    (every pq command that writes refuses until it ends)."""
    _, fork = make_series(tmp_path)
    rebasing = subprocess.run(["git", "rebase", "-x", "false", "HEAD~1"], cwd=fork,
                              capture_output=True, check=False)
    assert rebasing.returncode != 0 and (fork / ".git/rebase-merge").is_dir()
    text = pq(fork, "status").output.splitlines()
    assert text[0] == ("no pq rebase in progress; git has a rebase in progress "
                       "(rebase-merge)"), text
    assert text[1].startswith("base ") and "git status" in text[2]
    assert json.loads(pq(fork, "status", "--json").output)["git_operation"] == "rebase"
    git(fork, "rebase", "--abort")
    assert pq(fork, "status").output.splitlines()[0] == "no rebase in progress"
    assert json.loads(pq(fork, "status", "--json").output)["git_operation"] is None
    # An index.lock left by a git that was killed: every writing command fails on it.
    lock = fork / ".git" / "index.lock"
    lock.touch()
    said = pq(fork, "status").output.splitlines()
    assert said[0].startswith(f"note: {lock} exists") and f"`rm {lock}`" in said[0], said
    assert json.loads(pq(fork, "status", "--json").output)["index_lock"] == str(lock)
    lock.unlink()
    assert json.loads(pq(fork, "status", "--json").output)["index_lock"] is None


def test_rewriting_commands_refuse_while_a_rebase_is_stopped(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    before = whole_state(fork)
    for args in (["init", "--upstream", "upstream/main"], ["init", "--upstream",
                 "upstream/main", "--force"], ["export"], ["export", "--commit"], ["apply"],
                 ["undo"], ["redo"]):
        result = pq(fork, *args, ok=False)
        assert result.exit_code == 2, (args, result.output)
        assert "pq rebase --continue" in result.output and "pq rebase --abort" in result.output
        assert "Traceback" not in result.output and "internal error" not in result.output
    assert whole_state(fork) == before
    # The hand resolution survives: --continue lands it.
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    assert "+import other_framework; paddle.enable_compat()" in (
        fork / f"patches/{BUILD}").read_text()


def test_untracked_series_yaml_stops_continue_until_removed(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    write(fork, "series.yaml", "what pq init used to write here\n")
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and "series.yaml came back while the rebase is stopped" \
        in refused.output and "`rm series.yaml`, then `pq rebase --continue`" in refused.output
    (fork / "series.yaml").unlink()
    pq(fork, "rebase", "--continue")
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    assert git(fork, "status", "--porcelain") == ""
    assert (fork / "setup.py").read_text() == RESOLVED


def test_a_series_yaml_staged_while_stopped_is_refused_not_dropped(tmp_path: Path) -> None:
    """The branch's series.yaml checked out, edited and added while stopped: --continue
    and --skip refuse it (the end of the rebase would write the queue over it)."""
    _, fork = stopped(tmp_path)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    git(fork, "checkout", "paddle", "--", "series.yaml")
    write(fork, "series.yaml", (fork / "series.yaml").read_text() + "# my note\n")
    git(fork, "add", "series.yaml")
    for action in ("--continue", "--skip"):
        refused = pq(fork, "rebase", action, ok=False)
        assert refused.exit_code == 2, refused.output
        assert "series.yaml came back while the rebase is stopped" in refused.output
        assert f"`git rm -q -f series.yaml`, then `pq rebase {action}`" in refused.output
        assert (fork / "series.yaml").read_text().endswith("# my note\n")
        assert "A  series.yaml" in git(fork, "status", "--porcelain").splitlines()
    git(fork, "rm", "-q", "-f", "series.yaml")
    pq(fork, "rebase", "--continue")
    assert git(fork, "status", "--porcelain") == ""


def test_a_series_yaml_staged_after_a_stop_outside_a_conflict_is_refused(
        tmp_path: Path) -> None:
    """Phase `stopped` (a file of the user's in the way of the next conflict), HEAD on the
    stack so far: a series.yaml staged then is refused too, not reset away."""
    up = make_upstream(tmp_path / "upstream", {"a.txt": "a\nb\nc\n", "c.txt": "x\ny\nz\n"})
    fork = make_fork(tmp_path, up)
    for path, old, new in (("a.txt", "b", "b fork"), ("n.txt", "", "new"),
                           ("c.txt", "y", "y fork")):
        text = (fork / path).read_text() if old else ""
        write(fork, path, text.replace(old, new) if old else new + "\n")
        commit_all(fork, f"python-glue: {path}")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, "a.txt", "a\nb up\nc\n")
    write(up, "c.txt", "x\ny up\nz\n")
    commit_all(up, "upstream: a, c")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "a.txt", "a\nb both\nc\n")
    git(fork, "add", "a.txt")
    write(fork, "n.txt", "scratch\n")  # where the next patch adds n.txt
    assert pq(fork, "rebase", "--continue", ok=False).exit_code == 2
    assert json.loads(pq(fork, "status", "--json").output)["rebase"]["phase"] == "stopped"
    git(fork, "checkout", "paddle", "--", "series.yaml")
    git(fork, "add", "series.yaml")
    (fork / "n.txt").unlink()
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and "series.yaml came back" in refused.output
    assert "A  series.yaml" in git(fork, "status", "--porcelain").splitlines()


def test_a_branch_checked_out_in_another_worktree_meanwhile_is_not_shared(
        tmp_path: Path) -> None:
    """HEAD is detached while stopped, so git lets another worktree take the branch:
    --continue, --skip and --abort (forced or not) refuse to check it out here too."""
    _, fork = stopped(tmp_path)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    other = tmp_path / "other"
    git(fork, "worktree", "add", "-q", str(other), "paddle")
    for args in (["--continue"], ["--skip"], ["--abort"], ["--abort", "--force"]):
        refused = pq(fork, "rebase", *args, ok=False)
        assert refused.exit_code == 2, refused.output
        assert f"paddle is checked out in the worktree {other}" in refused.output
        assert f"then `pq rebase {args[0]}`" in refused.output
    assert git(fork, "rev-parse", "--abbrev-ref", "HEAD") == "HEAD"
    git(other, "switch", "-q", "--detach")
    pq(fork, "rebase", "--continue")
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"


@pytest.mark.parametrize("action", ["--continue", "--abort"])
def test_a_branch_shared_with_another_worktree_before_the_rebase_is_not_refused(
        tmp_path: Path, action: str) -> None:
    """`git worktree add --force` checked the branch out twice before the rebase: git's
    rebase finishes there, and pq's clean rebase landed; a stopped one refused every way
    out, saying the worktree was "added while the rebase was stopped"."""
    up, fork = make_series(tmp_path)
    other = tmp_path / "other"
    git(fork, "worktree", "add", "-q", "--force", str(other), "paddle")
    conflict_upstream(up, fork)
    orig = git(fork, "rev-parse", "HEAD")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    git(fork, "worktree", "move", str(other), str(tmp_path / "moved"))  # the same worktree
    pq(fork, "rebase", action)
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    assert (git(fork, "rev-parse", "HEAD") == orig) == (action == "--abort")
    assert not (fork / ".git/pq/rebase").exists()


@pytest.mark.parametrize("mode", ["--soft", "--mixed"])
def test_head_moved_back_at_a_stop_goes_back_as_the_refusal_says(tmp_path: Path,
                                                                 mode: str) -> None:
    """`git reset --soft HEAD~` (or --mixed) at the stop: the fix named was a switch and a
    cherry-pick, which turned the staged resolution into a conflict again (or refused)."""
    _, fork = stopped(tmp_path)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    git(fork, "reset", "-q", mode, "HEAD~")
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and "HEAD was moved back from the stopped rebase" in \
        refused.output, refused.output
    fix = re.search(r"`(git reset [^`]+)`", refused.output)
    assert fix is not None and ("--soft" in fix.group(1)) == (mode == "--soft")
    subprocess.run(fix.group(1), shell=True, cwd=fork, check=True)
    if mode == "--mixed":
        git(fork, "add", "setup.py")  # as it says
    pq(fork, "rebase", "--continue")
    assert (fork / "setup.py").read_text() == RESOLVED
    assert git(fork, "status", "--porcelain") == ""


def test_an_older_commit_checked_out_at_a_stop_is_not_taken_for_a_reset(
        tmp_path: Path) -> None:
    """`git checkout --detach HEAD~2` at a stop carries the staged resolution onto an older
    index: `git reset --soft <tip>` would have kept that index, and the last patch would
    have undone the two before it. The switch and the cherry-pick are named."""
    up = make_upstream(tmp_path / "upstream", {"a.txt": "a\n", "b.txt": "b\n", "c.txt": "c\n"})
    fork = make_fork(tmp_path, up)
    for name, text in (("a.txt", "a2\n"), ("b.txt", "b2\n"), ("c.txt", "c-fork\n")):
        write(fork, name, text)
        commit_all(fork, f"P {name}")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, "c.txt", "c-up\n")
    commit_all(up, "upstream: c")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "c.txt", "c-resolved\n")
    git(fork, "add", "c.txt")
    git(fork, "checkout", "-q", "--detach", "HEAD~2")
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and "HEAD left the stopped rebase" in refused.output
    assert "git reset" not in refused.output and "git switch --detach" in refused.output


def test_landing_refused_resumes_with_the_resolution(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    write(fork, "patches", "a file where the rebased branch has a folder\n")
    refused = pq(fork, "rebase", "--continue", ok=False)  # pq sees it before git would
    assert refused.exit_code == 2
    assert "untracked patches would be overwritten by files of the rebased branch (move " \
           "them aside, then `pq rebase --continue`)" in refused.output
    status = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert status["next"][0] == "pq rebase --continue"
    (fork / "patches").unlink()
    result = pq(fork, "rebase", "--continue")
    assert "(resolved by hand)" in result.output
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    assert (fork / "setup.py").read_text() == RESOLVED
    assert "+import other_framework; paddle.enable_compat()" in (
        fork / f"patches/{BUILD}").read_text()
    assert git(fork, "status", "--porcelain") == ""
    assert not (fork / ".git/pq/rebase").exists()


def test_continue_finds_conflict_markers_in_a_file_whose_name_holds_a_newline(
        tmp_path: Path) -> None:
    """`git diff --check` writes such a name over two lines, and cat-file cannot be asked
    for it: the markers are still found and named (it said "object :l.txt not found"), in
    one line (the name was written as it is, over two)."""
    name = "new\nl.txt"
    numbers = "".join(f"{i}\n" for i in range(1, 11))
    up = make_upstream(tmp_path / "upstream", {name: numbers})
    fork = make_fork(tmp_path, up)
    write(fork, name, numbers.replace("5\n", "fork\n"))
    commit_all(fork, "fork edits")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, name, numbers.replace("5\n", "up\n"))
    commit_all(up, "upstream edits")
    git(fork, "fetch", "-q", "upstream")
    stop = pq(fork, "rebase", "upstream/main", ok=False)
    assert stop.exit_code == 1
    # Each error stays one line: the name quoted as git quotes it, and as bash reads it.
    error = next(ln for ln in stop.output.splitlines() if ln.startswith("pq: error:"))
    assert error.endswith('conflicts in "new\\nl.txt" (edit, `git add $\'new\\nl.txt\'`, '
                          "`pq rebase --continue`; or `pq rebase --skip` to drop this patch; "
                          "or `pq rebase --abort` to go back)"), stop.output
    assert "  conflicted  \"new\\nl.txt\"" in pq(fork, "status").output
    git(fork, "add", "-A")  # the markers staged as they are
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 1, refused.output
    assert '"new\\nl.txt":5: conflict marker added (and 2 more)' in refused.output, refused.output
    assert "`git add $'new\\nl.txt'`" in refused.output and "\n" not in refused.output.strip()
    write(fork, name, numbers.replace("5\n", "both\n"))
    git(fork, "add", "-A")
    pq(fork, "rebase", "--continue")
    assert (fork / name).read_text() == numbers.replace("5\n", "both\n")


def test_continue_refuses_conflict_markers(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    git(fork, "add", "setup.py")  # unedited: the markers staged as they are
    marker_line = next(i for i, line in enumerate(
        (fork / "setup.py").read_text().splitlines(), 1) if line.startswith("<<<<<<<"))
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 1
    assert f"setup.py:{marker_line}: conflict marker added" in refused.output
    assert "`git add setup.py`, then `pq rebase --continue`" in refused.output
    error = json.loads(pq(fork, "rebase", "--continue", "--json", ok=False).stdout)["error"]
    assert (error["path"], error["line"], error["exit_code"]) == ("setup.py", marker_line, 1)
    # What git finds, pq finds (and nothing moved).
    check = git(fork, "diff", "--cached", "--check", "HEAD", check=False)
    assert f"setup.py:{marker_line}: leftover conflict marker" in check
    assert json.loads(pq(fork, "status", "--json").output)["rebase"]["phase"] == "conflict"
    # A lone `=======` (a heading's underline) is no leftover conflict: taken.
    write(fork, "setup.py", RESOLVED + "=======\n")
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    patch = (fork / f"patches/{BUILD}").read_text()
    assert "<<<<<<<" not in patch and "\n+=======\n" in patch


def test_continue_takes_marker_lines_the_patch_itself_adds(tmp_path: Path) -> None:
    """A merge tool's test data, added by the conflicted patch, is its content: --continue
    takes it (as git rebase does), and still refuses a leftover beside it."""
    fixture = "before\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n"
    up = make_upstream(tmp_path / "upstream", dict(UPSTREAM_FILES))
    fork = make_fork(tmp_path, up)
    write(fork, "setup.py", set_line(SETUP, 3, "import paddle; paddle.enable_compat()"))
    write(fork, "tests/merge_fixture.txt", fixture)
    commit_all(fork, "build: enable compat, with a merge fixture")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    git(fork, "add", "setup.py")  # the conflict's own markers, staged: refused
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 1 and "setup.py:" in refused.output
    assert "merge_fixture" not in refused.output
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    assert (fork / "tests/merge_fixture.txt").read_text() == fixture
    assert git(fork, "status", "--porcelain") == ""


def test_continue_takes_marker_lines_the_patch_carries_where_upstream_removed_them(
        tmp_path: Path) -> None:
    """Test data the patch's base already had (it edits a line inside it) and upstream
    removed: keeping the patch's side keeps lines that are its content, which git's
    --continue takes; pq refused them, naming a fix that deleted the user's own lines."""
    fixture = 'fixture = """\n<<<<<<< ours\nfoo\n=======\nbar\n>>>>>>> theirs\n"""\n'
    up = make_upstream(tmp_path / "upstream", {**UPSTREAM_FILES, "t.py": f"head\n{fixture}tail\n"})
    fork = make_fork(tmp_path, up)
    ours = f"head\n{fixture.replace('foo', 'foo2')}tail\n"
    write(fork, "t.py", ours)
    commit_all(fork, "python-glue: edit the fixture")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    upstream_commit(up, fork, "up: drop the fixture", {"t.py": "head\ntail\n"})
    assert pq(fork, "rebase", "--no-rerere", "upstream/main", ok=False).exit_code == 1
    git(fork, "checkout", "--theirs", "t.py")
    git(fork, "add", "t.py")
    pq(fork, "rebase", "--continue")
    assert git(fork, "show", "HEAD~1:t.py") + "\n" == ours
    # A leftover beside them is still refused, and the refusal names the attribute.
    upstream_commit(up, fork, "up: tail", {"t.py": "head\ntail up\n"})
    assert pq(fork, "rebase", "--no-rerere", "upstream/main", ok=False).exit_code == 1
    assert "<<<<<<< " in (fork / "t.py").read_text()
    git(fork, "add", "t.py")
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 1 and "t.py:" in refused.output, refused.output
    assert "`conflict-marker-size` attribute above 7" in refused.output


def test_continue_refuses_conflict_markers_in_a_file_whose_diff_is_binary(
        tmp_path: Path) -> None:
    """`git diff --check` skips a file whose diff is binary (`-diff`), but the merge still
    writes markers into it: --continue refuses them there too (the pre-push check reads
    them in the patch), and takes marker lines the patch adds itself."""
    fixture = "before\n<<<<<<< ours\nx\n=======\ny\n>>>>>>> theirs\n"
    up = make_upstream(tmp_path / "upstream", {**UPSTREAM_FILES, "gen.txt": "n1\nn2\nn3\n",
                                               ".gitattributes": "*.txt -diff\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "gen.txt", "n1\nn2 fork\nn3\n")
    write(fork, "fixture.txt", fixture)
    commit_all(fork, "python-glue: generated table, with a merge fixture")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    upstream_commit(up, fork, "up: table", {"gen.txt": "n1\nn2 up\nn3\n"})
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    git(fork, "add", "gen.txt")  # the markers, staged as they are
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 1
    assert "gen.txt:2: conflict marker added (and 2 more)" in refused.output
    assert "edit gen.txt, `git add gen.txt`" in refused.output and "fixture.txt" not in refused.output
    write(fork, "gen.txt", "n1\nn2 both\nn3\n")
    git(fork, "add", "gen.txt")
    pq(fork, "rebase", "--continue")
    assert git(fork, "show", "HEAD~1:gen.txt") == "n1\nn2 both\nn3"
    assert (fork / "fixture.txt").read_text() == fixture
    assert pq(fork, "check", ok=False).exit_code == 1  # the fixture's markers: the hook's
    # own check refuses them (a `conflict-marker-size` attribute is its way out)


def test_check_refuses_a_patch_that_adds_conflict_markers(tmp_path: Path) -> None:
    _, fork = make_series(tmp_path)
    write(fork, "pkg/merge.py", "a = 1\n<<<<<<< ours\nb = 2\n=======\nb = 3\n>>>>>>> theirs\n")
    write(fork, "docs/index.rst", "Install\n=======\n")  # git flags it too; pq does not
    commit_all(fork, "python-glue: a bad merge")
    pq(fork, "export", "--commit")
    result = pq(fork, "check", "--json", ok=False)
    assert result.exit_code == 1
    data = json.loads(result.stdout)
    found = [f for f in data["failures"] if f["check"] == "markers"]
    assert len(found) == 1
    assert "patches/0003-python-glue-a-bad-merge.patch adds a conflict marker at " \
           "pkg/merge.py:2 (and 2 more)" in found[0]["message"]
    # The same lines are what `git diff --check` calls conflict markers.
    check = git(fork, "diff", "--check", "HEAD~2", "HEAD~1", "--", "pkg", check=False)
    assert [ln.split(":")[1] for ln in check.splitlines() if "conflict marker" in ln] == [
        "2", "4", "6"]
    # Test data of a merge tool: a larger conflict-marker-size says so, to git and to pq.
    write(fork, ".gitattributes", "pkg/merge.py conflict-marker-size=32\n")
    commit_all(fork, "build: merge.py holds test data")
    pq(fork, "export", "--commit")
    bad = git(fork, "log", "--format=%H", "--grep=a bad merge", "-1")
    assert git(fork, "diff", "--check", f"{bad}^", bad, "--", "pkg", check=False) == ""
    data = json.loads(pq(fork, "check", "--json").stdout)
    assert not [f for f in data["failures"] if f["check"] == "markers"]


def test_skip_says_where_the_commit_is_kept(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    old = git(fork, "rev-parse", "paddle~2")  # the build patch's commit (under bookkeeping)
    assert git(fork, "log", "-1", "--format=%s", old) == "build: enable compat"
    result = pq(fork, "rebase", "--skip")
    line = next(ln for ln in result.output.splitlines() if BUILD in ln)
    assert line.split()[0] == "skipped" and old[:12] in line
    assert "refs/pq/orig-head/paddle" in line and f"git cherry-pick {old[:12]}" in line
    git(fork, "merge-base", "--is-ancestor", old, "refs/pq/orig-head/paddle")
    data = json.loads(pq(fork, "log", "--json").output)
    assert data["operations"][0]["status"] == "done"


def test_orig_head_is_kept_per_branch(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    paddle_tip = git(fork, "rev-parse", "paddle")
    git(fork, "update-ref", "refs/pq/orig-head", "paddle~1")  # what an older pq left
    git(fork, "checkout", "-q", "-b", "other")
    write(fork, "README.md", "other\n")
    commit_all(fork, "docs: other")
    pq(fork, "export", "--commit")
    other_tip = git(fork, "rev-parse", "other")
    upstream_commit(up, fork, "upstream: changelog", {"CHANGELOG": "1.0\n"})
    pq(fork, "rebase", "upstream/main")
    git(fork, "checkout", "-q", "paddle")
    result = pq(fork, "rebase", "upstream/main")
    assert "refs/pq/orig-head/paddle" in result.output
    refs = git(fork, "for-each-ref", "--format=%(refname) %(objectname)", "refs/pq/")
    assert [r for r in refs.splitlines() if "orig-head" in r] == [f"refs/pq/orig-head/other {other_tip}",
                                 f"refs/pq/orig-head/paddle {paddle_tip}"]
    # Undo of the second rebase restores paddle's tip, whatever the other branch did.
    pq(fork, "undo")
    assert git(fork, "rev-parse", "paddle") == paddle_tip
    assert git(fork, "rev-parse", "other") != other_tip


def test_rebase_onto_an_ancestor_of_the_base_needs_force(tmp_path: Path) -> None:
    _, fork = make_series(tmp_path)
    before = whole_state(fork)
    base = git(fork, "rev-parse", "upstream/main")
    refused = pq(fork, "rebase", "upstream/main~1", ok=False)
    assert refused.exit_code == 2
    assert f"is an ancestor of the series base {base[:12]}" in refused.output
    assert "pq rebase --force upstream/main~1" in refused.output
    assert whole_state(fork) == before
    pq(fork, "rebase", "--force", "upstream/main~1")
    assert git(fork, "merge-base", "paddle", "upstream/main") == git(
        fork, "rev-parse", "upstream/main~1")


def test_rebase_onto_a_copy_of_the_branch_is_refused(tmp_path: Path) -> None:
    """A ref that holds the branch's own patch commits (the branch, HEAD, a pushed copy) is
    no upstream: without the check every patch is "already upstream" and the series ends
    empty, where git says the branch is up to date."""
    _, fork = make_series(tmp_path)
    git(fork, "branch", "backup")
    git(fork, "commit", "-q", "--allow-empty", "-m", "python-glue: later")  # backup != HEAD
    pq(fork, "export", "--commit")
    before = whole_state(fork)
    for ref in ("backup", "HEAD"):
        refused = pq(fork, "rebase", ref, ok=False)
        assert refused.exit_code == 2, refused.output
        assert "already contains paddle's own patch commit" in refused.output
        assert f"({BUILD})" in refused.output and "pq rebase upstream/main" in refused.output
        assert whole_state(fork) == before
    # --force: upstream really merged them; they are dropped as already upstream, as asked
    forced = pq(fork, "rebase", "--force", "backup")
    assert "already upstream" in forced.output, forced.output


def test_a_commit_on_the_branch_while_stopped_is_never_overwritten(tmp_path: Path) -> None:
    """The user leaves the stopped rebase for the branch and commits there: --continue,
    --skip and --abort refuse, naming the commit; --abort --force still goes back."""
    _, fork = stopped(tmp_path)
    tip = git(fork, "rev-parse", "HEAD")
    git(fork, "reset", "-q", "--hard")
    git(fork, "switch", "-q", "paddle")
    write(fork, "hotfix.txt", "hotfix\n")
    hotfix = commit_all(fork, "hotfix on paddle")
    for action in ("--continue", "--skip", "--abort"):
        refused = pq(fork, "rebase", action, ok=False)
        assert refused.exit_code == 2, refused.output
        assert f"paddle moved to {hotfix[:12]} (hotfix on paddle) while the rebase was " \
               "stopped" in refused.output
        assert f"git branch keep-paddle {hotfix[:12]}" in refused.output
        assert git(fork, "rev-parse", "paddle") == hotfix
    git(fork, "branch", "keep", hotfix)
    pq(fork, "rebase", "--abort", "--force")
    assert git(fork, "rev-parse", "keep") == hotfix
    assert tip != hotfix


def test_a_commit_on_the_branch_after_a_landing_git_refused_is_never_overwritten(
        tmp_path: Path) -> None:
    """A rebase that stopped at its landing (no conflict: HEAD stays on the branch) and a
    commit made there meanwhile: --continue and --abort refuse, naming it."""
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: add a folder", {"dd/x": "x\n"})
    write(fork, ".git/index.lock", "")  # git refuses the landing's checkout
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 2
    (fork / ".git/index.lock").unlink()
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    orig = git(fork, "rev-parse", "paddle")
    write(fork, "hot.txt", "hotfix\n")
    hotfix = commit_all(fork, "hotfix while stopped")
    for action in ("--continue", "--abort"):
        refused = pq(fork, "rebase", action, ok=False)
        assert refused.exit_code == 2, refused.output
        assert f"paddle moved to {hotfix[:12]} (hotfix while stopped) while the rebase was " \
               "stopped" in refused.output
        assert git(fork, "rev-parse", "paddle") == hotfix
        assert (fork / "hot.txt").exists()
    assert f"`git reset --keep {orig[:12]}` on paddle puts it back" in pq(
        fork, "rebase", "--continue", ok=False).output


def commit_resolution_and_more(fork: Path) -> str:
    """On the stopped patch: the resolution committed, then a commit of other work (its id)."""
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    git(fork, "commit", "-q", "-m", "resolved")
    write(fork, "extra.txt", "extra\n")
    return commit_all(fork, "extra: made mid-rebase")


def test_commits_made_on_the_stopped_patch(tmp_path: Path) -> None:
    """One commit on the stopped patch is its resolution; two would be folded into one
    patch, so --continue refuses and says how to squash them."""
    _, fork = stopped(tmp_path)
    tip = git(fork, "rev-parse", "HEAD")
    extra = commit_resolution_and_more(fork)
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2, refused.output
    assert (f"2 commits were made on the stopped patch patches/{BUILD} (the last: "
            f"{extra[:12]} extra: made mid-rebase)") in refused.output
    assert f"git reset --soft {tip[:12]}" in refused.output
    git(fork, "reset", "-q", "--hard", "HEAD~1")  # back to the one commit: the resolution
    git(fork, "commit", "-q", "--amend", "--author=Other Person <o@example.com>", "-m",
        "build: enable compat, reworded while resolving")
    pq(fork, "rebase", "--continue")
    assert git(fork, "show", "HEAD:setup.py") == RESOLVED.rstrip("\n")
    assert "0001" in git(fork, "show", "HEAD:series.yaml")
    # As `git rebase --continue` keeps it: the commit's message and author are the patch's.
    assert git(fork, "log", "-1", "--format=%s|%an", "HEAD~2") == (
        "build: enable compat, reworded while resolving|Other Person")
    assert "reworded while resolving" in git(fork, "show", f"HEAD:patches/{BUILD}")


def test_status_says_continue_refuses_once_head_left_the_stopped_rebase(
        tmp_path: Path) -> None:
    """After `git checkout -f` elsewhere, the conflicted files look resolved (nothing is
    unmerged): status says why --continue refuses and the way back, not "resolved"."""
    _, fork = stopped(tmp_path)
    tip = git(fork, "rev-parse", "HEAD")
    git(fork, "checkout", "-q", "-f", "paddle")
    text = pq(fork, "status").output
    assert "resolved" not in text.replace("0 resolved", ""), text
    assert f"--continue refuses: HEAD left the stopped rebase (it was at {tip[:12]}" in text
    assert f"next: HEAD left the stopped rebase (it was at {tip[:12]}" in text
    data = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert data["blocked"].startswith("HEAD left the stopped rebase")
    assert (data["next"], data["resolved"]) == (["pq rebase --abort"], [])
    assert pq(fork, "rebase", "--continue", ok=False).exit_code == 2
    assert "resolve again" not in text  # the conflict is gone: the hint shows it again
    shows_again = f"git cherry-pick --no-commit {git(fork, 'rev-parse', 'paddle~2')[:12]}"
    assert f"`git switch --detach {tip[:12]}` and `{shows_again}`" in text, text
    git(fork, "switch", "-q", "--detach", tip)
    assert json.loads(pq(fork, "status", "--json").output)["rebase"]["blocked"] is None
    git(fork, *shows_again.split()[1:], check=False)
    assert [c["path"] for c in json.loads(pq(fork, "status", "--json").output)["rebase"][
        "conflicted"]] == ["setup.py"]
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    assert git(fork, "show", "HEAD:setup.py") == RESOLVED.rstrip("\n")


def test_skip_refuses_to_drop_a_commit_made_on_the_stopped_patch(tmp_path: Path) -> None:
    """`git rebase --skip` keeps a commit made during the stop; pq keeps one commit per
    patch, so its --skip, which drops the patch, refuses rather than drop the commit too."""
    _, fork = stopped(tmp_path)
    tip = git(fork, "rev-parse", "HEAD")
    write(fork, "setup.py", RESOLVED)
    write(fork, "notes.txt", "my own work\n")
    mine = commit_all(fork, "WIP: my own work")
    refused = pq(fork, "rebase", "--skip", ok=False)
    assert refused.exit_code == 2, refused.output
    assert (f"a commit was made on the stopped patch patches/{BUILD} (the last: {mine[:12]} "
            "WIP: my own work), and `pq rebase --skip` would drop it with the patch "
            f"(`git branch keep-paddle {mine[:12]}` keeps it, then `git reset --hard "
            f"{tip[:12]}` and `pq rebase --skip`") in refused.output
    assert git(fork, "rev-parse", "HEAD") == mine and (fork / "notes.txt").exists()
    git(fork, "branch", "keep-paddle", mine)
    git(fork, "reset", "-q", "--hard", tip)
    data = json.loads(pq(fork, "rebase", "--skip", "--json").output)
    assert data["status"] == "done" and git(fork, "rev-parse", "keep-paddle") == mine


def test_abort_refuses_to_leave_commits_made_on_the_stopped_patch_behind(
        tmp_path: Path) -> None:
    """A commit past the resolution is work the abort would leave on no branch: refused,
    naming it and how to keep it; with --force (after keeping it) the abort goes on. One
    commit alone is the resolution, which the abort throws away as a staged one."""
    _, fork = stopped(tmp_path)
    orig = git(fork, "rev-parse", "paddle")
    extra = commit_resolution_and_more(fork)
    refused = pq(fork, "rebase", "--abort", ok=False)
    assert refused.exit_code == 2, refused.output
    assert (f"2 commits were made on the stopped patch patches/{BUILD} (the last: "
            f"{extra[:12]} extra: made mid-rebase); `pq rebase --abort` would leave them on "
            f"no branch (`git branch keep-paddle {extra[:12]}` keeps them, then `pq rebase "
            "--abort --force`)") in refused.output
    assert git(fork, "rev-parse", "HEAD") == extra and (fork / "extra.txt").exists()
    git(fork, "branch", "keep-paddle", extra)
    pq(fork, "rebase", "--abort", "--force")
    assert git(fork, "rev-parse", "paddle") == orig
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    # The resolution alone, committed: the abort takes it as it takes a staged one.
    _, fork = stopped(tmp_path / "one")
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    git(fork, "commit", "-q", "-m", "resolved")
    pq(fork, "rebase", "--abort")
    assert git(fork, "status", "--porcelain") == ""


@pytest.mark.parametrize("by_hand", [True, False])
def test_an_empty_resolution_committed_by_hand_is_kept_as_git_keeps_it(
        tmp_path: Path, by_hand: bool) -> None:
    """Upstream's side taken, then `git commit --allow-empty` at the stop: `git rebase
    --continue` keeps the user's commit; pq dropped the patch as "no change left" and left
    the commit on no branch. Taken without a commit, the patch is dropped, as by git."""
    _, fork = stopped(tmp_path)
    git(fork, "checkout", "-q", "--ours", "setup.py")  # upstream's side, as git names it
    git(fork, "add", "setup.py")
    if by_hand:
        git(fork, "commit", "-q", "--allow-empty", "-m", "build: kept on purpose")
    said = pq(fork, "rebase", "--continue").output
    subjects = git(fork, "log", "--format=%s", "upstream/main..HEAD~1").splitlines()
    if by_hand:
        assert re.search(rf"conflict +{BUILD} +\(resolved by hand\)", said), said
        assert subjects[-1] == "build: kept on purpose", subjects
        assert git(fork, "diff", "--stat", "HEAD~3", "HEAD~2") == ""  # empty, as made
        assert "Subject: [PATCH] build: kept on purpose" in (
            fork / f"patches/{BUILD}").read_text()
    else:
        assert re.search(rf"dropped +{BUILD}", said) and len(subjects) == 1, (said, subjects)
    pq(fork, "check")
    assert git(fork, "status", "--porcelain") == ""


def test_abort_under_a_branch_made_at_the_stop_throws_the_conflict_away(
        tmp_path: Path) -> None:
    """`git switch -c tmp` at a conflict stop keeps the conflict, unmerged: --abort called
    it uncommitted changes on tmp and named `git stash` or a commit, which git refuses
    there. It aborts, as `git rebase --abort` does, and tmp stays where it was made."""
    _, fork = stopped(tmp_path)
    orig, tip = git(fork, "rev-parse", "paddle"), git(fork, "rev-parse", "HEAD")
    git(fork, "switch", "-q", "-c", "tmp")
    assert git(fork, "status", "--porcelain", "setup.py").startswith("UU")
    pq(fork, "rebase", "--abort")
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    assert git(fork, "rev-parse", "paddle") == orig
    assert git(fork, "status", "--porcelain") == ""
    assert git(fork, "rev-parse", "tmp") == tip
    # Off the stack, uncommitted edits are still the user's: refused.
    _, fork = stopped(tmp_path / "off")
    git(fork, "reset", "-q", "--hard")
    git(fork, "switch", "-q", "-c", "hotfix", "upstream/main~1")
    write(fork, "setup.py", "my hotfix\n")
    refused = pq(fork, "rebase", "--abort", ok=False)
    assert refused.exit_code == 2 and "uncommitted changes in setup.py on hotfix" in \
        refused.output, refused.output


def test_abort_refuses_to_write_over_a_series_yaml_brought_back(tmp_path: Path) -> None:
    """As --continue and --skip: the abort would write the branch's queue over it."""
    _, fork = stopped(tmp_path)
    write(fork, "series.yaml", git(fork, "show", "paddle:series.yaml") + "\n# my note\n")
    refused = pq(fork, "rebase", "--abort", ok=False)
    assert refused.exit_code == 2, refused.output
    assert ("series.yaml came back while the rebase is stopped" in refused.output
            and "`rm series.yaml`, then `pq rebase --abort`)" in refused.output)
    assert (fork / "series.yaml").read_text().endswith("# my note\n")
    pq(fork, "rebase", "--abort", "--force")
    assert git(fork, "status", "--porcelain") == ""
    assert "# my note" not in (fork / "series.yaml").read_text()


def test_head_that_left_the_stopped_rebase_is_refused(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    git(fork, "reset", "-q", "--hard")
    git(fork, "checkout", "-q", "--detach", "upstream/main~1")
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and "HEAD left the stopped rebase" in refused.output


def test_a_file_the_patch_moved_and_edited_names_where_upstream_s_change_goes(
        tmp_path: Path) -> None:
    """The patch moved pkg/old/m.py to pkg/new/m.py and rewrote most of it (git sees a
    deletion and an addition), and upstream changed pkg/old/m.py: both ways the conflict
    named lost upstream's change. It names the file the patch added, and the diff to bring
    there (read from the repository's top, also in a subfolder)."""
    lines = "".join(f"line {n}\n" for n in range(1, 13))
    up = make_upstream(tmp_path / "upstream", {"pkg/old/m.py": lines})
    fork = make_fork(tmp_path, up)
    git(fork, "mv", "pkg/old", "pkg/new")
    write(fork, "pkg/new/m.py", "".join(f"fork {n}\n" for n in range(1, 13)))
    commit_all(fork, "move and rewrite m")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, "pkg/old/m.py", lines + "line 13 upstream\n")
    commit_all(up, "upstream: m grows")
    git(fork, "fetch", "-q", "upstream")
    stop = pq(fork, "rebase", "upstream/main", ok=False)
    assert stop.exit_code == 1
    assert "if the patch moved it to pkg/new/m.py, upstream's change to it (`git diff " \
           ":1:pkg/old/m.py :2:pkg/old/m.py` shows it) belongs there" in stop.output, stop.output
    shown = subprocess.run(["git", "diff", ":1:pkg/old/m.py", ":2:pkg/old/m.py"],
                           cwd=fork / "pkg", capture_output=True, text=True, check=True)
    assert "+line 13 upstream" in shown.stdout


def test_modify_delete_conflict_says_git_rm_or_git_add(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    git(up, "rm", "-q", "setup.py")
    git(up, "commit", "-q", "-m", "upstream: drop setup.py")
    git(fork, "fetch", "-q", "upstream")
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code == 1
    err = result.output.strip().splitlines()[-1]
    assert "setup.py (deleted upstream, modified by the patch)" in err
    assert "`git rm setup.py` keeps it deleted" in err and "`git add setup.py`" in err
    assert "edit, `git add" not in err
    assert git(fork, "status", "--porcelain", "setup.py").startswith("DU")
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 1 and "`git rm setup.py`" in refused.output
    git(fork, "rm", "-q", "setup.py")
    pq(fork, "rebase", "--continue")
    assert not (fork / "setup.py").exists()


def test_a_file_an_earlier_resolution_deleted_is_not_said_deleted_upstream(
        tmp_path: Path) -> None:
    """Patch 1's conflict resolved by deleting the file: patch 2's edit of it is a
    modify/delete conflict with the stack, not with upstream, which still has it."""
    up = make_upstream(tmp_path / "upstream")
    fork = make_fork(tmp_path, up)
    ops = "#include <torch/extension.h>\n\nint f() { return 1; }\n"
    write(fork, "csrc/ops.cc", ops.replace("return 1", "return 2"))
    commit_all(fork, "f returns 2")
    write(fork, "csrc/ops.cc", ops.replace("return 1", "return 2") + "int g() { return 0; }\n")
    commit_all(fork, "add g")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, "csrc/ops.cc", ops.replace("return 1", "return 3"))
    commit_all(up, "upstream: f returns 3")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    git(fork, "rm", "-q", "csrc/ops.cc")
    stop = pq(fork, "rebase", "--continue", ok=False)
    assert stop.exit_code == 1, stop.output
    assert git(fork, "status", "--porcelain", "csrc/ops.cc").startswith("DU")
    assert "csrc/ops.cc (deleted by an earlier patch, modified by this one)" in stop.output
    data = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert [c["kind"] for c in data["conflicted"]] == [
        "deleted by an earlier patch, modified by this one"]


def test_log_stopped_then_done_or_aborted_with_flags_and_footer(tmp_path: Path) -> None:
    _, fork = stopped(tmp_path)
    ops = json.loads(pq(fork, "log", "--json").output)
    assert ops["operations"][0]["status"] == "stopped"
    assert ops["operations"][0]["command"] == "pq rebase upstream/main"
    assert ops["undo"] is None and ops["rebase"]["phase"] == "conflict"
    # The abort settles the stops from this entry on, without reading older ones.
    state = json.loads((fork / ".git" / "pq" / "rebase" / "state.json").read_bytes())
    assert state["log_id"] == ops["operations"][0]["id"]
    text = pq(fork, "log").output
    assert "`pq undo` restores" not in text and "`pq rebase --abort`" in text
    pq(fork, "rebase", "--abort", "--json")
    ops = json.loads(pq(fork, "log", "--json").output)["operations"]
    assert [(o["command"], o["status"]) for o in ops[:2]] == [
        ("pq rebase --abort --json", "done"), ("pq rebase upstream/main", "aborted")]
    assert ops[-1]["command"] == "pq init --upstream upstream/main --commit"
    # Two stops, then done.
    pq(fork, "rebase", "upstream/main", "--json", ok=False)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    ops = json.loads(pq(fork, "log", "--json").output)["operations"]
    assert [(o["command"], o["status"]) for o in ops[:2]] == [
        ("pq rebase --continue", "done"), ("pq rebase upstream/main --json", "done")]
    assert pq(fork, "log", "-n", "0").output == ""
    assert "no operations logged yet" not in pq(fork, "log", "-n", "0").output


ODD = ["-dash.txt", "dollar$HOME.txt", "quo\"te's.txt", "with space.txt", "ünï.txt"]


def test_suggested_git_add_can_be_pasted_for_any_name(tmp_path: Path) -> None:
    """The `git add ...` a conflict suggests, run by a shell as printed, adds exactly the
    conflicted files (quoted names, `--` before a name starting with `-`)."""
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: odd files", dict.fromkeys(ODD, "a\nb\nc\n"))
    pq(fork, "rebase", "upstream/main")
    for n in ODD:
        write(fork, n, "a\nfork\nc\n")
    commit_all(fork, "python-glue: odd files")
    pq(fork, "export", "--commit")
    upstream_commit(up, fork, "upstream: odd files again", dict.fromkeys(ODD, "a\nup\nc\n"))
    stop = pq(fork, "rebase", "upstream/main", ok=False)
    assert stop.exit_code == 1
    command = stop.output.split("`git add ", 1)[1].split("`", 1)[0]
    for n in ODD:
        write(fork, n, "a\nresolved\nc\n")
    subprocess.run(f"git add {command}", shell=True, cwd=fork, check=True)
    assert git(fork, "diff", "--name-only", "--diff-filter=U") == ""
    assert shlex.split(command) == ["--", *sorted(ODD)]
    pq(fork, "rebase", "--continue")


def test_abort_refuses_to_overwrite_a_file_the_user_created_meanwhile(tmp_path: Path) -> None:
    """`--abort` resets the working tree to the branch: an untracked file standing where the
    branch has one (README.md, which upstream deleted) or a folder (csrc/) would be
    overwritten beyond `pq undo`'s reach, as `--continue` refuses to; moved aside, the
    abort goes through."""
    up, fork = make_series(tmp_path)
    tip = git(fork, "rev-parse", "HEAD")
    git(up, "rm", "-q", "README.md", "csrc/ops.cc")
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "README.md", "my notes, committed nowhere\n")
    write(fork, "csrc", "a file where the branch has a folder\n")
    before = whole_state(fork)
    refused = pq(fork, "rebase", "--abort", ok=False)
    assert refused.exit_code == 2, refused.output
    assert "untracked README.md, csrc would be overwritten" in refused.output
    assert "move them aside, then `pq rebase --abort`" in refused.output
    assert whole_state(fork) == before
    (fork / "README.md").rename(tmp_path / "notes.md")
    (fork / "csrc").rename(tmp_path / "csrc.txt")
    pq(fork, "rebase", "--abort")
    assert git(fork, "rev-parse", "HEAD") == tip
    assert (fork / "README.md").read_text() == "upstream\n"


def test_an_ignored_file_where_upstream_adds_one_is_refused_not_overwritten(tmp_path: Path) -> None:
    """git's rebase overwrites an ignored file where the new upstream adds a file (a local
    config upstream starts tracking): gone for good, beyond any log. pq refuses before it
    changes anything, says which, and rebases once it is moved aside."""
    up, fork = make_series(tmp_path)
    write(fork, ".git/info/exclude", "config.local\n")
    write(fork, "config.local", "my secret local config\n")
    upstream_commit(up, fork, "upstream: a config template", {"config.local": "template\n"})
    before = whole_state(fork)
    stopped = pq(fork, "rebase", "upstream/main", ok=False)
    assert stopped.exit_code == 2, stopped.output
    assert "untracked config.local (ignored, but yours) would be overwritten by files of the " \
        "rebased branch (move them aside, then run `pq rebase` again)" in stopped.output
    assert whole_state(fork) == before
    (fork / "config.local").rename(tmp_path / "config.mine")
    pq(fork, "rebase", "upstream/main")
    assert (fork / "config.local").read_text() == "template\n"
    assert whole_state(fork) != before


def test_a_rebase_stopped_in_one_worktree_is_ended_only_there(tmp_path: Path) -> None:
    """pq's rebase state is the repository's, shared by its worktrees; HEAD, index and files
    are the worktree's. From another worktree, --continue, --skip and --abort (which reset
    that worktree onto the branch, its uncommitted work with it) refuse, naming where the
    rebase runs, and so does a new rebase."""
    up, fork = make_series(tmp_path)
    tip = git(fork, "rev-parse", "HEAD")
    conflict_upstream(up, fork)
    git(fork, "switch", "-q", "-c", "other", "upstream/main")
    linked = tmp_path / "linked tree"  # a space: each `cd` hint quotes it
    git(fork, "worktree", "add", "-q", str(linked), "paddle")
    assert pq(linked, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "README.md", "my edit, committed nowhere\n")
    before = whole_state(fork)
    for args in (["--abort"], ["--continue"], ["--skip"], ["upstream/main"]):
        refused = pq(fork, "rebase", *args, ok=False)
        assert refused.exit_code == 2, refused.output
        assert f"in the worktree {linked}" in refused.output, refused.output
        assert whole_state(fork) == before
    status = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert status["phase"] == "elsewhere" and status["worktree"] == str(linked)
    assert status["next"] == [f"cd '{linked}'"] and status["conflicted"] == []
    assert f"`cd '{linked}'`" in pq(fork, "status").output
    pq(linked, "rebase", "--abort")
    assert git(linked, "rev-parse", "HEAD") == tip
    assert (fork / "README.md").read_text() == "my edit, committed nowhere\n"


@pytest.mark.parametrize("how", ["worktree remove", "rm -rf"])
def test_a_rebase_stopped_in_a_worktree_since_removed_is_aborted_from_another(
        tmp_path: Path, how: str) -> None:
    """The worktree a rebase stopped in is removed: its HEAD, index and files are gone, and
    every pq command refused, naming a folder no `cd` reaches. Now status and the refusals
    say it is gone, and `pq rebase --abort` from another worktree ends it: the refs as
    before the rebase, the state removed, this worktree untouched."""
    import shutil
    up, fork = make_series(tmp_path)
    tip = git(fork, "rev-parse", "HEAD")
    conflict_upstream(up, fork)
    git(fork, "switch", "-q", "-c", "other", "upstream/main")
    linked = tmp_path / "linked"
    git(fork, "worktree", "add", "-q", str(linked), "paddle")
    assert pq(linked, "rebase", "upstream/main", ok=False).exit_code == 1
    if how == "rm -rf":
        shutil.rmtree(linked)
    else:
        git(fork, "worktree", "remove", "--force", str(linked))
    write(fork, "README.md", "my edit, committed nowhere\n")
    status = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert status["phase"] == "elsewhere" and status["next"] == ["pq rebase --abort"]
    assert f"its worktree {linked} is gone" in pq(fork, "status").output
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and "which is gone" in refused.output, refused.output
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "which is gone" in refused.output, refused.output
    before = whole_state(fork)
    aborted = pq(fork, "rebase", "--abort")
    assert f"({linked}, gone)" in aborted.output, aborted.output
    assert git(fork, "rev-parse", "paddle") == tip
    assert pq(fork, "status", "--json").output.count('"rebase": null') == 1
    after = whole_state(fork)
    assert after["files"] == before["files"] and after["HEAD"] == before["HEAD"]
    assert (fork / "README.md").read_text() == "my edit, committed nowhere\n"
    # The abort undone: the rebase is back, and only the abort ends it (not --continue).
    undone = pq(fork, "undo").output
    assert "stopped where it was: `pq rebase --abort`\n" in undone, undone
    pq(fork, "rebase", "--abort")
    git(fork, "checkout", "-q", "--", "README.md")
    git(fork, "switch", "-q", "paddle")
    again = pq(fork, "rebase", "upstream/main", ok=False)
    assert again.exit_code == 1 and "conflict" in again.output  # the same stop, here


def test_a_rebase_stopped_in_a_worktree_since_moved_is_found_where_it_went(
        tmp_path: Path) -> None:
    """`git worktree move` of the worktree a rebase stopped in: pq called it gone and
    offered `--abort` from here; git knows where it went, and so does pq."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    git(fork, "switch", "-q", "-c", "other", "upstream/main")
    linked, moved = tmp_path / "linked", tmp_path / "moved"
    git(fork, "worktree", "add", "-q", str(linked), "paddle")
    assert pq(linked, "rebase", "upstream/main", ok=False).exit_code == 1
    git(fork, "worktree", "move", str(linked), str(moved))
    shown = pq(fork, "status").output
    assert "gone" not in shown and f"`cd {moved}`" in shown, shown
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and f"runs in the worktree {moved}" in refused.output
    assert json.loads(pq(moved, "status", "--json").output)["rebase"]["phase"] == "conflict"


def test_hints_run_from_a_subfolder_name_paths_from_there(tmp_path: Path) -> None:
    """pq run in a subfolder: a suggested `git add` names the file as seen from there
    (`git add csrc/x` failed in csrc/), and pasted as it is, it resolves the conflict."""
    up = make_upstream(tmp_path / "upstream")
    fork = make_fork(tmp_path, up)
    write(fork, "csrc/ops.cc", "#include <torch/extension.h>\n\nint f() { return 2; }\n")
    commit_all(fork, "kernel: f returns 2")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, "csrc/ops.cc", "#include <torch/extension.h>\n\nint f() { return 3; }\n")
    commit_all(up, "upstream: f returns 3")
    git(fork, "fetch", "-q", "upstream")
    here = fork / "csrc"
    stop = pq(here, "rebase", "upstream/main", ok=False)
    assert "conflicts in csrc/ops.cc (edit, `git add ops.cc`," in stop.output, stop.output
    assert "git add ops.cc" in pq(here, "status").output
    write(fork, "csrc/ops.cc", "#include <torch/extension.h>\n\nint f() { return 5; }\n")
    command = re.search(r"`(git add [^`]+)`", stop.output)
    assert command is not None
    subprocess.run(command.group(1), shell=True, cwd=here, check=True)
    pq(here, "rebase", "--continue")
    assert git(fork, "show", "HEAD~1:csrc/ops.cc").endswith("return 5; }")


def test_continue_and_abort_refuse_while_git_runs_a_rebase_of_its_own(tmp_path: Path) -> None:
    """A `git rebase` started while pq's is stopped: pq landing its rebase (or resetting
    for --abort) would leave git's rebase behind, and its `git rebase --abort` would later
    reset the branch to a commit of its own."""
    _, fork = stopped(tmp_path)
    tip = git(fork, "rev-parse", "refs/heads/paddle")
    git(fork, "reset", "-q", "--hard")
    rebasing = subprocess.run(["git", "rebase", "-x", "false", "HEAD~1"], cwd=fork,
                              capture_output=True, check=False)
    assert rebasing.returncode != 0 and (fork / ".git/rebase-merge").is_dir()
    before = whole_state(fork)
    for action in ("--continue", "--skip", "--abort"):
        refused = pq(fork, "rebase", action, ok=False)
        assert refused.exit_code == 2, refused.output
        assert "git has an operation in progress (rebase-merge)" in refused.output
        assert whole_state(fork) == before
    git(fork, "rebase", "--abort")
    pq(fork, "rebase", "--abort")
    assert git(fork, "rev-parse", "HEAD") == tip


def test_git_s_own_rebase_is_named_before_the_files_it_left(tmp_path: Path) -> None:
    """With git's rebase stopped on top of pq's stop and files changed, `--abort` blamed
    "uncommitted changes" and named `git stash` (which git refuses in a conflict), and
    `pq status` named the stop's way on: git's rebase is what blocks, named first."""
    _, fork = stopped(tmp_path)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    git(fork, "commit", "-q", "-m", "resolved")
    assert subprocess.run(["git", "rebase", "refs/heads/paddle~2"], cwd=fork,
                          capture_output=True, check=False).returncode != 0
    assert git(fork, "diff", "--name-only", "--diff-filter=U") == "setup.py"
    for args in (["--abort"], ["--abort", "--force"]):
        refused = pq(fork, "rebase", *args, ok=False)
        assert refused.exit_code == 2 and "git has an operation in progress (rebase-merge)" \
            in refused.output, refused.output
    blocked = json.loads(pq(fork, "status", "--json").output)["rebase"]["blocked"]
    assert blocked.startswith("git has an operation in progress (rebase-merge)"), blocked


def test_a_gone_branch_s_orig_head_does_not_block_a_branch_named_like_its_folder(
        tmp_path: Path) -> None:
    """refs/pq/orig-head/<branch> of a branch that no longer exists is in the way of a
    branch whose name makes a folder of it, or of which it is a folder (`team` against
    `team/paddle`): git keeps no ref and folder of refs of one name. The rebase lands and
    the stale ref goes (the undo log keeps it); it used to fail at the very end."""
    up, fork = make_series(tmp_path)
    old = git(fork, "rev-parse", "HEAD~1")
    git(fork, "update-ref", "refs/pq/orig-head/team", old)  # a branch `team`, gone
    git(fork, "update-ref", "refs/pq/orig-head/paddle/v1", old)  # a branch `paddle/v1`, gone
    upstream_commit(up, fork, "upstream: readme", {"README.md": "moved\n"})
    pq(fork, "rebase", "upstream/main")
    tip = git(fork, "rev-parse", "refs/pq/orig-head/paddle")
    git(fork, "branch", "-q", "-m", "paddle", "team/paddle")
    upstream_commit(up, fork, "upstream: readme again", {"README.md": "moved again\n"})
    pq(fork, "rebase", "upstream/main")
    refs = git(fork, "for-each-ref", "--format=%(refname)", "refs/pq/orig-head").split()
    assert refs == ["refs/pq/orig-head/paddle", "refs/pq/orig-head/team/paddle"]
    assert git(fork, "rev-parse", "refs/pq/orig-head/paddle") == tip
    pq(fork, "undo")  # the stale ref comes back, where team/paddle's goes (two steps)
    refs = git(fork, "for-each-ref", "--format=%(refname)", "refs/pq/orig-head").split()
    assert refs == ["refs/pq/orig-head/paddle", "refs/pq/orig-head/team"]


def test_commands_that_read_the_queue_say_a_rebase_holds_it(tmp_path: Path) -> None:
    """While stopped, series.yaml and patches/ are out of the working tree: the commands
    that read them say a rebase is in progress, not "run `pq init`" (which refuses)."""
    _, fork = stopped(tmp_path)
    for command in (["check"], ["lint"], ["audit", "workarounds"]):
        said = pq(fork, *command, ok=False)
        assert said.exit_code == 2, (command, said.output)
        assert "pq init" not in said.output, (command, said.output)
        assert "rebase" in said.output and "pq status" in said.output, (command, said.output)


def test_series_in_another_worktree_lists_that_worktrees_own_series(tmp_path: Path) -> None:
    """A rebase stopped in one worktree: `pq series` in another lists the series its own
    series.yaml holds, not the stopped rebase's."""
    _, fork = stopped(tmp_path)
    other = tmp_path / "other"
    git(fork, "worktree", "add", "-q", "-b", "dev", str(other), "paddle")
    text = (other / "series.yaml").read_text()
    write(other, "series.yaml", text[:text.index(f"  - name: {GLUE}")])  # one patch left
    (other / "patches" / GLUE).unlink()
    data = json.loads(pq(other, "series", "--json").output)
    assert [p["name"] for p in data["patches"]] == [BUILD]
    assert data["rebase"] is not None  # and it says a rebase is stopped elsewhere
    here = json.loads(pq(fork, "series", "--json").output)
    assert len(here["patches"]) == 2


@pytest.mark.parametrize("damage", [
    lambda s: None, lambda s: "a string", lambda s: {**s, "queue_before": []},
    lambda s: {**s, "queue_before": {**s["queue_before"], "../outside.txt": s["orig_head"]}},
    lambda s: {**s, "queue_before": {"/tmp/x.patch": s["orig_head"]}},
    lambda s: {**s, "queue_before": {}}, lambda s: {**s, "index": "1"},
    lambda s: {**s, "conflict_paths": 5}, lambda s: {**s, "steps": [3]},
    lambda s: {**s, "index": 999}, lambda s: {**s, "index": -1}, lambda s: {**s, "steps": []},
    lambda s: {**s, "index": True},
    lambda s: {**s, "steps": [{**s["steps"][0], "commit": 5}, *s["steps"][1:]]},
    lambda s: {**s, "steps": [{**s["steps"][0], "name": "../../outside.patch"},
                              *s["steps"][1:]]},
    lambda s: {**s, "steps": [{**s["steps"][0], "rerere_files": [1]}, *s["steps"][1:]]},
    lambda s: {**s, "steps": [{**s["steps"][0], "outcome": ["clean"]}, *s["steps"][1:]]},
    lambda s: {**s, "worktree": {"id": 5, "root": [1]}},
    lambda s: {**s, "queue_paths": "mre"}, lambda s: {**s, "queue_paths": ["../outside"]},
    lambda s: {**s, "queue_paths": [".git/pq"]}, lambda s: {**s, "queue_paths": [""]},
])
def test_a_damaged_rebase_state_is_refused_in_one_line_and_writes_nothing(
        tmp_path: Path, damage: Callable[[dict[str, Any]], Any]) -> None:
    """A state file of another shape, or one naming a file outside the queue for --abort to
    write back, is refused by every command that reads it; no file outside is written."""
    _, fork = stopped(tmp_path)
    before = git(fork, "rev-parse", "refs/heads/paddle")
    path = fork / ".git" / "pq" / "rebase" / "state.json"
    path.write_text(json.dumps(damage(json.loads(path.read_bytes()))))
    for args in (["status"], ["series", "--json"], ["rebase", "--abort"],
                 ["rebase", "--continue"], ["rebase", "--skip"]):
        result = pq(fork, *args, ok=False)
        assert result.exit_code == 2, (args, result.output)
        assert "unreadable rebase state" in result.output, result.output
        assert "Traceback" not in result.output and "internal error" not in result.output
    assert not (tmp_path / "outside.txt").exists()
    # The way out the message names brings back the branch from before the rebase.
    assert "`pq undo --force` goes back to before the rebase" in result.output
    path.unlink()
    git(fork, "reset", "-q", "--merge")
    pq(fork, "undo", "--force")
    assert git(fork, "rev-parse", "HEAD") == before
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    assert git(fork, "status", "--porcelain") == ""


def test_a_conflict_git_will_not_show_stops_so_that_continue_shows_it(tmp_path: Path) -> None:
    """An untracked file where the next conflicted patch adds one: git's cherry-pick refuses
    before it writes anything. The rebase stops outside a conflict with git's reason (not
    stuck "while stopping", only abortable): once the file is moved aside, `--continue`
    shows the conflict, the resolution of the patch before kept, as `git rebase --continue`
    runs again the pick git refused."""
    ten = "".join(f"{i}\n" for i in range(1, 11))
    up = make_upstream(tmp_path / "upstream", {"a.py": ten, "b.py": ten})
    fork = make_fork(tmp_path, up)
    write(fork, "a.py", ten.replace("2\n", "P1\n", 1))
    commit_all(fork, "python-glue: p1")
    write(fork, "b.py", ten.replace("2\n", "P2\n", 1))
    write(fork, "new.txt", "new\n")
    commit_all(fork, "python-glue: p2 adds new.txt")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, "a.py", ten.replace("2\n", "U\n", 1))
    write(up, "b.py", ten.replace("2\n", "U\n", 1))
    commit_all(up, "upstream: a and b")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "a.py", ten.replace("2\n", "P1 and U\n", 1))
    git(fork, "add", "a.py")
    write(fork, "new.txt", "built here\n")
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 1
    assert "untracked working tree files would be overwritten by merge: new.txt" in \
        refused.output
    assert "then `pq rebase --continue` shows the conflict" in refused.output
    status = json.loads(pq(fork, "status", "--json").stdout)["rebase"]
    assert status["phase"] == "stopped" and "pq rebase --skip" in status["next"]
    (fork / "new.txt").unlink()
    shown = pq(fork, "rebase", "--continue", ok=False)
    assert shown.exit_code == 1 and "conflicts in b.py" in shown.output
    write(fork, "b.py", ten.replace("2\n", "P2 and U\n", 1))
    git(fork, "add", "b.py")
    pq(fork, "rebase", "--continue")
    assert git(fork, "show", "HEAD~2:a.py").startswith("1\nP1 and U\n")
    assert git(fork, "show", "HEAD~1:b.py").startswith("1\nP2 and U\n")
    assert git(fork, "show", "HEAD~1:new.txt") == "new"  # (git() strips)


def test_a_checkout_that_fails_at_the_first_conflict_never_moves_the_branch(tmp_path: Path
                                                                          ) -> None:
    """git refuses to check out the stack to show the first conflict (a stale index.lock):
    HEAD is still on the branch. `--continue` shows the conflict once the lock is gone,
    without resetting the branch to the stack (it stays at its tip until the landing)."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    tip = git(fork, "rev-parse", "paddle")
    (fork / ".git" / "index.lock").touch()
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 1 and "cannot show the conflict" in refused.output
    assert f"(once no git process runs here, `rm {fork / '.git' / 'index.lock'}`, then `pq " \
           "rebase --continue` shows the conflict;" in refused.output
    (fork / ".git" / "index.lock").unlink()
    shown = pq(fork, "rebase", "--continue", ok=False)
    assert shown.exit_code == 1 and "conflicts in setup.py" in shown.output
    assert git(fork, "rev-parse", "paddle") == tip
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    assert git(fork, "rev-parse", "paddle~3") == git(fork, "rev-parse", "upstream/main")


def rebase_process(root: Path, **env: str) -> subprocess.CompletedProcess[bytes]:
    """`pq rebase upstream/main` in a process of its own (PQ_FAULT_* in `env`)."""
    import os
    import sys

    return subprocess.run([sys.executable, "-m", "pq", "rebase", "upstream/main"], cwd=root,
                          capture_output=True, env={**os.environ, **env})


def rebase_checkpoints(fork: Path, tmp: Path) -> list[str]:
    """The labels of the checkpoints `pq rebase upstream/main` meets in `fork` (it stops at
    a conflict), counted on a copy."""
    import shutil

    trial = tmp / "trial"
    shutil.copytree(fork, trial, symlinks=True)
    log = tmp / "checkpoints"
    assert rebase_process(trial, PQ_FAULT_LOG=str(log)).returncode == 1
    return [ln.split(" ", 1)[1] for ln in log.read_text().splitlines()]


def test_a_lock_taken_just_before_the_pick_that_shows_a_conflict_is_named(tmp_path: Path
                                                                           ) -> None:
    """A git process takes index.lock just before the cherry-pick that shows a conflict:
    the stop names that file and says to remove it; then `--continue` shows the conflict."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    labels = rebase_checkpoints(fork, tmp_path)
    lock = fork / ".git" / "index.lock"
    proc = rebase_process(fork, PQ_FAULT_AT=str(labels.index("git cherry-pick") + 1),
                          PQ_FAULT_RUN=f"touch {shlex.quote(str(lock))}")
    line = proc.stderr.decode().strip().splitlines()[-1]
    assert proc.returncode == 1, line
    assert re.search(rf"git cherry-pick of [0-9a-f]{{12}} failed: {re.escape(str(lock))} "
                     r"exists \(another git process", line), line
    assert f"(once no git process runs here, `rm {lock}`, then `pq rebase --continue` shows " \
           "the conflict;" in line
    lock.unlink()
    shown = pq(fork, "rebase", "--continue", ok=False)
    assert shown.exit_code == 1 and "conflicts in setup.py" in shown.output


def test_a_failing_post_checkout_hook_keeps_neither_the_stop_nor_the_landing_back(
        tmp_path: Path) -> None:
    """pq's checkouts (showing a conflict, landing after it) do not run the user's
    post-checkout hook, as the docs say: a failing one (git-lfs's, where git-lfs is not
    installed) made every `--continue` fail at the landing, where `git rebase` finishes."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    write(fork, ".git/hooks/post-checkout", "#!/bin/sh\ntouch .git/hook-ran\nexit 1\n",
          mode=0o755)
    stop = pq(fork, "rebase", "upstream/main", ok=False)
    assert stop.exit_code == 1 and "conflicts in setup.py" in stop.output
    assert json.loads(pq(fork, "status", "--json").stdout)["rebase"]["phase"] == "conflict"
    write(fork, "setup.py", "resolved\n")
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    assert git(fork, "branch", "--show-current") == "paddle"
    assert not (fork / ".git/hook-ran").exists()


@pytest.mark.parametrize("command", [["rebase", "upstream/main"], ["apply"]])
def test_a_failing_post_checkout_hook_stops_no_checkout_of_paths(tmp_path: Path,
                                                                 command: list[str]) -> None:
    """Nor do pq's checkouts of paths: an uncommitted edit of series.yaml put aside and
    back, files written again for upstream's new .gitattributes. `git checkout -- PATH`
    runs the hook, and failed with it: the rebase stopped before its landing, `pq apply`
    half-way with the edit out of the working tree."""
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: attributes", {".gitattributes": "*.py text eol=crlf\n"})
    write(fork, ".git/hooks/post-checkout", "#!/bin/sh\ntouch .git/hook-ran\nexit 1\n",
          mode=0o755)
    edited = (fork / "series.yaml").read_text() + "# mine\n"
    write(fork, "series.yaml", edited)
    pq(fork, *command)
    assert (fork / "series.yaml").read_text().endswith("# mine\n")
    assert not (fork / ".git/hook-ran").exists()
    if command[0] == "rebase":
        assert (fork / "setup.py").read_bytes().count(b"\r\n") == SETUP.count("\n")


def as_user(fork: Path, *args: str) -> subprocess.CompletedProcess[str]:
    """`pq ARGS` with a user's permissions: root's pass every check, so it drops them."""
    argv = [sys.executable, "-m", "pq", *args]
    if os.geteuid() == 0:
        if shutil.which("setpriv") is None:
            pytest.skip("running as root, without setpriv to drop root's permissions")
        argv = ["setpriv", "--bounding-set", "-dac_override,-dac_read_search", *argv]
    return subprocess.run(argv, cwd=fork, capture_output=True, text=True, check=False)


def test_a_folder_no_file_can_be_written_in_is_refused_before_head_moves(
        tmp_path: Path) -> None:
    """git's checkouts (a branch, `reset --keep`) leave a file they cannot write as it was,
    say so and exit 0: where a folder is not writable, the landing (and a stop's checkout)
    left old files under the rebased branch, uncommitted edits that revert its patches.
    pq refuses before HEAD moves, as `git rebase` does; made writable, the rebase goes on."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    os.chmod(fork / "pkg", 0o555)  # patch 2's file: the landing writes it
    try:
        refused = as_user(fork, "rebase", "--continue")
    finally:
        os.chmod(fork / "pkg", 0o755)
    assert refused.returncode == 2, refused.stderr
    assert "no file can be written in pkg" in refused.stderr
    assert "then `pq rebase --continue`" in refused.stderr
    assert "glue_5 = 'scoped'" not in (fork / "pkg/__init__.py").read_text()
    assert json.loads(pq(fork, "status", "--json").stdout)["rebase"] is not None
    assert as_user(fork, "rebase", "--continue").returncode == 0
    assert git(fork, "status", "--porcelain") == ""
    assert "glue_5 = 'scoped'" in (fork / "pkg/__init__.py").read_text()


def test_notes_follow_the_commits_a_rebase_copies(tmp_path: Path) -> None:
    """With notes.rewriteRef set, `git rebase` copies each commit's notes to its copy; so
    does pq, also where the rebase ends after a stop."""
    up, fork = make_series(tmp_path)
    git(fork, "config", "notes.rewriteRef", "refs/notes/commits")
    for n, sha in enumerate(git(fork, "rev-list", "upstream/main..HEAD~1").split()):
        git(fork, "notes", "add", "-m", f"note {n}", sha)
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    notes = git(fork, "log", "--format=%s|%N", "upstream/main..HEAD~1").split("\n")
    assert [n for n in notes if n] == ["python-glue: scoped compat|note 0",
                                       "build: enable compat|note 1"]


def test_status_names_a_cherry_pick_of_gits_begun_at_the_stop(tmp_path: Path) -> None:
    """A `git cherry-pick` that stops on a conflict while the rebase is stopped: --continue
    and --abort refuse until it is finished or aborted, and `pq status` says so (it showed
    the cherry-pick's conflict as the patch's, with `--continue` next)."""
    _, fork = stopped(tmp_path)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    git(fork, "commit", "-q", "-m", "resolution")  # (a commit of the resolution: allowed)
    git(fork, "cherry-pick", "paddle~2", check=False)  # the build patch: it conflicts again
    assert (fork / ".git/CHERRY_PICK_HEAD").exists()
    status = json.loads(pq(fork, "status", "--json").stdout)
    assert status["git_operation"] == "cherry-pick"
    assert status["rebase"]["blocked"].startswith("git has an operation in progress")
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and status["rebase"]["blocked"] in refused.output


def test_a_filter_that_fails_half_way_through_a_stop_names_the_abort_that_works(
        tmp_path: Path) -> None:
    """A required filter that fails while git writes the stop's files (git-lfs's, where
    git-lfs is missing): git dies half-way, HEAD on the branch, files taken out. pq said
    --continue (which then called the queue files "come back") and --abort refused: the
    message names the filter and `--abort --force`, which puts every file back."""
    up = make_upstream(tmp_path / "upstream", {".gitattributes": "k.txt filter=kw\n",
                                               "k.txt": "k\n", "p.txt": "p\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "p.txt", "p fork\n")
    commit_all(fork, "python-glue: p")
    write(fork, "k.txt", "k fork\n")
    commit_all(fork, "python-glue: k")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    upstream_commit(up, fork, "upstream: k", {"k.txt": "k upstream\n"})
    git(fork, "config", "filter.kw.clean", "cat")
    git(fork, "config", "filter.kw.smudge", "false")
    git(fork, "config", "filter.kw.required", "true")
    before = whole_state(fork)
    failed = pq(fork, "rebase", "upstream/main", ok=False)
    assert "git stopped half-way" in failed.output and "make the filter" in failed.output
    assert "`pq rebase --abort --force` puts them back" in failed.output
    git(fork, "config", "filter.kw.smudge", "cat")
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and "--abort" in refused.output
    assert json.loads(pq(fork, "status", "--json").stdout)["rebase"]["next"] == [
        "pq rebase --abort --force"]
    pq(fork, "rebase", "--abort", "--force")
    assert whole_state(fork) == before


def test_a_patch_git_will_not_show_can_be_skipped(tmp_path: Path) -> None:
    """As `git rebase --skip` drops the pick git refused to run: `pq rebase --skip` drops
    the patch whose conflict git would not show, and the rebase goes on."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    (fork / ".git" / "index.lock").touch()
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    (fork / ".git" / "index.lock").unlink()
    data = json.loads(pq(fork, "rebase", "--skip", "--json").stdout)
    assert [p["outcome"] for p in data["patches"]] == ["skipped", "clean"]
    assert data["status"] == "done"
    assert git(fork, "log", "--format=%s", "upstream/main..paddle").splitlines()[1:] == [
        "python-glue: scoped compat"]


@pytest.mark.parametrize("move", ["commits on the stopped patch", "the branch moved",
                                  "a queue file back", "the branch in another worktree"])
def test_status_offers_an_abort_that_runs_when_continue_is_blocked(tmp_path: Path,
                                                                   move: str) -> None:
    """While --continue is blocked, `next` is the abort that runs once what `blocked` says
    is done: `--abort --force` where commits were made past the stopped patch or the
    branch moved (the plain one refuses too); where a queue file came back, which the
    abort would write over, `blocked` says so and `next` stays the plain abort."""
    _, fork = stopped(tmp_path)
    if move == "the branch moved":
        hotfix = git(fork, "commit-tree", "-p", "paddle", "-m", "hotfix while stopped",
                     "paddle^{tree}")
        git(fork, "update-ref", "refs/heads/paddle", hotfix)
    elif move == "a queue file back":
        git(fork, "reset", "-q", "--hard", "HEAD~1")  # HEAD left the stop, still detached
        git(fork, "checkout", "paddle", "--", "series.yaml")
    elif move == "the branch in another worktree":
        git(fork, "reset", "-q", "--hard", "HEAD~1")
        git(fork, "worktree", "add", "-q", str(tmp_path / "other"), "paddle")
    else:
        commit_resolution_and_more(fork)
    data = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert data["blocked"], data
    assert pq(fork, "rebase", "--abort", ok=False).exit_code == 2
    if move == "a queue file back":
        assert data["next"] == ["pq rebase --abort"], data
        assert "`pq rebase --abort` refuses too: series.yaml came back" in data["blocked"]
        git(fork, "rm", "-q", "-f", "series.yaml")
    elif move == "the branch in another worktree":
        assert data["next"] == ["pq rebase --abort"], data
        assert "`pq rebase --abort` refuses too: paddle is checked out in the worktree" in \
            data["blocked"]
        git(fork, "worktree", "remove", str(tmp_path / "other"))
    else:
        assert data["next"] == ["pq rebase --abort --force"], data
    ran = pq(fork, *shlex.split(data["next"][0])[1:])
    assert ran.exit_code == 0, ran.output
    assert json.loads(pq(fork, "status", "--json").output)["rebase"] is None


def test_status_says_the_branch_checked_out_elsewhere_blocks_continue(tmp_path: Path) -> None:
    """HEAD at the stop, the branch checked out in a worktree added meanwhile: --continue
    and --abort refuse, and `pq status` says why (it offered `--continue`, blocked null)."""
    _, fork = stopped(tmp_path)
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    git(fork, "worktree", "add", "-q", str(tmp_path / "other"), "paddle")
    data = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert data["blocked"].startswith("paddle is checked out in the worktree"), data
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and data["blocked"] in refused.output
    git(fork, "worktree", "remove", str(tmp_path / "other"))
    assert pq(fork, "rebase", "--continue").exit_code == 0


def test_a_rebase_in_another_worktree_is_named_where_it_blocks(tmp_path: Path) -> None:
    """pq keeps one rebase at a time in a repository: `pq export` in a worktree of another
    branch waits for it, and says where it is (it said the export "would rewrite the
    series under it", of a series that was not its own)."""
    _, fork = stopped(tmp_path)
    other = tmp_path / "other"
    git(fork, "worktree", "add", "-q", "-b", "other", str(other), "paddle")
    refused = pq(other, "export", ok=False)
    assert refused.exit_code == 2
    assert f"in progress in the worktree {fork}; pq keeps one rebase at a time" in \
        refused.output


@pytest.mark.parametrize("older", [False, True])
def test_files_staged_in_the_series_folders_while_stopped_are_refused_not_dropped(
        tmp_path: Path, older: bool) -> None:
    """`git rebase` commits them with the resolution; a patch's commit carries nothing in
    patches/ or mre/, and the rebase ends with those folders as the branch has them: pq's
    --continue, --skip and --abort dropped them (exit 0). They refuse, naming the way.
    `older`: a state of an older version, which did not record the queue paths (they are
    read from its series.yaml)."""
    _, fork = stopped(tmp_path)
    path = fork / ".git" / "pq" / "rebase" / "state.json"
    state = json.loads(path.read_bytes())
    assert state["queue_paths"] == ["series.yaml", "patches", "mre", ".pq"]
    if older:
        del state["queue_paths"]
        path.write_text(json.dumps(state))
    write(fork, "setup.py", RESOLVED)
    write(fork, "patches/NOTES.txt", "my notes on the patches\n")
    write(fork, "mre/repro1/run.sh", "exit 0\n")
    git(fork, "add", "setup.py", "patches/NOTES.txt", "mre")
    said = ("mre/repro1/run.sh, patches/NOTES.txt are staged in the series' folders while "
            "the rebase is stopped")
    for action in ("continue", "skip", "abort"):
        refused = pq(fork, "rebase", f"--{action}", ok=False)
        assert refused.exit_code == 2 and said in refused.output, refused.output
        assert f"`git rm --cached -q -- mre/repro1/run.sh patches/NOTES.txt` keeps them in " \
               f"the working tree only; then `pq rebase --{action}`" in refused.output
    status = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert status["blocked"].startswith(said), status
    git(fork, "rm", "--cached", "-q", "--", "mre/repro1/run.sh", "patches/NOTES.txt")
    pq(fork, "rebase", "--continue")
    assert (fork / "patches/NOTES.txt").read_text() == "my notes on the patches\n"
    assert (fork / "mre/repro1/run.sh").read_text() == "exit 0\n"
    assert git(fork, "status", "--porcelain") == "?? mre/\n?? patches/NOTES.txt"


def test_a_queue_file_a_stash_pop_brought_back_is_no_conflict_of_the_patch(
        tmp_path: Path) -> None:
    """`git stash pop` of a series.yaml edit while stopped leaves it unmerged: status said
    "deleted upstream, modified by the patch", counted it, and named `git add series.yaml`,
    which --continue refuses. It says what --continue says: the queue file came back."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    write(fork, "series.yaml", (fork / "series.yaml").read_text() + "# my note\n")
    git(fork, "stash", "-q")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", RESOLVED)
    git(fork, "add", "setup.py")
    git(fork, "stash", "pop", "-q", check=False)
    assert git(fork, "status", "--porcelain", "series.yaml").startswith("DU")
    status = json.loads(pq(fork, "status", "--json").output)["rebase"]
    assert (status["conflicted"], status["resolved"]) == ([], ["setup.py"]), status
    assert status["blocked"].startswith("series.yaml came back while the rebase is stopped")
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and status["blocked"] in refused.output


def test_upstreams_file_git_moves_aside_is_said_to_be_upstreams(tmp_path: Path) -> None:
    """Upstream turned the folder sl/ into a symlink sl; the patch adds sl/new: git keeps the
    patch's folder and moves upstream's symlink aside as `sl~HEAD`. It is upstream's (pq
    looked `sl~HEAD` up upstream and called it "added by an earlier patch only")."""
    up = make_upstream(tmp_path / "upstream", {"sl/one": "1\n", "e/one": "1\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "sl/new", "new\n")
    commit_all(fork, "python-glue: add sl/new")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(up, "rm", "-r", "-q", "sl")
    (up / "sl").symlink_to("e")
    git(up, "add", "sl")
    git(up, "commit", "-q", "-m", "upstream: sl becomes a symlink")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    [c] = json.loads(pq(fork, "status", "--json").stdout)["rebase"]["conflicted"]
    assert (c["path"], c["code"], c["kind"]) == (
        "sl~HEAD", "AU", "upstream's sl, moved aside: the patch has a folder there")
    # Its fix keeps no file named `sl~HEAD` (`git add` of it, the plain fix, would commit one).
    assert c["fix"].startswith("`git rm 'sl~HEAD'` keeps the patch's folder"), c["fix"]
    git(fork, "rm", "-q", "sl~HEAD")
    pq(fork, "rebase", "--continue")
    assert git(fork, "ls-tree", "-r", "--name-only", "paddle~1", "sl", "sl~HEAD") == "sl/new"


def test_upstreams_file_git_moves_into_a_renamed_folder_is_said_to_be_upstreams(
        tmp_path: Path) -> None:
    """The patch renames d/ to f/; upstream adds d/c: git's directory-rename detection
    puts it at f/c, a conflict (file location). Neither upstream nor the stack so far has
    f/c: it is upstream's file, moved (pq called it "added by an earlier patch only")."""
    up = make_upstream(tmp_path / "upstream", {"d/a": "a\n", "d/b": "b\n"})
    fork = make_fork(tmp_path, up)
    git(fork, "mv", "d", "f")
    commit_all(fork, "build: move d to f")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(up, "d/c", "c\n")
    commit_all(up, "upstream: add d/c")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    [c] = json.loads(pq(fork, "status", "--json").stdout)["rebase"]["conflicted"]
    assert (c["path"], c["code"]) == ("f/c", "AU")
    assert c["kind"].startswith("upstream's file, moved here by git"), c["kind"]


def test_the_patchs_file_git_moves_aside_is_said_to_be_the_patchs(tmp_path: Path) -> None:
    """The patch adds a file `tool` where upstream now has a folder: git moves the patch's
    file aside as `tool~<commit> (<subject>)`. pq called it "added by the patch only",
    with `git add` as the fix, which would commit a file of that name."""
    fork = make_fork(tmp_path)
    write(fork, "tool", "file\n")
    commit_all(fork, "python-glue: add tool")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(tmp_path / "upstream", "tool/t.sh", "t\n")
    commit_all(tmp_path / "upstream", "upstream: a tool folder")
    git(fork, "fetch", "-q", "upstream")
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    [c] = json.loads(pq(fork, "status", "--json").stdout)["rebase"]["conflicted"]
    assert c["path"].startswith("tool~") and c["code"] == "UA", c
    assert c["kind"] == "the patch's tool, moved aside: upstream has a folder there", c
    assert "git add" not in c["fix"].split(" && ")[0] and "NEW-NAME" in c["fix"], c["fix"]
    subprocess.run(c["fix"].split("`")[1].replace("NEW-NAME", "tool.sh"), shell=True,
                   cwd=fork, check=True)
    pq(fork, "rebase", "--continue")
    assert git(fork, "ls-tree", "-r", "--name-only", "paddle~1", "tool", "tool.sh",
               "tool~*").splitlines() == ["tool.sh", "tool/t.sh"]


def test_a_branch_deleted_while_stopped_comes_back_with_abort(tmp_path: Path) -> None:
    """`git branch -D` of the branch while the rebase is stopped (HEAD is detached there):
    --abort refused, saying it "would overwrite it", and asked for --force; nothing is
    there to lose, and the abort makes the branch again. --continue says it was deleted."""
    _, fork = stopped(tmp_path)
    before = git(fork, "rev-parse", "paddle")  # the stop has not moved it
    git(fork, "branch", "-q", "-D", "paddle")
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and "paddle was deleted while the rebase was stopped" in \
        refused.output and "overwrite" not in refused.output, refused.output
    pq(fork, "rebase", "--abort")
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    assert git(fork, "rev-parse", "paddle") == before
    assert git(fork, "status", "--porcelain", "--untracked-files=no") == ""
    assert (fork / "series.yaml").is_file()


def test_a_rebase_state_nested_too_deep_is_refused_in_one_line(tmp_path: Path) -> None:
    """JSON nested deeper than Python's parser recurses (a damaged or hostile state file) is
    an unreadable state too, not an internal error."""
    _, fork = stopped(tmp_path)
    path = fork / ".git" / "pq" / "rebase" / "state.json"
    path.write_text("[" * 100_000 + "]" * 100_000)
    for args in (["status"], ["series", "--json"], ["log"], ["rebase", "--abort"],
                 ["rebase", "--skip"]):
        result = pq(fork, *args, ok=False)
        assert "internal error" not in result.output, (args, result.output)
        assert "unreadable rebase state" in result.output, (args, result.output)


def test_an_abort_after_git_was_stopped_showing_the_conflict_names_its_half_written_files(
        tmp_path: Path) -> None:
    """Killed while git wrote the conflict's files (a double Ctrl-C), HEAD still on the
    branch: the files that differ are git's half-written checkout, not edits of the
    user's made on another branch: --abort said "commit them or git stash them", which
    would commit the deletion of series.yaml and patches/. It names them as what they are,
    and `--abort --force` puts everything back."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    tip = git(fork, "rev-parse", "HEAD")
    labels = rebase_checkpoints(fork, tmp_path)
    assert rebase_process(fork, PQ_FAULT_AT=str(labels.index("git checkout") + 1)
                          ).returncode != 0
    (fork / "setup.py").unlink()  # as far as git got
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    refused = pq(fork, "rebase", "--abort", ok=False)
    assert refused.exit_code == 2
    assert "git was stopped while it wrote the files of the rebase's conflict" in refused.output
    assert "commit them" not in refused.output
    assert "`pq rebase --abort --force` puts paddle's files back" in refused.output
    said = pq(fork, "status")  # not the bare --abort, which refuses
    assert "next: " in said.output and "`pq rebase --abort --force` puts" in said.output
    assert json.loads(pq(fork, "status", "--json").stdout)["rebase"]["next"] == [
        "pq rebase --abort --force"]
    # The branch checked out in another worktree too: --force does not get past that, and
    # status says both (the forced abort is what runs once the other worktree lets go).
    other = tmp_path / "other"
    git(fork, "worktree", "add", "-q", "--force", str(other), "paddle")
    status = json.loads(pq(fork, "status", "--json").stdout)["rebase"]
    assert status["next"] == ["pq rebase --abort --force"], status
    assert "git was stopped while it wrote the files" in status["blocked"], status
    assert f"paddle is checked out in the worktree {other}" in status["blocked"], status
    refused = pq(fork, "rebase", "--abort", "--force", ok=False)
    assert refused.exit_code == 2 and f"the worktree {other}" in refused.output
    git(fork, "worktree", "remove", "--force", str(other))
    pq(fork, "rebase", "--abort", "--force")
    assert git(fork, "rev-parse", "HEAD") == tip
    assert git(fork, "status", "--porcelain") == ""


def test_an_abort_after_a_kill_takes_back_the_queue_edit_the_rebase_carried(
        tmp_path: Path) -> None:
    """A staged series.yaml edit, carried into the rebase, and pq killed before git wrote
    the conflict's files: --abort called the user's own edit git's half-written file and
    refused, saying that --force would throw it away (it keeps it)."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    tip = git(fork, "rev-parse", "HEAD")
    text = (fork / "series.yaml").read_text()
    write(fork, "series.yaml", text.replace("version: 1\n", "version: 1\n# my note\n", 1))
    git(fork, "add", "series.yaml")
    before = git(fork, "status", "--porcelain")
    labels = rebase_checkpoints(fork, tmp_path)
    assert rebase_process(fork, PQ_FAULT_AT=str(labels.index("git checkout"))
                          ).returncode != 0
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    # An edit made since the kill is the user's: refused, not thrown away.
    edited = (fork / "series.yaml").read_text() + "# made since\n"
    write(fork, "series.yaml", edited)
    refused = pq(fork, "rebase", "--abort", ok=False)
    assert refused.exit_code == 2 and "series.yaml differ" in refused.output, refused.output
    assert (fork / "series.yaml").read_text() == edited
    write(fork, "series.yaml", edited.replace("# made since\n", ""))
    pq(fork, "rebase", "--abort")
    assert git(fork, "rev-parse", "HEAD") == tip
    assert git(fork, "status", "--porcelain") == before
    assert "# my note" in (fork / "series.yaml").read_text()


def test_a_rebase_killed_while_it_replayed_is_offered_only_the_abort(tmp_path: Path) -> None:
    """Killed after it wrote its state, before any stop: `--continue` refuses there, yet
    `pq log`, the undo's refusal and the refusals of other commands named it."""
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    labels = rebase_checkpoints(fork, tmp_path)
    at = labels.index("rename state.json") + 2
    assert rebase_process(fork, PQ_FAULT_AT=str(at)).returncode != 0
    said = {"log": pq(fork, "log").output.splitlines()[-1],
            "undo": pq(fork, "undo", ok=False).output,
            "export": pq(fork, "export", ok=False).output}
    for where, text in said.items():
        assert "`pq rebase --abort`" in text and "--continue" not in text, (where, text)
    assert pq(fork, "rebase", "--continue", ok=False).exit_code == 2
    pq(fork, "rebase", "--abort")
    assert git(fork, "status", "--porcelain") == ""


def test_a_landing_killed_then_continued_over_a_touched_file(tmp_path: Path) -> None:
    """Killed at the landing's `git reset --keep`; the user's editor then touches a file
    the landing changes, its bytes the same. `--continue` failed with git's "not uptodate"
    and told the user to move the file aside: nothing was in the way but a stale stat."""
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: readme", {"README.md": "upstream, moved on\n"})
    trial = tmp_path / "trial"
    shutil.copytree(fork, trial, symlinks=True)
    log = tmp_path / "checkpoints"
    assert rebase_process(trial, PQ_FAULT_LOG=str(log)).returncode == 0
    labels = [ln.split(" ", 1)[1] for ln in log.read_text().splitlines()]
    at = len(labels) - labels[::-1].index("git reset")  # the landing's, 1-based
    assert rebase_process(fork, PQ_FAULT_AT=str(at)).returncode != 0
    status = pq(fork, "status").output
    assert "not landed yet" in status and "move aside what was in the way" not in status
    readme = fork / "README.md"
    os.utime(readme, (readme.stat().st_atime, readme.stat().st_mtime + 5))
    pq(fork, "rebase", "--continue")
    assert readme.read_text() == "upstream, moved on\n"
    assert git(fork, "status", "--porcelain") == ""


def test_a_kill_of_pq_s_process_group_leaves_no_index_lock(tmp_path: Path) -> None:
    """A rebase's `git status` runs in a thread beside the main one and refreshes the index
    under index.lock; a SIGKILL to pq's process group (a CI job cancelled, `timeout -s
    KILL`) killed it with the lock held, and every git command after it failed. Here a
    `git status` that holds the lock a while stands in for a slow one."""
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: readme", {"README.md": "upstream, moved on\n"})
    real = shutil.which("git")
    assert real is not None
    wrappers = tmp_path / "bin"
    wrappers.mkdir()
    lock, started = fork / ".git" / "index.lock", tmp_path / "started"
    (wrappers / "git").write_text(
        "#!/bin/sh\n"
        f'case " $* " in *" status "*) touch {started}; : > {lock}; sleep 2; rm -f {lock};; '
        "esac\n"
        f'exec {real} "$@"\n')
    (wrappers / "git").chmod(0o755)
    env = {**os.environ, "PATH": f"{wrappers}:{os.environ['PATH']}"}
    proc = subprocess.Popen([sys.executable, "-m", "pq", "rebase", "upstream/main"], cwd=fork,
                            env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            process_group=0)
    try:
        for _ in range(500):
            if started.exists() and lock.exists():
                break
            time.sleep(0.01)
        assert lock.exists()
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    for _ in range(400):  # the `git status` goes on to its end, and takes its lock away
        if not lock.exists():
            break
        time.sleep(0.01)
    assert not lock.exists()
    pq(fork, "rebase", "upstream/main")
