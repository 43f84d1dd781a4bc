"""The repository's hooks that `git rebase` runs: pre-rebase is asked before a rebase
starts (its refusal changes nothing, exit 1; `--no-verify` does not ask it), post-rewrite
is told each patch commit and its copy when the rebase is done."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from gitrepo import git, one_patch_fork, pq

HOOK = "#!/bin/sh\necho \"pre-rebase got: $*\" >> \"$(git rev-parse --git-dir)/asked\"\n" \
       "echo 'rebasing this branch is not allowed'\nexit 3\n"


def _hook(fork: Path, folder: str, text: str) -> None:
    path = fork / folder / "pre-rebase"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    path.chmod(0o755)


def _fork_moved(tmp_path: Path) -> Path:
    return one_patch_fork(tmp_path, {"pkg/glue.py": "x = 1\n"}, {"README.md": "moved\n"})


def _rebase(fork: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "pq", "rebase", *args], cwd=fork,
                          capture_output=True, text=True, check=False)


def test_a_refusing_hook_stops_the_rebase_before_anything_changes(tmp_path: Path) -> None:
    fork = one_patch_fork(tmp_path, {"pkg/glue.py": "x = 1\n"}, {"README.md": "moved\n"})
    git(fork, "config", "core.hooksPath", "my-hooks")  # where git looks, pq looks
    _hook(fork, "my-hooks", HOOK)
    head = git(fork, "rev-parse", "HEAD")
    refused = _rebase(fork, "upstream/main")
    assert refused.returncode == 1, refused.stderr
    assert "rebasing this branch is not allowed" in refused.stderr  # the hook's own words
    assert "pre-rebase hook refused to rebase" in refused.stderr
    assert "--no-verify upstream/main" in refused.stderr
    assert refused.stdout == ""
    assert git(fork, "rev-parse", "HEAD") == head
    assert (fork / ".git" / "asked").read_text() == "pre-rebase got: upstream/main\n"
    assert "pq rebase" not in pq(fork, "log").output  # nothing was logged
    done = _rebase(fork, "--no-verify", "upstream/main")
    assert done.returncode == 0, done.stderr
    assert (fork / ".git" / "asked").read_text().count("\n") == 1  # not asked again
    assert git(fork, "rev-parse", "HEAD") != head


def test_a_hook_that_lets_it_go_sees_the_ref_as_given(tmp_path: Path) -> None:
    fork = one_patch_fork(tmp_path, {"pkg/glue.py": "x = 1\n"}, {"README.md": "moved\n"})
    _hook(fork, ".git/hooks", HOOK.replace("exit 3", "exit 0"))
    done = _rebase(fork)  # no ref: series.yaml's upstream.ref, as the hook is told
    assert done.returncode == 0, done.stderr
    assert (fork / ".git" / "asked").read_text() == "pre-rebase got: upstream/main\n"


def test_post_rewrite_is_told_each_patch_and_its_copy(tmp_path: Path) -> None:
    fork = one_patch_fork(tmp_path, {"pkg/glue.py": "x = 1\n"}, {"README.md": "moved\n"})
    old = git(fork, "rev-list", "-1", "HEAD~1")  # the patch commit, under pq's bookkeeping
    _hook(fork, ".git/hooks", "#!/bin/sh\necho \"$*\" > \"$GIT_DIR/rewritten\"\n"
          "cat >> \"$GIT_DIR/rewritten\"\nexit 1\n")
    (fork / ".git/hooks/pre-rebase").rename(fork / ".git/hooks/post-rewrite")
    _hook(fork, ".git/hooks", "#!/bin/sh\nexit 1\n")
    (fork / ".git/hooks/pre-rebase").chmod(0o644)  # not executable: git skips it, so does pq
    done = _rebase(fork, "upstream/main")
    assert done.returncode == 0, done.stderr  # the hook's exit code changes nothing
    assert done.stderr.startswith(  # git's hint, word for word
        "hint: The '.git/hooks/pre-rebase' hook was ignored because it's not set as "
        "executable.\nhint: You can disable this warning with `git config "
        "advice.ignoredHook false`.\n"), done.stderr
    new = git(fork, "rev-list", "-1", "HEAD~1")
    assert new != old
    assert (fork / ".git" / "rewritten").read_text() == f"rebase\n{old} {new}\n"


def test_hooks_run_as_git_runs_them(tmp_path: Path) -> None:
    """A hook with no `#!` line runs in sh; a hook reads no input of pq's (git gives it
    /dev/null); post-rewrite runs once the rebase is logged and the lock let go, so it may
    run pq itself; an up-to-date rebase asks no pre-rebase hook, as `git rebase`."""
    fork = _fork_moved(tmp_path)
    _hook(fork, ".git/hooks", 'read line; echo "pre-rebase read [$line]" >> "$GIT_DIR/asked"\n')
    post = fork / ".git/hooks/post-rewrite"
    post.write_text(f'{sys.executable} -m pq log -n 1 > "$GIT_DIR/logged" 2>&1\n')
    post.chmod(0o755)
    done = subprocess.run([sys.executable, "-m", "pq", "rebase", "upstream/main"], cwd=fork,
                          input="SECRET\n", capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert (fork / ".git" / "asked").read_text() == "pre-rebase read []\n"
    logged = (fork / ".git" / "logged").read_text()
    assert "pq rebase upstream/main" in logged and "another pq command" not in logged
    again = _rebase(fork, "upstream/main")
    assert again.returncode == 0 and "already up to date" in again.stdout
    assert (fork / ".git" / "asked").read_text().count("\n") == 1  # not asked again


def test_a_post_rewrite_hook_that_cannot_run_leaves_the_rebase_done(tmp_path: Path) -> None:
    fork = _fork_moved(tmp_path)
    post = fork / ".git/hooks/post-rewrite"
    post.write_text("#!/no/such/interpreter\n")  # git: "cannot run"; the rebase is done
    post.chmod(0o755)
    head = git(fork, "rev-parse", "HEAD")
    done = _rebase(fork, "--json", "upstream/main")
    assert done.returncode == 0, done.stderr
    data = json.loads(done.stdout)
    assert data["status"] == "done" and git(fork, "rev-parse", "HEAD") != head
    assert data["notes"] and "post-rewrite" in data["notes"][0]


def test_the_ignored_hook_hint_is_given_as_git_gives_it(tmp_path: Path) -> None:
    """A hook that is not executable: git's hint, from a subfolder too and through
    core.hooksPath, and none with `advice.ignoredHook` false."""
    fork = _fork_moved(tmp_path)
    git(fork, "config", "core.hooksPath", "my-hooks")
    _hook(fork, "my-hooks", "#!/bin/sh\nexit 3\n")
    (fork / "my-hooks/pre-rebase").chmod(0o644)
    (fork / "pkg").mkdir(exist_ok=True)
    said = subprocess.run([sys.executable, "-m", "pq", "rebase", "--json", "upstream/main"],
                          cwd=fork / "pkg", capture_output=True, text=True, check=False)
    assert said.returncode == 0, said.stderr
    data = json.loads(said.stdout)
    assert data["status"] == "done" and data["ignored_hooks"] == ["my-hooks/pre-rebase"]
    assert "hint: The 'my-hooks/pre-rebase' hook was ignored" in said.stderr
    git(fork, "reset", "-q", "--hard", "refs/pq/orig-head/paddle")
    git(fork, "config", "advice.ignoredHook", "false")
    quiet = _rebase(fork, "upstream/main")
    assert quiet.returncode == 0 and "hint:" not in quiet.stderr, quiet.stderr


def test_a_branch_switch_while_the_rebase_computes_lands_nowhere(tmp_path: Path) -> None:
    """`git checkout other` in another terminal while pq rebase computed (here, from the
    pre-rebase hook, at the same moment): the landing's `reset --keep` moved the branch
    HEAD was on then, putting the rebased stack on `other` and its own commit off it."""
    fork = _fork_moved(tmp_path)
    git(fork, "branch", "other", "upstream/main~1")
    paddle, other = git(fork, "rev-parse", "paddle"), git(fork, "rev-parse", "other")
    _hook(fork, ".git/hooks", "#!/bin/sh\ngit checkout -q other\n")
    done = _rebase(fork, "upstream/main")
    assert done.returncode == 2, done.stderr
    assert "HEAD left paddle to other while pq rebase was computing; nothing was changed" \
        in done.stderr and "`git switch paddle`, then `pq rebase` again" in done.stderr
    assert (git(fork, "rev-parse", "paddle"), git(fork, "rev-parse", "other")) == (paddle, other)
    (fork / ".git/hooks/pre-rebase").unlink()
    git(fork, "switch", "-q", "paddle")
    assert _rebase(fork, "upstream/main").returncode == 0  # nothing left in the way
    assert git(fork, "rev-parse", "other") == other



def test_an_empty_hooks_path_is_not_the_working_tree(tmp_path: Path) -> None:
    """An empty core.hooksPath: git looks for `/pre-rebase`, and `--git-path hooks` says
    `./`; a `pre-rebase` at the top of the working tree is not git's hook, nor pq's."""
    fork = _fork_moved(tmp_path)
    git(fork, "config", "core.hooksPath", "")
    _hook(fork, ".", HOOK)
    done = _rebase(fork, "upstream/main")
    assert done.returncode == 0, done.stderr
    assert not (fork / ".git" / "asked").exists()
