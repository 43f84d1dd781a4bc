"""Bad input: one line naming the file (and line, column), exit 2, nothing written."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, pq, series_fork, snapshot_queue, write


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    return series_fork(tmp_path, ("enable compat", {"setup.py": "import paddle\n"}),
                       ("scoped compat", {"pkg/__init__.py": "import torch  # scoped\n"}))


def one_line_error(result: object, *needles: str) -> None:
    out = result.output  # type: ignore[attr-defined]
    assert result.exit_code == 2, out  # type: ignore[attr-defined]
    lines = [ln for ln in out.splitlines() if ln.strip()]
    assert len(lines) == 1, out
    assert lines[0].startswith("pq: error: ")
    assert "Traceback" not in out
    for needle in needles:
        assert needle in lines[0], lines[0]


def edit_series(fork: Path, old: str, new: str) -> None:
    p = fork / "series.yaml"
    text = p.read_text()
    assert old in text, text
    p.write_text(text.replace(old, new, 1))


@pytest.mark.parametrize("old,new,needles", [
    ("layer: build", "layer: kernal", ["series.yaml:8:12", "unknown layer 'kernal'",
                                       "kernel, build, cpp-compat, python-glue"]),
    ("version: 1", "version: one", ["series.yaml:2:10", "`version` must be an integer"]),
    ("  - name: 0002-scoped-compat.patch", "  - name: 0001-enable-compat.patch",
     ["series.yaml:10:11", "duplicate patch name"]),
    ("summary: enable compat", "summary: [a, b]", ["series.yaml:9:14", "must be a string"]),
    ("patches:", "patches: 3\nx:", ["series.yaml:6:10", "`patches` must be a list"]),
    ("patches:", "patches: [unclosed\n", ["series.yaml:", "invalid YAML"]),
    ("ref: upstream/main", "ref: &a upstream/main", ["anchors and aliases"]),
    ("  - name: 0002-scoped-compat.patch", "  - name: 0002",
     ["series.yaml:10:11", "`name` must be the name of its file in patches/",
      "(write the file's whole name"]),
    # A misspelt key, or a workaround field outside its block, was kept and ignored: the
    # audit found 0 workarounds, lint used its default limit.
    ("summary: enable compat", "sumary: enable compat",
     ["series.yaml:9:5", "patch entry 1: unknown key `sumary` (did you mean `summary`?)"]),
    ("summary: enable compat", "summary: enable compat\n    issue: x\n    reason: y",
     ["series.yaml:10:5", "patch entry 1: `issue` is a workaround field"]),
    ("patches:", "lnt: {max_patch_lines: 1}\npatches:",
     ["series.yaml:6:1", "unknown key `lnt` (did you mean `lint`?)", "`x-`"]),
    # At the key's own line, where its value is a block on the lines below it.
    ("upstream:", "upstrem:", ["series.yaml:3:1", "unknown key `upstrem` (did you mean "]),
    ("patches:", "lnt:\n  max_patch_lines: 1\npatches:",
     ["series.yaml:6:1", "unknown key `lnt` (did you mean `lint`?)"]),
    ("summary: enable compat", "summary: enable compat\n    workaround:\n    covers: [a]",
     ["series.yaml:11:5", "patch entry 1: `covers` is a workaround field, outside the "
      "entry's `workaround:` block", "indent the workaround's fields under `workaround:`"]),
])
def test_series_errors(fork: Path, old: str, new: str, needles: list[str]) -> None:
    edit_series(fork, old, new)
    before = snapshot_queue(fork)
    for command in (["series"], ["export"], ["apply"]):
        one_line_error(pq(fork, *command, ok=False), *needles)
    assert snapshot_queue(fork) == before


def test_keys_of_the_users_own_are_kept(fork: Path) -> None:
    """Not every key near one of pq's is a misspelling: a name of pq's with something
    added (`summary_de`, `upstream_url`), a lone `issue:` note, `later`, `rename`."""
    edit_series(fork, "patches:", "upstream_url: https://example.com/up\npatches:")
    edit_series(fork, "summary: enable compat", "summary: enable compat\n    summary_de: "
                "Kompat\n    issue: https://example.com/1\n    later: true\n    rename: x")
    assert pq(fork, "series").exit_code == 0
    pq(fork, "export", "--force")
    assert "summary_de: Kompat" in (fork / "series.yaml").read_text()


def test_status_says_the_series_does_not_read_apart_from_its_summary(fork: Path) -> None:
    """`pq status` exits 0 on a series.yaml that does not read (it reports where things
    stand); its JSON put the error text where the summary line goes, so a script could not
    tell one from the other. The error has its own key, in the shape of every JSON error."""
    edit_series(fork, "layer: build", "layer: kernal")
    text = pq(fork, "status")
    assert text.output.splitlines()[1].startswith(
        "series.yaml does not read: series.yaml:8:12: patch 0001-enable-compat.patch: "
        "unknown layer 'kernal'"), text.output
    data = json.loads(pq(fork, "status", "--json").output)
    assert data["series"] is None, data
    error = data["series_error"]
    assert (error["path"], error["line"], error["column"], error["exit_code"]) == (
        "series.yaml", 8, 12, 2) and "unknown layer 'kernal'" in error["message"], error
    edit_series(fork, "layer: kernal", "layer: build")
    data = json.loads(pq(fork, "status", "--json").output)
    assert data["series_error"] is None and data["series"].endswith(": 2 patches"), data


def test_listed_patch_without_file(fork: Path) -> None:
    (fork / "patches/0002-scoped-compat.patch").unlink()
    one_line_error(pq(fork, "series", ok=False), "series.yaml:10:11",
                   "patches/0002-scoped-compat.patch does not exist")


def test_unlisted_patch_file(fork: Path) -> None:
    write(fork, "patches/0003-stray.patch", "x")
    one_line_error(pq(fork, "series", ok=False), "patches/0003-stray.patch",
                   "not listed in series.yaml")


@pytest.mark.parametrize("content,needle", [
    (b"garbage\n", "no mail header"),
    # A hand-written `git diff`: the fix is the mail form (`pq export` would drop a patch
    # no commit carries), and an editor's BOM is named as such.
    (b"diff --git a/a b/a\n--- a/a\n+++ b/a\n@@ -1 +1 @@\n-a\n+b\n",
     "write it as `git format-patch` does"),
    (b"\xef\xbb\xbfFrom: x <x@y>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: x\n\n"
     b"---\ndiff --git a/a b/a\n", "starts with a byte-order mark"),
    (b"From: x <x@y>\nDate: nonsense\nSubject: [PATCH] x\n\n---\ndiff --git a/a b/a\n",
     "bad Date: header"),
    (b"From: x <x@y>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: [PATCH] x\n\nbody\n",
     "no diff found"),
    (b"From: x <x@y>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: [PATCH] x\n\n---\n"
     b"diff --git a/../evil b/../evil\n--- a/../evil\n+++ b/../evil\n@@ -0,0 +1 @@\n+x\n",
     "outside the repository"),
    (b"From: x <x@y>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: [PATCH] x\n\n---\n"
     b"diff --git a/.git/hooks/pre-push b/.git/hooks/pre-push\nnew file mode 100755\n"
     b"--- /dev/null\n+++ b/.git/hooks/pre-push\n@@ -0,0 +1 @@\n+x\n",
     "outside the repository"),
])
def test_corrupt_patch_file(fork: Path, content: bytes, needle: str) -> None:
    (fork / "patches/0002-scoped-compat.patch").write_bytes(content)
    git(fork, "commit", "-qam", "corrupt it")
    head = git(fork, "rev-parse", "HEAD")
    one_line_error(pq(fork, "apply", "--branch", "x", ok=False),
                   "patches/0002-scoped-compat.patch", needle)
    assert git(fork, "rev-parse", "HEAD") == head
    assert not (fork.parent / "evil").exists()


def test_not_a_git_repository(tmp_path: Path) -> None:
    one_line_error(pq(tmp_path, "init", "--upstream", "main", ok=False), "not a git repository")
    git(tmp_path, "init", "-q", "--bare", "b.git")
    one_line_error(pq(tmp_path / "b.git", "series", ok=False),
                   "b.git: a bare repository has no working tree for pq", "git worktree add")
    git(tmp_path, "init", "-q", "w")  # inside a working tree's .git: no bare repository
    one_line_error(pq(tmp_path / "w/.git/objects", "series", ok=False),
                   "objects: inside a repository's git folder (.git), not its working tree",
                   "the folder that holds it")


def test_a_line_break_in_the_repository_path_is_named_not_called_bare(tmp_path: Path) -> None:
    """git answers one folder per line; a line break in the path split its answer, which
    pq read as a bare repository's."""
    repo = tmp_path / "a\nb" / "r"
    repo.mkdir(parents=True)
    git(repo, "init", "-q")
    (repo / "sub").mkdir()
    for where in (repo, repo / "sub"):
        one_line_error(pq(where, "series", ok=False), "path holds a line break",
                       "rename the folder")


def test_a_patch_that_changes_a_queue_file_is_refused_not_cut(fork: Path) -> None:
    """A hand-written patch creating patches/README: `pq apply` applied it, then the
    re-export left the queue file out, deleting the patch (or its hunk) without a word."""
    patch = fork / "patches/0003-readme.patch"
    patch.write_bytes(
        (fork / "patches/0001-enable-compat.patch").read_bytes().split(b"---\n")[0]
        + b"---\ndiff --git a/patches/README b/patches/README\nnew file mode 100644\n"
          b"--- /dev/null\n+++ b/patches/README\n@@ -0,0 +1 @@\n+hi\n")
    (fork / "series.yaml").write_text((fork / "series.yaml").read_text()
                                      + "  - name: 0003-readme.patch\n    layer: python-glue\n")
    before, head = snapshot_queue(fork), git(fork, "rev-parse", "HEAD")
    one_line_error(pq(fork, "apply", ok=False), "patches/0003-readme.patch: patch 3 changes "
                   "patches/README, where pq keeps the queue", "edit the patch file")
    assert snapshot_queue(fork) == before and git(fork, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("command", [["apply"], ["export"], ["rebase", "upstream/main"]])
def test_queue_paths_naming_an_upstream_folder_is_refused(fork: Path,
                                                          command: list[str]) -> None:
    """`queue_paths: [pkg]`, where upstream has pkg/__init__.py: apply and export took the
    patch to pkg/ out of the series (their re-export drops queue files), and rebase called
    it a commit to export."""
    edit_series(fork, "patches:", "queue_paths: [pkg]\npatches:")
    git(fork, "commit", "-qam", "queue_paths")
    before = snapshot_queue(fork)
    one_line_error(pq(fork, *command, ok=False), "the series base", "pkg/__init__.py",
                   "take those folders out of queue_paths in series.yaml")
    assert snapshot_queue(fork) == before


@pytest.mark.parametrize("how", ["sparse", "deleted", "git rebase"])
def test_a_series_yaml_git_tracks_but_the_tree_lacks_is_named_so(fork: Path, how: str) -> None:
    """"no series.yaml (run `pq init` first)" was the answer whatever the reason; followed
    under a sparse checkout that left it out, `pq init` wrote a new series over the
    committed one and its hand edits."""
    if how == "sparse":
        git(fork, "sparse-checkout", "set", "--no-cone", "/*", "!/series.yaml")
        needles = ["series.yaml: outside the sparse checkout", "git sparse-checkout add"]
    elif how == "deleted":
        (fork / "series.yaml").unlink()
        needles = ["series.yaml: deleted from the working tree", "git checkout -- series.yaml"]
    else:
        git(fork, "rebase", "-q", "--exec", "false", "HEAD~2", check=False)  # after 0002
        needles = ["while git's rebase is in progress", "finish or abort the rebase"]
    assert not (fork / "series.yaml").exists()
    one_line_error(pq(fork, "series", ok=False), *needles)
    if how != "git rebase":
        one_line_error(pq(fork, "init", "--upstream", "upstream/main", ok=False),
                       "the fork already has a series")
        assert not (fork / "series.yaml").exists()


def test_missing_upstream_ref(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    one_line_error(pq(fork, "init", "--upstream", "upstream/nope", ok=False),
                   "unknown upstream ref 'upstream/nope'", "git fetch")
    assert not (fork / "series.yaml").exists()


def test_a_name_of_a_tree_or_blob_is_named_as_such_not_as_unknown(fork: Path) -> None:
    """`git rev-parse` finds these names: "unknown ... `git fetch` it" would mislead."""
    git(fork, "tag", "tree-tag", "HEAD^{tree}")
    git(fork, "tag", "blob-tag", "HEAD:setup.py")
    one_line_error(pq(fork, "rebase", "tree-tag", ok=False),
                   "upstream ref 'tree-tag' names a tree, not a commit", "name a commit")
    one_line_error(pq(fork, "rebase", "blob-tag", ok=False), "names a blob, not a commit")
    tree = git(fork, "rev-parse", "HEAD^{tree}")
    edit_series(fork, git(fork, "rev-parse", "upstream/main"), tree)
    one_line_error(pq(fork, "export", ok=False),
                   f"the base series.yaml records, {tree[:12]}, is a tree, not a commit",
                   "upstream.base")


def test_merge_commits_are_not_guessed_at(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    git(fork, "checkout", "-q", "-b", "side")
    write(fork, "a.txt", "side\n")
    commit_all(fork, "side")
    git(fork, "checkout", "-q", "paddle")
    write(fork, "b.txt", "main\n")
    commit_all(fork, "main side")
    git(fork, "merge", "-q", "--no-ff", "-m", "merge side", "side")
    one_line_error(pq(fork, "init", "--upstream", "upstream/main", ok=False),
                   "is a merge", "pq import")
    assert not (fork / "series.yaml").exists() and not (fork / "patches").exists()


def test_init_twice_is_refused(fork: Path) -> None:
    one_line_error(pq(fork, "init", "--upstream", "upstream/main", ok=False),
                   "series.yaml: the fork already has a series", "pq export")


@pytest.mark.parametrize("name", ["bad..name", "-x", "a b", "x.lock", "HEAD", "a~1", "x/"])
def test_apply_to_a_branch_name_git_refuses(fork: Path, name: str) -> None:
    before = git(fork, "for-each-ref")
    one_line_error(pq(fork, "apply", "--branch", name, ok=False),
                   f"{name!r} is not a valid branch name", "git check-ref-format")
    assert git(fork, "for-each-ref") == before


@pytest.mark.parametrize(("args", "needle", "helped"), [
    (["drift"], "Missing argument 'OLD..NEW'", "pq drift --help"),
    (["bogus"], "No such command 'bogus'", "pq --help"),
    (["log", "-n", "-1"], "-1 is not in the range", "pq log --help"),
    (["-C", "/nonexistent/dir", "series"], "cannot change to /nonexistent/dir", "pq --help"),
    (["series", "--no-such-flag"], "--no-such-flag", "pq series --help"),
    (["gate", "--python", "", "--stage", "x"], "'--python': given empty", "pq gate --help"),
    # An option given empty ("$UNSET") is no option left out: `apply --onto ""` applied
    # onto the series base and moved the branch, `audit --upstream ""` took series.yaml's.
    (["apply", "--onto", ""], "'--onto': given empty (an unset variable?)", "pq apply --help"),
    (["audit", "workarounds", "--upstream", " "], "'--upstream': given empty",
     "pq audit workarounds --help"),
    (["gate", "--stage", "build", "--stage", ""], "'--stage': given empty", "pq gate --help"),
    # A required option cannot be left out: the message said to (`Missing option` then).
    (["init", "--upstream", ""], "'--upstream': given empty (an unset variable?): name a "
                                 "value (see", "pq init --help"),
    (["apply", "--onto", ""], "name a value, or leave the option out", "pq apply --help"),
])
def test_a_usage_error_is_one_line_too(fork: Path, args: list[str], needle: str,
                                       helped: str) -> None:
    head = git(fork, "rev-parse", "HEAD")
    one_line_error(pq(fork, *args, ok=False), needle, f"(see `{helped}`)")
    assert git(fork, "rev-parse", "HEAD") == head


@pytest.mark.parametrize("operation", ["merge", "cherry-pick"])
def test_a_git_operation_in_progress_is_refused(fork: Path, operation: str) -> None:
    """A conflicted `git merge`/`git cherry-pick`: a commit pq wrote now would land on it."""
    git(fork, "checkout", "-q", "-b", "side")
    write(fork, "pkg/__init__.py", "side\n")
    side = commit_all(fork, "side")
    git(fork, "checkout", "-q", "paddle")
    write(fork, "pkg/__init__.py", "paddle\n")
    commit_all(fork, "python-glue: paddle")
    git(fork, operation, side, check=False)
    head = "MERGE_HEAD" if operation == "merge" else "CHERRY_PICK_HEAD"
    before = git(fork, "rev-parse", "HEAD")
    for command in (["export", "--commit"], ["init", "--force", "--upstream",
                                             "upstream/main", "--commit"], ["undo"]):
        one_line_error(pq(fork, *command, ok=False), f"git has an operation in progress ({head})",
                       "finish or abort it first")
    assert git(fork, "rev-parse", "HEAD") == before


def test_init_and_import_never_overwrite_an_untracked_file(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "build: enable compat")
    mine = ["patches/0001-build-enable-compat.patch", "patches/0001-build-setup.patch"]
    for rel in mine:  # the names init and import give the one patch
        write(fork, rel, "MY OWN NOTES\n")
    for command, rel in ((["init", "--upstream", "upstream/main"], mine[0]),
                         (["import", "--upstream", "upstream/main"], mine[1])):
        one_line_error(pq(fork, *command, ok=False),
                       f"{rel}: an untracked file stands where a new patch file goes",
                       "move it aside")
        assert all((fork / m).read_text() == "MY OWN NOTES\n" for m in mine)
        assert not (fork / "series.yaml").exists()


def test_no_git_identity_is_one_line_that_says_how_to_set_it(
        fork: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """git without a name and e-mail (useConfigOnly: no guessing from the host name)."""
    write(fork, "setup.py", "import paddle  # again\n")
    before = commit_all(fork, "build: again")
    for key in ("GIT_COMMITTER_NAME", "GIT_COMMITTER_EMAIL", "EMAIL"):
        monkeypatch.delenv(key, raising=False)
    git(fork, "config", "user.useConfigOnly", "true")
    one_line_error(pq(fork, "export", "--commit", ok=False),
                   "git has no committer identity to write pq's commits with",
                   "no email was given and auto-detection is disabled",
                   '`git config --global user.name "Your Name"`')
    assert git(fork, "rev-parse", "HEAD") == before
    assert git(fork, "status", "--porcelain") == ""


def test_a_date_git_cannot_read_is_named_not_the_identity(
        fork: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """GIT_COMMITTER_DATE=garbage: the error said git had no committer identity and named
    user.name and user.email as the fix."""
    write(fork, "setup.py", "import paddle  # again\n")
    before = commit_all(fork, "build: again")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "garbage")
    one_line_error(pq(fork, "export", "--commit", ok=False),
                   "git cannot read GIT_COMMITTER_DATE (invalid date format: garbage)",
                   "unset GIT_COMMITTER_DATE")
    assert git(fork, "rev-parse", "HEAD") == before


def test_upstream_commits_are_never_taken_for_patches(fork: Path) -> None:
    """A branch rebased onto a newer upstream by plain git (`git rebase -i upstream/main` to
    reorder): `pq export` listed upstream's commit as a new patch of the fork, and `pq
    rebase` sent the user to that export."""
    up = fork.parent / "upstream"
    write(up, "README.md", "upstream, improved\n")
    commit_all(up, "upstream: readme")
    git(fork, "fetch", "-q", "upstream")
    git(fork, "rebase", "-q", "upstream/main")
    before = snapshot_queue(fork)
    for command in (["export", "--commit"], ["rebase", "upstream/main"]):
        one_line_error(pq(fork, *command, ok=False),
                       "the branch holds 1 upstream/main commit(s) newer than the series base",
                       "they are not the fork's patches",
                       "`pq init --force --upstream upstream/main --commit`")
        assert snapshot_queue(fork) == before
    pq(fork, "init", "--force", "--upstream", "upstream/main", "--commit")
    assert [p.name for p in sorted((fork / "patches").iterdir())] == [
        "0001-enable-compat.patch", "0002-scoped-compat.patch"]


@pytest.mark.parametrize("group", ["audit", "hook"])
def test_a_group_without_its_command_prints_its_help(tmp_path: Path, group: str) -> None:
    """As a bare `pq` does: the usage and the commands, not an 'error' of many lines."""
    result = pq(tmp_path, group, ok=False)
    assert result.exit_code == 2
    first = result.output.splitlines()[0]  # the runner calls the program `main`
    assert first.startswith("Usage: ") and first.endswith(f" {group} [OPTIONS] COMMAND [ARGS]...")
    assert "Commands:" in result.output
    assert "pq: error" not in result.output and "(see `pq" not in result.output


@pytest.mark.parametrize("args,needle", [
    (["--bogus", "series"], "No such option '--bogus'"),
    (["-C"], "Option '-C' requires an argument"),
])
def test_a_usage_error_in_pqs_own_options_is_one_line(tmp_path: Path, args: list[str],
                                                      needle: str) -> None:
    """As in a command's options: one line (not click's Usage/Try/Error block), exit 2."""
    one_line_error(pq(tmp_path, *args, ok=False), needle, "(see `pq --help`)")


@pytest.mark.parametrize("args,needle,help_of", [
    (["rebase", "--forget"], "Option '--forget' requires an argument", "pq rebase"),
    (["gate", "--stage"], "Option '--stage' requires an argument", "pq gate"),
    (["hook", "install", "--bogus"], "No such option '--bogus'", "pq hook install"),
    (["audit", "workarounds", "--rev"], "Option '--rev' requires an argument",
     "pq audit workarounds"),
])
def test_a_usage_error_in_a_commands_options_names_its_help(
        tmp_path: Path, args: list[str], needle: str, help_of: str) -> None:
    """A missing option value too (click's parser raises it naming no command)."""
    one_line_error(pq(tmp_path, *args, ok=False), needle, f"(see `{help_of} --help`)")


def test_a_usage_error_in_pqs_own_options_is_json_under_json(tmp_path: Path) -> None:
    import json

    result = pq(tmp_path, "--bogus", "series", "--json", ok=False)
    assert result.exit_code == 2
    error = json.loads(result.stdout)["error"]
    assert error["message"] == "No such option '--bogus'" and error["exit_code"] == 2


def test_a_repository_git_will_not_open_gets_gits_reason(fork: Path) -> None:
    """Not "not a git repository, `git init` one" (which would be wrong advice): why git
    refuses it."""
    git(fork, "config", "core.repositoryformatversion", "1")
    git(fork, "config", "extensions.frobnicate", "true")
    one_line_error(pq(fork, "series", ok=False),
                   "git cannot open this repository: unknown repository extension found: "
                   "frobnicate")


@pytest.mark.skipif(not hasattr(__import__("os"), "geteuid") or __import__("os").geteuid() != 0,
                    reason="needs root to give the repository to another user")
def test_a_repository_another_user_owns_names_safe_directory(fork: Path) -> None:
    import os

    os.chown(fork, 65534, 65534)
    try:  # from a folder under the top: the top is the folder to trust, as git says
        one_line_error(pq(fork / "pkg", "series", ok=False), "another user owns",
                       f"git config --global --add safe.directory {fork}`")
    finally:
        os.chown(fork, 0, 0)


def test_patch_files_a_sparse_checkout_leaves_out_are_named_as_such(fork: Path) -> None:
    """Not "does not exist: `git checkout -- patches/...`" (which git refuses there)."""
    write(fork, "docs/a.txt", "docs\n")
    commit_all(fork, "docs")
    pq(fork, "export", "--commit")
    git(fork, "sparse-checkout", "set", "docs")
    assert not (fork / "patches").exists()
    one_line_error(pq(fork, "series", ok=False),
                   "series.yaml: patches/0001-enable-compat.patch and 2 more are outside the "
                   "sparse checkout", "`git sparse-checkout add patches`")
    git(fork, "sparse-checkout", "add", "patches")
    pq(fork, "series")


def test_git_dir_and_git_work_tree_name_the_repository_as_for_git(
        fork: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Run from another repository's folder with both set: the fork's series, as `git log`
    there shows the fork's commits; a git dir kept apart from its working tree is refused
    in one line (pq's git commands find the repository from the working tree)."""
    other = tmp_path / "other"
    other.mkdir()
    git(other, "init", "-q")
    apart = tmp_path / "apart.git"
    git(tmp_path, "clone", "-q", "--bare", str(fork), str(apart))
    monkeypatch.setenv("GIT_DIR", str(fork / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(fork))
    assert "0001-enable-compat.patch" in pq(other, "series").output
    monkeypatch.setenv("GIT_DIR", str(apart))
    monkeypatch.setenv("GIT_WORK_TREE", str(other))
    one_line_error(pq(other, "series", ok=False), f"GIT_DIR and GIT_WORK_TREE name the git dir {apart},",
                   "unset GIT_DIR and GIT_WORK_TREE")
    # GIT_DIR alone, from a folder of no repository: git takes that folder for the working
    # tree (`git status` there lists every file as deleted); pq says so, not "no repository".
    plain = tmp_path / "plain"
    plain.mkdir()
    monkeypatch.setenv("GIT_DIR", str(fork / ".git"))
    monkeypatch.delenv("GIT_WORK_TREE")
    one_line_error(pq(plain, "series", ok=False),
                   f"GIT_DIR names the git dir {fork / '.git'}, which is not the .git of its "
                   f"working tree {plain} (the current folder: GIT_WORK_TREE is unset)",
                   "set GIT_WORK_TREE too")
    # GIT_DIR alone, from a subfolder of the fork: git takes the subfolder for the tree
    # (its paths are not the fork's: `git add x` there stages a top-level x); pq worked in
    # the fork, and its hints named paths git then read otherwise.
    (fork / "sub").mkdir()
    one_line_error(pq(fork / "sub", "series", ok=False),
                   f"which is not the .git of its working tree {fork / 'sub'} (the current "
                   "folder: GIT_WORK_TREE is unset)", "set GIT_WORK_TREE too")
    # GIT_DIR alone, where its core.worktree names the tree: not "the current folder", and
    # "set GIT_WORK_TREE too" only led to the other refusal.
    monkeypatch.delenv("GIT_DIR")
    git(apart, "config", "core.bare", "false")
    git(apart, "config", "core.worktree", str(other))
    monkeypatch.setenv("GIT_DIR", str(apart))
    (other / "sub").mkdir()
    refused = pq(other / "sub", "series", ok=False)
    one_line_error(refused, f"working tree {other}: pq works", "unset GIT_DIR")
    assert "GIT_WORK_TREE too" not in refused.output and "current folder" not in refused.output
    # ... and without GIT_DIR, from inside that git dir (git finds its tree there; nothing
    # finds the git dir from the tree): pq went on, and its git commands failed.
    monkeypatch.delenv("GIT_DIR")
    one_line_error(pq(apart, "series", ok=False),
                   f"the git dir {apart} is kept apart from its working tree {other}",
                   "move the git dir into its working tree as .git")


def test_a_commit_with_a_malformed_author_line_is_named(fork: Path) -> None:
    """An author line without a date (a commit made by a broken tool; git fsck calls it
    malformed): pq said only "cannot parse identity", naming no commit."""
    write(fork, "pkg/new.py", "x = 1\n")
    git(fork, "add", "pkg/new.py")
    tree = git(fork, "write-tree")
    raw = (f"tree {tree}\nparent {git(fork, 'rev-parse', 'HEAD')}\nauthor A <a@x>\n"
           "committer A <a@x> 1700000000 +0000\n\nglue: no date\n")
    commit = subprocess.run(["git", "hash-object", "-t", "commit", "-w", "--literally",
                             "--stdin"], cwd=fork, input=raw.encode(), capture_output=True,
                            check=True).stdout.decode().strip()
    git(fork, "update-ref", "refs/heads/paddle", commit)
    for args in (["export", "--commit"], ["rebase", "upstream/main"]):
        one_line_error(pq(fork, *args, ok=False), f"commit {commit[:12]} ('glue: no date')",
                       "git commit --amend --reset-author")
    assert git(fork, "rev-parse", "paddle") == commit


def test_an_unborn_branch_and_a_bad_patch_name_say_what_to_do(tmp_path: Path) -> None:
    up = make_fork(tmp_path / "a").parent / "upstream"
    empty = tmp_path / "empty"
    git(tmp_path, "init", "-q", str(empty))
    git(empty, "fetch", "-q", str(up), "main:refs/remotes/upstream/main")
    one_line_error(pq(empty, "init", "--upstream", "upstream/main", ok=False),
                   "HEAD names no commit (a branch with no commits yet?)", "git switch")


def test_a_committed_series_yaml_that_is_a_link_is_called_one(fork: Path) -> None:
    """A link's blob is its target's name: read as YAML it said "must be a mapping"."""
    os.rename(fork / "series.yaml", fork / "real.yaml")
    os.symlink("real.yaml", fork / "series.yaml")
    commit_all(fork, "series.yaml becomes a link")
    result = pq(fork, "check", ok=False)
    assert result.exit_code == 1
    assert "series.yaml is committed as a symbolic link, and pq reads the series from the " \
           "file itself" in result.output and "readlink -f series.yaml" in result.output


def test_a_folder_named_series_yaml_is_said_to_be_one(fork: Path) -> None:
    """Every command said "no series.yaml ... run `pq init`", and `pq init` then said "the
    fork already has a series": round in a circle. Each names the folder and the way out."""
    (fork / "series.yaml").unlink()
    (fork / "series.yaml").mkdir()
    (fork / "series.yaml" / "x").write_text("x\n")
    for command in (["series"], ["export"], ["init", "--upstream", "upstream/main"]):
        one_line_error(pq(fork, *command, ok=False),
                       "series.yaml is a folder, where pq keeps its series file",
                       "(move it aside (`mv series.yaml series.yaml.d`)")
    (fork / "series.yaml").rename(fork / "notes")
    (fork / "series.yaml").symlink_to("notes")
    one_line_error(pq(fork, "init", "--upstream", "upstream/main", ok=False),
                   "series.yaml is a folder (a link to one), where pq keeps its series file")


def test_a_folder_or_a_pipe_where_a_patch_file_goes_is_said_to_be_one(fork: Path) -> None:
    """A listed patch file that is a folder was "listed but does not exist", and the fix
    named, `pq export`, said the same: each names what is there and the way out, which
    then works."""
    name = sorted(p.name for p in (fork / "patches").iterdir())[1]
    rel = f"patches/{name}"
    committed = (fork / rel).read_bytes()
    (fork / rel).unlink()
    (fork / rel).mkdir()
    for command in (["series"], ["export"], ["export", "--force"], ["audit", "workarounds"]):
        one_line_error(pq(fork, *command, ok=False),
                       f"{rel} is a folder, where pq keeps that patch file",
                       f"(move it aside (`mv {rel} {rel}.d`), then `git checkout -- {rel}`")
    (fork / rel).rename(fork / f"{rel}.d")
    pq(fork, "export")
    assert (fork / rel).read_bytes() == committed
    (fork / rel).unlink()
    os.mkfifo(fork / rel)
    one_line_error(pq(fork, "series", ok=False), f"{rel} is not a regular file, where pq "
                                                 "keeps that patch file")


@pytest.mark.parametrize(("branch", "reason"), [
    ("b" * 300, "File name too long"),
    ("paddle/x", "'refs/heads/paddle' exists; cannot create 'refs/heads/paddle/x'")])
def test_a_branch_git_cannot_create_is_said_to_be_the_name(fork: Path, branch: str,
                                                           reason: str) -> None:
    """A valid name git cannot write as a ref (too long for the file system, or under an
    existing branch's name) was "cannot update the working tree ... commit or stash your
    changes", in a clean tree: the name is the problem, and nothing changed."""
    before = git(fork, "for-each-ref"), git(fork, "rev-parse", "HEAD")
    one_line_error(pq(fork, "apply", "--onto", "upstream/main", "--branch", branch, ok=False),
                   f"pq apply cannot create the ref refs/heads/{branch}: {reason}",
                   "(choose another branch name, then run it again)")
    assert (git(fork, "for-each-ref"), git(fork, "rev-parse", "HEAD")) == before
    assert git(fork, "status", "--porcelain") == ""


def test_a_branch_name_that_is_not_utf8_is_worked_on_as_any_other(fork: Path) -> None:
    """git takes a branch name's bytes as they are (`git switch -c $'b\\xff'`): pq applies
    onto it, exports, logs and undoes there, naming it by its bytes, as git does."""
    name = "b\udcff"  # the byte 0xff, as Python's surrogateescape spells it
    pq(fork, "apply", "-b", name)
    assert git(fork, "symbolic-ref", "HEAD") == f"refs/heads/{name}"
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "glue: helper returns 3")
    tip = git(fork, "rev-parse", "HEAD")
    for args in (["status"], ["series", "--json"], ["export", "--commit"], ["log"],
                 ["log", "--json"], ["undo"], ["redo"], ["undo", "--json"]):
        result = pq(fork, *args, ok=False)
        assert result.exit_code == 0, (args, result.output)
    assert git(fork, "rev-parse", "HEAD") == tip  # the export --commit undone


@pytest.mark.parametrize(("args", "needle"), [
    (["classify", "x" * 300], "File name too long"),
    (["audit", "workarounds", "--python", "x" * 300], "File name too long"),
    (["classify", "/proc/self/mem"], "/proc/self/mem: unreadable"),
])
def test_a_name_the_file_system_will_not_take_is_one_line(fork: Path, args: list[str],
                                                          needle: str) -> None:
    """A name longer than the file system takes, or a file that cannot be read (a device):
    one line naming it, exit 2, not an internal error."""
    if args[-1].startswith("/proc") and not os.path.exists(args[-1]):
        pytest.skip("no /proc")
    result = pq(fork, *args, ok=False)
    one_line_error(result, needle)
    assert "internal error" not in result.output


def test_init_refuses_a_series_file_too_large_for_pq_to_read_before_writing_it(
        tmp_path: Path) -> None:
    """A commit subject of 4 MiB (the summary pq takes from it) made `pq init` write and
    commit a series.yaml that every later command refused: now nothing is written, and the
    error names the patch whose summary to shorten."""
    fork = make_fork(tmp_path)
    write(fork, "pkg/__init__.py", "import paddle\n")
    git(fork, "add", "-A")
    (tmp_path / "message").write_text("glue " + "word " * 900_000)
    git(fork, "commit", "-q", "--no-verify", "-F", str(tmp_path / "message"))
    result = pq(fork, "init", "--upstream", "upstream/main", "--commit", ok=False)
    assert result.exit_code == 2, result.output
    assert "series.yaml: would be " in result.output and "nothing was written" in result.output
    assert "patches/0001-" in result.output and "shorten the longest summaries" in result.output
    assert not (fork / "series.yaml").exists()
    assert not list(fork.glob("patches/*.patch"))
    assert git(fork, "log", "-1", "--format=%s").startswith("glue word")


def test_a_patches_folder_that_is_a_link_is_refused_where_it_is_read(fork: Path) -> None:
    """git commits a link, not the files behind it: `pq series`, lint and export took the
    linked folder, and once committed, `pq check` and the hook refused every patch as
    missing, naming fixes that did nothing."""
    (fork / "patches").rename(fork.parent / "shared-patches")
    (fork / "patches").symlink_to(fork.parent / "shared-patches")
    one_line_error(pq(fork, "series", ok=False), "patches is a link; pq keeps patch files "
                   "in a folder", "put the folder it names in its place")


def test_a_file_where_the_patches_folder_goes_is_named_with_a_fix_that_works(fork: Path
                                                                              ) -> None:
    """Every reader said the patch files do not exist and named `pq export`, which failed
    ("File exists"), and `git checkout -- patches/<one>`, which deleted the user's file."""
    committed = sorted(p.name for p in (fork / "patches").iterdir())
    shutil.rmtree(fork / "patches")
    (fork / "patches").write_text("notes\n")
    for args in (["series"], ["export"], ["rebase", "upstream/main"]):
        one_line_error(pq(fork, *args, ok=False), "patches is a file, where pq keeps the patch "
                       "files' folder", "`mv patches patches.txt`")
    (fork / "patches").rename(fork / "patches.txt")  # the fix named
    git(fork, "checkout", "--", "patches")
    assert sorted(p.name for p in (fork / "patches").iterdir()) == committed
    assert pq(fork, "series").exit_code == 0
    assert (fork / "patches.txt").read_text() == "notes\n"


@pytest.mark.parametrize("args", [["export", "--commit"], ["rebase", "upstream/main"],
                                  ["undo"]])
def test_another_index_named_by_git_index_file_is_refused(fork: Path, args: list[str],
                                                          monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """git's commands read the index GIT_INDEX_FILE names; pq worked on the working tree's
    own, and left the other stale (a `git add` there never reached the rebase)."""
    write(fork, "setup.py", "import paddle  # edited\n")
    commit_all(fork, "edit")
    before = (git(fork, "rev-parse", "HEAD"), (fork / ".git/index").read_bytes(),
              snapshot_queue(fork))
    monkeypatch.setenv("GIT_INDEX_FILE", ".git/alt-index")
    one_line_error(pq(fork, *args, ok=False), "GIT_INDEX_FILE names the index .git/alt-index",
                   "unset GIT_INDEX_FILE")
    assert (git(fork, "rev-parse", "HEAD"), (fork / ".git/index").read_bytes(),
            snapshot_queue(fork)) == before
    monkeypatch.setenv("GIT_INDEX_FILE", str(fork / ".git/index"))  # its own: as unset
    if args[0] == "export":
        assert pq(fork, *args).exit_code == 0


@pytest.mark.parametrize("branch", [[], ["--branch", "nb"]])
def test_an_untracked_file_in_the_way_of_apply_is_named_without_git_stash(
        fork: Path, branch: list[str]) -> None:
    """An edit to a patch file adds pkg/new.py, and an untracked pkg/new.py is in the way:
    the fix named was `git stash`, which stashes the patch file's edit and leaves the
    untracked file, and the next `pq apply` built the old series."""
    name = next(p.name for p in sorted((fork / "patches").glob("0001-*.patch")))
    with open(fork / "patches" / name, "a", encoding="utf-8") as f:
        f.write("diff --git a/pkg/new.py b/pkg/new.py\nnew file mode 100644\n"
                "--- /dev/null\n+++ b/pkg/new.py\n@@ -0,0 +1 @@\n+from the patch\n")
    write(fork, "pkg/new.py", "PRECIOUS\n")
    refused = pq(fork, "apply", *branch, ok=False)
    one_line_error(refused, "move or remove those untracked files")
    assert "git stash" not in refused.output
    assert (fork / "pkg/new.py").read_text() == "PRECIOUS\n"
