"""`pq rebase` on real repositories: every outcome, the conflict loop, abort, rerere,
renames, the no-op, byte stability of patch files, the JSON report and bad input."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from gitrepo import (
    commit_all,
    git,
    make_fork,
    make_upstream,
    pq,
    snapshot_queue,
    terminate_pq_once_started,
    worktree_files,
    write,
)

SETUP = "".join(f"# setup line {i}\n" for i in range(1, 31))
GLUE = "".join(f"glue_{i} = {i}\n" for i in range(1, 31))
UPSTREAM_FILES = {
    "setup.py": SETUP,
    "pkg/__init__.py": GLUE,
    "csrc/ops.cc": "#include <torch/extension.h>\n\nint f() { return 1; }\n",
    "README.md": "upstream\n",
}
BUILD_PATCH = "setup.py"
GLUE_PATCH = "0002-python-glue-scoped-compat.patch"


def set_line(text: str, n: int, new: str) -> str:
    lines = text.splitlines(keepends=True)
    lines[n - 1] = new + "\n"
    return "".join(lines)


def make_series(tmp: Path, commit: bool = True) -> tuple[Path, Path]:
    """An upstream and a fork carrying two patches: setup.py line 3, pkg/__init__.py line 5."""
    up = make_upstream(tmp / "upstream", dict(UPSTREAM_FILES))
    fork = make_fork(tmp, up)
    write(fork, "setup.py", set_line(SETUP, 3, "import paddle; paddle.enable_compat()"))
    commit_all(fork, "build: enable compat")
    write(fork, "pkg/__init__.py", set_line(GLUE, 5, "glue_5 = 'scoped'"))
    commit_all(fork, "python-glue: scoped compat")
    args = ["init", "--upstream", "upstream/main"] + (["--commit"] if commit else [])
    pq(fork, *args)
    return up, fork


def upstream_commit(up: Path, fork: Path, message: str, files: dict[str, str]) -> str:
    for rel, text in files.items():
        write(up, rel, text)
    sha = commit_all(up, message)
    git(fork, "fetch", "-q", "upstream")
    return sha


def whole_state(root: Path) -> dict[str, object]:
    """Branch, HEAD, index and every file of the working tree, byte for byte."""
    files = worktree_files(root)
    return {"branch": git(root, "rev-parse", "refs/heads/paddle"),
            "HEAD": git(root, "symbolic-ref", "-q", "HEAD", check=False),
            "index": git(root, "ls-files", "-s"),
            "status": git(root, "status", "--porcelain", "--untracked-files=all"),
            "orig": git(root, "for-each-ref", "refs/pq/orig-head"),
            "files": files}


def line_of(output: str, name: str) -> str:
    return next(line for line in output.splitlines() if name in line)


def patch_names(fork: Path) -> list[str]:
    return sorted(p.name for p in (fork / "patches").iterdir())


def test_clean_rebase_moves_branch_and_base(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    before = snapshot_queue(fork)
    tip = git(fork, "rev-parse", "HEAD")
    new = upstream_commit(up, fork, "upstream: docs", {"README.md": "upstream, improved\n"})
    result = pq(fork, "rebase", "upstream/main")
    assert "(1 commit)" in result.output
    assert result.output.count("clean") == 2
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    assert git(fork, "rev-parse", "refs/pq/orig-head/paddle") == tip
    assert git(fork, "status", "--porcelain") == ""
    assert f"base: {new}" in (fork / "series.yaml").read_text()
    after = snapshot_queue(fork)
    assert {k: v for k, v in after.items() if k != "series.yaml"} == {
        k: v for k, v in before.items() if k != "series.yaml"}
    assert (fork / "README.md").read_text() == "upstream, improved\n"
    assert "enable_compat" in (fork / "setup.py").read_text()
    # The branch is: new base, one commit per patch, one bookkeeping commit.
    assert git(fork, "rev-list", "--count", f"{new}..HEAD") == "3"
    assert git(fork, "log", "-1", "--format=%s", "HEAD") == f"pq: rebase series onto {new[:12]}"
    pq(fork, "export")
    assert snapshot_queue(fork) == after


def test_merged_when_upstream_edits_near_the_patch(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: tweak setup",
                    {"setup.py": set_line(SETUP, 5, "# setup line 5, edited upstream")})
    result = pq(fork, "rebase", "upstream/main", "--json")
    data = json.loads(result.output)
    outcomes = {p["name"]: p["outcome"] for p in data["patches"]}
    assert list(outcomes.values()) == ["merged", "clean"]
    text = (fork / "setup.py").read_text()
    assert "enable_compat" in text and "edited upstream" in text
    build = data["patches"][0]
    assert build["changed"] and any("edited upstream" in line for line in build["range_diff"])
    assert not data["patches"][1]["changed"]


def test_dropped_patch_names_the_upstream_commit(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    adopted = upstream_commit(up, fork, "Use scoped compat in the package",
                              {"pkg/__init__.py": set_line(GLUE, 5, "glue_5 = 'scoped'")})
    upstream_commit(up, fork, "upstream: later work", {"README.md": "later\n"})
    result = pq(fork, "rebase", "upstream/main")
    assert f"already upstream: {adopted[:12]} Use scoped compat in the package" in result.output
    data = json.loads(pq(fork, "series", "--json").output)
    assert [p["name"] for p in data["patches"]] == ["0001-build-enable-compat.patch"]
    assert patch_names(fork) == ["0001-build-enable-compat.patch"]
    assert git(fork, "status", "--porcelain") == ""


def test_dropped_patch_taken_with_more_changes_names_the_commit(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: docs", {"README.md": "docs\n"})
    taken = upstream_commit(up, fork, "Scoped compat, and a neighbour", {
        "pkg/__init__.py": set_line(set_line(GLUE, 5, "glue_5 = 'scoped'"), 7, "glue_7 = 77")})
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    assert [(p["outcome"], p["upstream_commit"]) for p in data["patches"]] == [
        ("clean", None), ("dropped", taken)]


@pytest.mark.parametrize("reverted_first", [False, True])
def test_dropped_patch_taken_in_a_file_upstream_moved_names_the_commit(
        tmp_path: Path, reverted_first: bool) -> None:
    """Upstream moved the patch's file, then made the patch's change at the new name: the
    merge follows the move and leaves nothing, and the commit that took it is named, not
    "no change left on the new base"; nor is one that made it before and was reverted."""
    up, fork = make_series(tmp_path)
    if reverted_first:
        reverted = upstream_commit(up, fork, "Scoped compat, and docs", {
            "pkg/__init__.py": set_line(GLUE, 5, "glue_5 = 'scoped'"), "README.md": "docs\n"})
        git(up, "revert", "--no-edit", reverted)
    git(up, "mv", "pkg/__init__.py", "pkg/core.py")
    commit_all(up, "upstream: move the package's code to core.py")
    taken = upstream_commit(up, fork, "Scoped compat in core",
                            {"pkg/core.py": set_line(GLUE, 5, "glue_5 = 'scoped'")})
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    assert [(p["outcome"], p["upstream_commit"]) for p in data["patches"]] == [
        ("clean", None), ("dropped", taken)], data["patches"]


def conflict_upstream(up: Path, fork: Path) -> str:
    return upstream_commit(up, fork, "upstream: rewrite line 3",
                           {"setup.py": set_line(SETUP, 3, "import other_framework")})


def test_conflict_then_continue(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code == 1
    err = result.output.strip().splitlines()[-1]
    assert err.startswith("pq: error: patches/0001-build-enable-compat.patch (layer build) "
                          "conflicts in setup.py")
    assert "git add setup.py" in err and "pq rebase --continue" in err
    assert "pq rebase --skip" in err and "pq rebase --abort" in err
    text = (fork / "setup.py").read_text()
    assert "<<<<<<<" in text and "import other_framework" in text
    # Not resolved yet: refused, nothing changes.
    again = pq(fork, "rebase", "--continue", ok=False)
    assert again.exit_code == 1 and "setup.py still unmerged" in again.output
    write(fork, "setup.py", set_line(SETUP, 3, "import other_framework; paddle.enable_compat()"))
    git(fork, "add", "setup.py")
    result = pq(fork, "rebase", "--continue")
    assert line_of(result.output, "0001-build-enable-compat.patch").split() == [
        "conflict", "0001-build-enable-compat.patch", "(resolved", "by", "hand)"]
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    assert git(fork, "status", "--porcelain") == ""
    patch = (fork / "patches/0001-build-enable-compat.patch").read_text()
    assert "+import other_framework; paddle.enable_compat()" in patch
    assert not (fork / ".git/pq/rebase/state.json").exists()


def test_conflict_then_skip_is_recorded(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    pq(fork, "rebase", "upstream/main", ok=False)
    result = pq(fork, "rebase", "--skip", "--json", ok=True)
    data = json.loads(result.output)
    assert data["status"] == "done"
    assert [(p["name"], p["outcome"]) for p in data["patches"]] == [
        ("0001-build-enable-compat.patch", "skipped"), (GLUE_PATCH, "clean")]
    assert patch_names(fork) == [GLUE_PATCH]
    assert "import other_framework" in (fork / "setup.py").read_text()
    assert git(fork, "status", "--porcelain") == ""


def test_conflict_then_abort_restores_everything(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path, commit=False)  # queue files not even committed
    git(fork, "update-ref", "refs/pq/orig-head", "HEAD~1")
    write(fork, "patches/README", "the user's own notes\n")  # not a patch: left alone
    before = whole_state(fork)
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    assert whole_state(fork) != before
    write(fork, "setup.py", "half-way resolution\n")
    result = pq(fork, "rebase", "--abort")
    assert "rebase aborted" in result.output
    assert whole_state(fork) == before
    assert not (fork / ".git/pq/rebase").exists()


def test_recorded_resolution_replays_on_a_later_rebase(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    conflict_upstream(up, fork)
    orig = git(fork, "rev-parse", "HEAD")
    pq(fork, "rebase", "upstream/main", ok=False)
    resolved = set_line(SETUP, 3, "import other_framework; paddle.enable_compat()")
    write(fork, "setup.py", resolved)
    git(fork, "add", "setup.py")
    pq(fork, "rebase", "--continue")
    first = snapshot_queue(fork)
    # Back to the old stack, and meet the same conflict again.
    git(fork, "reset", "-q", "--hard", orig)
    result = pq(fork, "rebase", "upstream/main")
    assert line_of(result.output, "0001-build-enable-compat.patch").split() == [
        "merged", "0001-build-enable-compat.patch", "(resolved", "from", "a", "recorded",
        "resolution)"]
    assert (fork / "setup.py").read_text() == resolved
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"
    assert git(fork, "status", "--porcelain") == ""
    assert snapshot_queue(fork)["patches/0001-build-enable-compat.patch"] == \
        first["patches/0001-build-enable-compat.patch"]


def test_patch_follows_an_upstream_rename(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    git(up, "mv", "pkg/__init__.py", "pkg/core.py")
    commit_all(up, "upstream: move the package body to core.py")
    git(fork, "fetch", "-q", "upstream")
    result = pq(fork, "rebase", "upstream/main", "--json")
    data = json.loads(result.output)
    assert data["patches"][1]["outcome"] == "merged"
    assert "glue_5 = 'scoped'" in (fork / "pkg/core.py").read_text()
    assert not (fork / "pkg/__init__.py").exists()
    patch = (fork / "patches" / GLUE_PATCH).read_text()
    assert "+++ b/pkg/core.py" in patch and "pkg/__init__.py" not in patch


def test_covers_follow_a_file_the_patch_adds_in_a_folder_upstream_moved(
        tmp_path: Path) -> None:
    """Upstream moved the folder (`git mv python/tinyop tinyop`) where a patch edits one
    file and adds another: the edited file's `covers` entry followed, the added file's
    kept its old path, and the audit then refused the rebased series (WA007)."""
    up = make_upstream(tmp_path / "upstream", {
        "python/tinyop/__init__.py": "import torch\nfrom . import _C\n",
        "python/tinyop/ops.py": "".join(f"{i}\n" for i in range(10))})
    fork = make_fork(tmp_path, up)
    write(fork, "python/tinyop/_compat.py", "import paddle  # TODO(pq): scoped compat\n"
          "paddle.enable_compat(scope='tinyop')\nimport torch\n")
    write(fork, "python/tinyop/__init__.py",
          "from ._compat import torch  # TODO(pq): scoped compat\nfrom . import _C\n")
    commit_all(fork, "glue: import torch through a compat shim")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    series = fork / "series.yaml"
    series.write_text(series.read_text().replace("    layer: python-glue\n", """\
    layer: python-glue
    workaround:
      kind: upstream-private
      covers: [python/tinyop/__init__.py, python/tinyop/_compat.py]
      reason: torch is imported through paddle's compat layer
      remove_when:
        - "upstream-contains: python/tinyop/__init__.py: enable_compat"
      issue: "not-needed: an internal shim"
      marker: "TODO(pq): scoped compat"
""", 1))
    commit_all(fork, "pq: workaround block")
    pq(fork, "export", "--commit")
    pq(fork, "check")
    git(up, "mv", "python/tinyop", "tinyop")
    commit_all(up, "upstream: python/tinyop is tinyop")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main", ok=False)  # git's directory rename: a stop, as git's
    git(fork, "add", "tinyop/_compat.py")
    pq(fork, "rebase", "--continue")
    assert "covers: [tinyop/__init__.py, tinyop/_compat.py]" in series.read_text()
    assert "upstream-contains: tinyop/__init__.py: enable_compat" in series.read_text()
    pq(fork, "check")


def test_covers_follow_a_moved_file_a_later_patch_deletes(tmp_path: Path) -> None:
    """One patch adds tools/x.py, the next deletes it, both covering it; upstream moved
    tools/ to scripts/. Neither branch tip has the file, so comparing the tips missed the
    move: each patch's old commit against its new one shows it."""
    up = make_upstream(tmp_path / "upstream", {
        "tools/a.py": "".join(f"{i}\n" for i in range(30)),
        "tools/b.py": "".join(f"{i}\n" for i in range(100, 130))})
    fork = make_fork(tmp_path, up)
    write(fork, "tools/x.py", "".join(f"{i}\n" for i in range(200, 230)))
    commit_all(fork, "add x")
    git(fork, "rm", "-q", "tools/x.py")
    commit_all(fork, "drop x")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    series = fork / "series.yaml"
    series.write_text(series.read_text().replace("layer: python-glue", """\
layer: python-glue
    workaround:
      kind: compat-gap
      covers: [tools/x.py]
      reason: r
      remove_when: ["manual: x"]
      issue: https://example.com/1
      marker: "none: x"
    acknowledged: [{rule: WA003, reason: "no mre"}, {rule: WA016, reason: "manual"}]""", 2))
    commit_all(fork, "pq: workaround blocks")
    pq(fork, "export", "--commit")
    pq(fork, "check")
    git(up, "mv", "tools", "scripts")
    commit_all(up, "upstream: tools/ is scripts/")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main", ok=False)  # git's directory rename: a stop
    git(fork, "add", "scripts/x.py")
    pq(fork, "rebase", "--continue", ok=False)  # the delete of a file moved: a stop
    git(fork, "rm", "-q", "scripts/x.py")
    pq(fork, "rebase", "--continue")
    assert series.read_text().count("covers: [scripts/x.py]") == 2, series.read_text()
    pq(fork, "check")


def test_rebase_onto_the_same_base_is_a_no_op(tmp_path: Path) -> None:
    _, fork = make_series(tmp_path)
    before = whole_state(fork)
    oplog = git(fork, "rev-parse", "refs/pq/oplog")
    result = pq(fork, "rebase", "upstream/main")
    assert "already up to date" in result.output
    assert whole_state(fork) == before
    assert git(fork, "rev-parse", "refs/pq/oplog") == oplog  # nothing changed: no entry
    # Each patch's commit, before and after, is the one the branch holds (it was null).
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    commits = git(fork, "rev-list", "--reverse", "upstream/main..HEAD~1").split()
    assert data["status"] == "up-to-date" and data["drift"] is None
    assert [(p["source"], p["commit"]) for p in data["patches"]] == list(zip(commits, commits))


def test_a_forced_move_back_to_an_older_upstream_reports_no_drift(tmp_path: Path) -> None:
    """Back onto an ancestor of the base, no upstream commit is crossed: `drift` was a
    report of 0 commits (its text line too), for a range `pq drift` refuses."""
    _, fork = make_series(tmp_path)
    data = json.loads(pq(fork, "rebase", "--force", "upstream/main~1", "--json").output)
    assert data["status"] == "done" and data["upstream"]["commits"] == 0
    assert data["drift"] is None
    git(fork, "reset", "-q", "--hard", "HEAD@{1}")
    assert "drift:" not in pq(fork, "rebase", "--force", "upstream/main~1").output


def test_upstream_edit_far_from_the_hunk_keeps_the_patch_file(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    before = snapshot_queue(fork)
    upstream_commit(up, fork, "upstream: edit the end of setup.py",
                    {"setup.py": set_line(SETUP, 27, "# setup line 27, far below")})
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    assert [p["changed"] for p in data["patches"]] == [False, False]
    after = snapshot_queue(fork)
    assert after["patches/0001-build-enable-compat.patch"] == \
        before["patches/0001-build-enable-compat.patch"]
    assert "far below" in (fork / "setup.py").read_text()


def test_json_shape(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    old = git(fork, "merge-base", "HEAD", "upstream/main")
    new = upstream_commit(up, fork, "upstream: docs", {"README.md": "more\n"})
    tip = git(fork, "rev-parse", "HEAD")
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    assert set(data) == {"status", "branch", "upstream", "orig_head", "head", "patches",
                         "conflict", "notes", "ignored_hooks", "gate", "drift"}
    assert data["notes"] == [] and data["ignored_hooks"] == []
    assert data["status"] == "done" and data["branch"] == "paddle"
    assert (data["drift"]["old"], data["drift"]["new"], data["drift"]["commits"]) == (old, new, 1)
    assert data["upstream"] == {"ref": "upstream/main", "old_base": old, "new_base": new,
                                "commits": 1}
    assert data["orig_head"] == tip and data["head"] == git(fork, "rev-parse", "HEAD")
    assert data["conflict"] is None and data["gate"] is None
    for p in data["patches"]:
        assert set(p) == {"name", "layer", "outcome", "rerere", "rerere_files", "upstream_commit",
                          "upstream_reverted", "commit", "source", "changed", "range_diff"}
    assert data["patches"][0]["layer"] == "build"


def test_bad_inputs_exit_2_with_one_line(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)

    def refused(*args: str) -> str:
        result = pq(fork, *args, ok=False)
        assert result.exit_code == 2, result.output
        lines = result.output.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("pq: error: ")
        return lines[0]

    tip = git(fork, "rev-parse", "HEAD")
    assert "unknown upstream ref 'upstream/nope'" in refused("rebase", "upstream/nope")
    assert "no pq rebase in progress" in refused("rebase", "--continue")
    assert "no pq rebase in progress" in refused("rebase", "--abort")
    assert "one of" in refused("rebase", "upstream/main", "--skip")
    write(fork, "csrc/ops.cc", "dirty\n")
    assert "uncommitted changes in csrc/ops.cc" in refused("rebase", "upstream/main")
    git(fork, "checkout", "-q", "--", "csrc/ops.cc")
    write(fork, "csrc/ops.cc", "unexported\n")
    commit_all(fork, "not exported")
    assert "pq export" in refused("rebase", "upstream/main")
    # Both at once: the uncommitted change is named first, as before `git status` ran
    # alongside the reading of the stack.
    write(fork, "csrc/ops.cc", "dirty again\n")
    assert "uncommitted changes in csrc/ops.cc" in refused("rebase", "upstream/main")
    git(fork, "reset", "-q", "--hard", tip)
    conflict_upstream(up, fork)
    pq(fork, "rebase", "upstream/main", ok=False)
    assert "already in progress" in refused("rebase", "upstream/main")
    pq(fork, "rebase", "--abort")
    assert git(fork, "rev-parse", "HEAD") == tip


def test_a_patch_file_edited_by_hand_is_named_with_the_fixes_that_work(tmp_path: Path
                                                                       ) -> None:
    """Not "commits that differ; run `pq export`" (export refuses a hand edit): the file,
    and `pq apply` (keep the edit) or `pq export --force` (keep the commit)."""
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: more", {"README.md": "more\n"})
    patch = fork / "patches" / GLUE_PATCH
    patch.write_text(patch.read_text().replace("+glue_5 = 'scoped'", "+glue_5 = 'scoped!'"))
    commit_all(fork, "edit the patch by hand")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2, refused.output
    assert refused.output.startswith(
        f"pq: error: patches/{GLUE_PATCH}: the patch file differs from paddle's commit for "
        "it"), refused.output
    assert "`pq apply` rebuilds the branch" in refused.output
    assert "`pq export --force` writes the patch files again" in refused.output
    pq(fork, "apply")  # the fix it names works
    pq(fork, "rebase", "upstream/main")
    assert "glue_5 = 'scoped!'" in (fork / "pkg/__init__.py").read_text()


def test_two_conflicts_resolved_one_after_the_other(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: rewrite both lines", {
        "setup.py": set_line(SETUP, 3, "import other_framework"),
        "pkg/__init__.py": set_line(GLUE, 5, "glue_5 = 'global'")})
    write(fork, "patches/README", "the user's own notes\n")
    first = pq(fork, "rebase", "upstream/main", ok=False)
    assert first.exit_code == 1 and "conflicts in setup.py" in first.output
    assert not (fork / "series.yaml").exists()  # the queue files wait in the rebase state
    assert (fork / "patches/README").read_text() == "the user's own notes\n"
    write(fork, "setup.py", set_line(SETUP, 3, "import other_framework  # and paddle"))
    git(fork, "add", "setup.py")
    second = pq(fork, "rebase", "--continue", ok=False)
    assert second.exit_code == 1 and "conflicts in pkg/__init__.py" in second.output
    assert "import other_framework  # and paddle" in (fork / "setup.py").read_text()
    write(fork, "pkg/__init__.py", set_line(GLUE, 5, "glue_5 = 'global, scoped'"))
    git(fork, "add", "pkg/__init__.py")
    data = json.loads(pq(fork, "rebase", "--continue", "--json").output)
    assert [p["outcome"] for p in data["patches"]] == ["conflict", "conflict"]
    assert git(fork, "status", "--porcelain") == "?? patches/README"
    assert "glue_5 = 'global, scoped'" in (fork / "pkg/__init__.py").read_text()
    assert git(fork, "symbolic-ref", "HEAD") == "refs/heads/paddle"


def test_patch_commit_that_also_edits_the_queue(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    write(fork, "mre/gap/run.sh", "exit 1\n")
    write(fork, "setup.py", set_line((fork / "setup.py").read_text(), 10, "# compat note"))
    write(fork, "series.yaml", (fork / "series.yaml").read_text().replace(
        "summary: 'build: enable compat'", "summary: enable compat in the build"))
    commit_all(fork, "build: compat note")  # code, series.yaml and mre/ in one commit
    pq(fork, "export", "--commit")
    upstream_commit(up, fork, "upstream: setup tail",
                    {"setup.py": set_line(SETUP, 28, "# setup line 28, upstream")})
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    assert [p["outcome"] for p in data["patches"]] == ["merged", "clean", "merged"]
    text = (fork / "series.yaml").read_text()
    assert "summary: enable compat in the build" in text
    assert (fork / "mre/gap/run.sh").read_text() == "exit 1\n"
    for p in data["patches"]:  # the rebased patch commits carry no queue files
        assert git(fork, "ls-tree", "--name-only", p["commit"], "series.yaml", "mre") == ""
    assert git(fork, "status", "--porcelain") == ""


def test_bookkeeping_commit_from_a_commit_or_the_worktree_is_the_rebases(tmp_path: Path
                                                                          ) -> None:
    from pq.git.repo import Git
    from pq.queue import bookkeeping
    from pq.queue.files import read_worktree

    up, fork = make_series(tmp_path)
    write(fork, "mre/gap/run.sh", "exit 1\n")
    commit_all(fork, "pq: add a reproducer")
    upstream_commit(up, fork, "upstream: docs", {"README.md": "more\n"})
    orig = git(fork, "rev-parse", "HEAD")
    pq(fork, "rebase", "upstream/main")
    with Git.open(fork) as g:
        head = g.commit("HEAD")
        for source in (orig, None):  # mre/ from the old tip, or from the working tree
            expected = bookkeeping.bookkeeping_commit(g, head.parents[0], source,
                                                      read_worktree(fork),
                                                      (head.author, head.committer),
                                                      head.message)
            assert g.commit(expected).tree == head.tree, source


def test_gate_runs_after_the_rebase_and_gives_the_exit_code(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    gate = ("gate:\n  python: " + sys.executable + "\n  stages:\n    - name: docs\n"
            "      run: \"grep -q 'never there' README.md\"\n")
    write(fork, "series.yaml", (fork / "series.yaml").read_text() + gate)
    commit_all(fork, "pq: gate")
    new = upstream_commit(up, fork, "upstream: docs", {"README.md": "more\n"})
    result = pq(fork, "rebase", "upstream/main", "--gate", ok=False)
    assert result.exit_code == 1, result.output
    assert "rebased paddle onto" in result.output and "docs" in result.output
    assert f"base: {new}" in (fork / "series.yaml").read_text()  # the rebase itself is done


def test_a_sigterm_during_the_gate_of_a_rebase_stops_the_stage(tmp_path: Path) -> None:
    """`pq rebase --gate` cancelled while its gate runs: the stage's group is stopped and
    the throwaway worktree removed, as `pq gate` does; the rebase itself is done."""
    import time

    up, fork = make_series(tmp_path)
    pidfile = tmp_path / "stage.pid"
    gate = ("gate:\n  python: " + sys.executable + "\n  stages:\n    - name: slow\n"
            f"      run: 'echo $$ > \"{pidfile}\"; sleep 60'\n")
    write(fork, "series.yaml", (fork / "series.yaml").read_text() + gate)
    commit_all(fork, "pq: gate")
    upstream_commit(up, fork, "upstream: docs", {"README.md": "more\n"})
    assert terminate_pq_once_started(fork, ["rebase", "upstream/main", "--gate"],
                                     pidfile) != 0
    pid = int(pidfile.read_text())
    for _ in range(100):  # the group is stopped within the grace period
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            break
        time.sleep(0.1)
    else:
        raise AssertionError("the stage still runs")
    assert git(fork, "worktree", "list").count("\n") == 0


def test_merges_give_what_git_rebase_gives(tmp_path: Path) -> None:
    """Four patches upstream edited around: three merged together (one file each), and two
    that share setup.py merged one by one; the trees are what `git rebase` makes."""
    up, fork = make_series(tmp_path)
    write(fork, "csrc/ops.cc", "#include <torch/extension.h>\n#include <torch/library.h>\n"
          "\nint f() { return 1; }\n")
    commit_all(fork, "cpp-compat: include torch/library.h")
    write(fork, "setup.py", set_line((fork / "setup.py").read_text(), 20, "# second edit"))
    commit_all(fork, "build: second edit")
    pq(fork, "export", "--commit")
    orig = git(fork, "rev-parse", "HEAD")
    setup = set_line(set_line(SETUP, 5, "# five, upstream"), 22, "# twenty-two, upstream")
    upstream_commit(up, fork, "upstream: edits near every patch", {
        "setup.py": setup, "pkg/__init__.py": set_line(GLUE, 7, "glue_7 = 'upstream'"),
        "csrc/ops.cc": "#include <torch/extension.h>\n\nint f() { return 1; }\nint g();\n"})
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    assert [p["outcome"] for p in data["patches"]] == ["merged"] * 4
    rebased = snapshot_queue(fork)
    pq(fork, "export")  # the re-export is what `pq export` writes from the new commits
    assert snapshot_queue(fork) == rebased
    git(fork, "checkout", "-q", "-b", "by-git", orig)
    git(fork, "rebase", "-q", "upstream/main")
    assert git(fork, "diff", "by-git", "paddle", "--", ".", ":(exclude)series.yaml",
               ":(exclude)patches") == ""


def test_every_kind_of_change_replays_like_git_rebase(tmp_path: Path) -> None:
    """Binary files, modes, renames, deletions, links, latin-1 and non-ASCII authors."""
    from gitrepo import migrate

    fork = make_fork(tmp_path)
    orig = migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    before = snapshot_queue(fork)
    up = tmp_path / "upstream"
    write(up, "csrc/kernel.cc", "int k() { return 0; }\n")
    write(up, "pkg/__init__.py", (up / "pkg/__init__.py").read_text() + "\n# upstream\n")
    commit_all(up, "upstream: a kernel, and a line in pkg")
    git(fork, "fetch", "-q", "upstream")
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    assert data["status"] == "done" and all(p["commit"] for p in data["patches"])
    after = snapshot_queue(fork)
    assert {k: v for k, v in after.items() if k != "series.yaml"} == {
        k: v for k, v in before.items() if k != "series.yaml"}
    git(fork, "checkout", "-q", "-b", "by-git", orig)
    git(fork, "rebase", "-q", "upstream/main")
    assert git(fork, "diff", "--name-only", "by-git", "paddle", "--", ".",
               ":(exclude)series.yaml", ":(exclude)patches") == ""


def test_untracked_files_in_the_way_stop_it_before_anything_moves(tmp_path: Path) -> None:
    up, fork = make_series(tmp_path)
    write(fork, "pkg/extra.py", "x = 1\n")
    commit_all(fork, "python-glue: an extra module")
    pq(fork, "export", "--commit")
    tip = git(fork, "rev-parse", "HEAD")
    upstream_commit(up, fork, "upstream: changelog", {"CHANGELOG": "1.0\n"})
    write(fork, "CHANGELOG", "my draft\n")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "untracked CHANGELOG would be overwritten" in \
        refused.output and "run `pq rebase` again" in refused.output
    assert git(fork, "rev-parse", "HEAD") == tip and not (fork / ".git/pq/rebase").exists()
    (fork / "CHANGELOG").unlink()
    conflict_upstream(up, fork)
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    write(fork, "setup.py", set_line(SETUP, 3, "import other_framework  # and paddle"))
    git(fork, "add", "setup.py")
    write(fork, "pkg/extra.py", "mine\n")  # where a later patch adds its file
    refused = pq(fork, "rebase", "--continue", ok=False)
    assert refused.exit_code == 2 and "untracked pkg/extra.py" in refused.output
    assert "then `pq rebase --continue`" in refused.output
    (fork / "pkg/extra.py").unlink()
    data = json.loads(pq(fork, "rebase", "--continue", "--json").output)
    assert [p["outcome"] for p in data["patches"]] == ["conflict", "clean", "clean"]
    assert (fork / "pkg/extra.py").read_text() == "x = 1\n"
    assert git(fork, "status", "--porcelain") == ""


@pytest.mark.parametrize("kind", ["file", "link to a folder"])
def test_an_untracked_file_where_upstream_adds_a_folder_stops_it_before_anything_moves(
        tmp_path: Path, kind: str) -> None:
    """As `git rebase` refuses at its first checkout: a file (or a link, even to a folder)
    standing where upstream now has a folder."""
    up, fork = make_series(tmp_path)
    tip = git(fork, "rev-parse", "HEAD")
    upstream_commit(up, fork, "upstream: docs", {"docs/guide.md": "read me\n"})
    if kind == "file":
        write(fork, "docs", "my notes\n")
    else:
        (tmp_path / "elsewhere").mkdir()
        os.symlink(tmp_path / "elsewhere", fork / "docs")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "untracked docs would be overwritten" in refused.output
    assert git(fork, "rev-parse", "HEAD") == tip and not (fork / ".git/pq/rebase").exists()
    assert not (tmp_path / "elsewhere" / "guide.md").exists()


@pytest.mark.parametrize("flag", ["--skip-worktree", "--assume-unchanged"])
def test_an_edit_git_is_told_not_to_see_stops_it_before_anything_moves(
        tmp_path: Path, flag: str) -> None:
    """A local edit of a file marked skip-worktree or assume-unchanged that upstream changes:
    `git rebase` refuses at its first checkout, and so does pq, naming the way out."""
    up, fork = make_series(tmp_path)
    tip = git(fork, "rev-parse", "HEAD")
    upstream_commit(up, fork, "upstream: changelog", {"README.md": "upstream, changed\n"})
    git(fork, "update-index", flag, "README.md")
    write(fork, "README.md", "my local setting\n")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2, refused.output
    assert "README.md changed on disk (an edit, or written again) where the rebase would " \
           "overwrite it" in refused.output
    assert "`git update-index --no-assume-unchanged --no-skip-worktree README.md`" in \
        refused.output
    assert git(fork, "rev-parse", "HEAD") == tip and not (fork / ".git/pq/rebase").exists()
    assert (fork / "README.md").read_text() == "my local setting\n"
    git(fork, "update-index", flag.replace("--", "--no-", 1), "README.md")
    git(fork, "checkout", "--", "README.md")
    pq(fork, "rebase", "upstream/main")  # an unedited flagged file moves as any other


def test_a_stack_that_differs_from_the_series_is_named(tmp_path: Path) -> None:
    """The refusal says how they differ: another order, or which patches are on one side."""
    up, fork = make_series(tmp_path)
    upstream_commit(up, fork, "upstream: changelog", {"CHANGELOG": "1.0\n"})
    text = (fork / "series.yaml").read_text()
    first, second = text.index("  - name: 0001"), text.index("  - name: 0002")
    (fork / "series.yaml").write_text(text[:first] + text[second:] + text[first:second])
    commit_all(fork, "pq: reorder by hand")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2
    assert "series.yaml lists the patches in another order than paddle's commits" in \
        refused.output and "`pq apply` rebuilds the branch in the series' order" in \
        refused.output
    git(fork, "reset", "-q", "--hard", "HEAD~1")
    write(fork, "pkg/extra.py", "x = 1\n")
    commit_all(fork, "python-glue: an extra module")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2
    assert "paddle has commits that differ from series.yaml (0003-python-glue-an-extra-" \
           "module.patch (commits only)); rebasing would lose them" in refused.output
    git(fork, "reset", "-q", "--hard", "HEAD~1")
    # A patch file cut short (an editor's crash): its own error, as `pq series` says it,
    # not a patch named again (0004) that only the commits have.
    name = next((fork / "patches").glob("0002-*.patch")).name
    (fork / "patches" / name).write_bytes((fork / "patches" / name).read_bytes()[:200])
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and f"patches/{name}:" in refused.output, refused.output
    assert "commits only" not in refused.output
    assert "`pq export --force` writes it again from its commit" in refused.output
    pq(fork, "export", "--force")  # as named
    # One no commit carries (added by hand, listed, its header mistyped): export --force
    # would drop it; the way is to fix it and `pq apply`.
    mine = (fork / "patches" / name).read_bytes().replace(b"From: ", b"Frm: ", 1)
    (fork / "patches" / "0009-mine.patch").write_bytes(mine)
    text = (fork / "series.yaml").read_text()
    entry = text[text.index("  - name: 0002"):].split("\n  - name:")[0].replace(name,
                                                                              "0009-mine.patch")
    (fork / "series.yaml").write_text(text.rstrip("\n") + "\n" + entry.rstrip("\n") + "\n")
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "patches/0009-mine.patch:" in refused.output
    assert "then `pq apply` builds its commit" in refused.output, refused.output
    (fork / "patches" / "0009-mine.patch").unlink()
    (fork / "series.yaml").write_text(text)
    assert pq(fork, "rebase", "upstream/main").exit_code == 0


@pytest.mark.parametrize("name", ['"q".txt', "new\nline.txt"])
def test_a_flagged_file_with_a_name_git_quotes_is_read_as_itself(tmp_path: Path,
                                                                  name: str) -> None:
    """`hash-object --stdin-paths` reads a line that starts with `"` as a C-quoted name, and
    a newline ends a name: such a name, flagged, made every rebase fail."""
    up = make_upstream(tmp_path / "upstream", {**UPSTREAM_FILES, name: "one\n"})
    fork = make_fork(tmp_path, up)
    write(fork, "setup.py", set_line(SETUP, 3, "import paddle; paddle.enable_compat()"))
    commit_all(fork, "build: enable compat")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    upstream_commit(up, fork, "upstream: two", {name: "two\n"})
    git(fork, "update-index", "--assume-unchanged", "--", name)
    write(fork, name, "mine\n")  # (the same bytes written again: git decides by stat data)
    refused = pq(fork, "rebase", "upstream/main", ok=False)
    assert refused.exit_code == 2 and "changed on disk (an edit, or written again)" in \
        refused.output, refused.output
    git(fork, "update-index", "--no-assume-unchanged", "--", name)
    git(fork, "checkout", "--", name)
    pq(fork, "rebase", "upstream/main")
    assert (fork / name).read_text() == "two\n"


def test_the_upstream_count_takes_merge_commits_in(tmp_path: Path) -> None:
    """The report's count is the commits of old_base..onto, as `git rev-list --count`
    gives it, merges included (even a range of merges alone)."""
    up, fork = make_series(tmp_path)
    old = git(up, "rev-parse", "HEAD")
    git(up, "switch", "-q", "-c", "feature")
    write(up, "README.md", "upstream, on a feature branch\n")
    commit_all(up, "upstream: feature")
    git(up, "switch", "-q", "main")
    git(up, "merge", "-q", "--no-ff", "-m", "Merge feature", "feature")
    git(fork, "fetch", "-q", "upstream")
    want = int(git(up, "rev-list", "--count", f"{old}..main"))
    assert want == 2
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    assert data["upstream"]["commits"] == want
    # An upstream that moved by a merge alone (of a commit main holds already).
    merge = git(up, "commit-tree", "HEAD^{tree}", "-p", "HEAD", "-p", "HEAD~2", "-m", "Merge")
    git(up, "merge", "-q", "--ff-only", merge)
    git(fork, "fetch", "-q", "upstream")
    text = pq(fork, "rebase", "upstream/main").output
    assert "(1 commit)" in text, text


def test_a_patch_file_that_changed_by_a_cr_or_a_byte_alone_is_reported_changed(
        tmp_path: Path) -> None:
    """Upstream renormalises a context line's CRLF, or changes one Latin-1 byte of another:
    the patch files' bytes change, and the report says so and shows the line."""
    up = make_upstream(tmp_path / "upstream", {"win.txt": b"w1\r\nw2\r\nw3\r\nw4\r\nw5\r\n",
                                               "latin.txt": b"l1\nl2\nl3\nl4 caf\xe9\n"})
    fork = make_fork(tmp_path, up)
    (fork / "win.txt").write_bytes(b"w1\r\nw2 paddle\r\nw3\r\nw4\r\nw5\r\n")
    commit_all(fork, "edit win")
    (fork / "latin.txt").write_bytes(b"l1 paddle\nl2\nl3\nl4 caf\xe9\n")
    commit_all(fork, "edit latin")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    (up / "win.txt").write_bytes(b"w1\r\nw2\r\nw3\r\nw4\r\nw5\n")
    (up / "latin.txt").write_bytes(b"l1\nl2\nl3\nl4 caf\xe8\n")
    commit_all(up, "upstream: renormalise")
    git(fork, "fetch", "-q", "upstream")
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    changed = git(fork, "diff", "--name-only", "refs/pq/orig-head/paddle", "HEAD", "--",
                  "patches").split()
    assert len(changed) == 2
    assert [p["changed"] for p in data["patches"]] == [True, True]
    win, latin = (p["range_diff"] for p in data["patches"])
    assert "- w5\\r" in win and "+ w5" in win, win
    assert "- l4 caf\\xe9" in latin and "+ l4 caf\\xe8" in latin, latin


def test_the_range_diff_tells_an_escape_written_out_from_the_byte() -> None:
    from pq.rebase.rangediff import summary

    written, byte = b'x = "caf\\xe9"\nok\n', b'x = "caf\xe9"\nok\n'
    assert summary(written, byte) == ["@@ -1 +1 @@", '-x = "caf\\xe9"', '+x = "caf\\xe9"']
    assert summary(b"a\\r\n", b"a\r\n") != []


def test_a_patch_file_committed_with_crlf_and_rewritten_is_reported_changed(
        tmp_path: Path) -> None:
    """No checkout filter: a user saved and committed a patch file with CRLF; the rebase
    writes it with LF, and the report says the file changed (it did, in git's eyes)."""
    up, fork = make_series(tmp_path)
    name = "patches/0002-python-glue-scoped-compat.patch"
    data = (fork / name).read_bytes()
    (fork / name).write_bytes(data.replace(b"\n", b"\r\n"))
    commit_all(fork, "pq: the glue patch saved with CRLF")
    upstream_commit(up, fork, "upstream: docs", {"README.md": "upstream, improved\n"})
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    changed = git(fork, "diff", "--name-only", "refs/pq/orig-head/paddle", "HEAD", "--",
                  "patches").split()
    assert changed == [name]
    assert [p["changed"] for p in data["patches"]] == [False, True]
