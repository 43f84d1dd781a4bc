"""Recorded resolutions agree with `git rebase` and git rerere where a reuse goes through
the working tree with a patch's mode change, where one resolution serves several files,
and where `rerere.enabled` says false in a form only git's own reading knows."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from gitrepo import commit_all, git, make_fork, make_upstream, pq, write

LINES = "".join(f"line {n}\n" for n in range(1, 11))


def lines_with(five: str, tail: str = "") -> str:
    return LINES.replace("line 5\n", five + "\n") + tail


def fork_with_recorded(tmp_path: Path, files: dict[str, str], patches: dict[str, str],
                       upstream: dict[str, str], modes: dict[str, int] | None = None
                       ) -> tuple[Path, str, str]:
    """A fork carrying one patch per file of `patches` (each file's new content; `modes`:
    a chmod it makes too), upstream then rewriting them as `upstream` says; the first
    rebase stopped at each, was resolved by keeping both lines and went on, so git
    rerere recorded every resolution. Returns (fork, its tip before that rebase, the last
    patch commit)."""
    up = make_upstream(tmp_path / "upstream", files)
    fork = make_fork(tmp_path, up)
    for rel, text in patches.items():
        write(fork, rel, text, (modes or {}).get(rel))
        commit_all(fork, f"patch {rel}")
    last = git(fork, "rev-parse", "HEAD")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    orig = git(fork, "rev-parse", "HEAD")
    for rel, text in upstream.items():
        write(up, rel, text)
    commit_all(up, "upstream: rewrite line 5")
    git(fork, "fetch", "-q", "upstream")
    result = pq(fork, "rebase", "upstream/main", ok=False)
    while result.exit_code == 1:
        for rel in git(fork, "diff", "--name-only", "--diff-filter=U").split():
            kept = [ln for ln in (fork / rel).read_text().splitlines(keepends=True)
                    if not ln.startswith(("<<<<<<<", "=======", ">>>>>>>"))]
            (fork / rel).write_text("".join(kept))
            git(fork, "add", rel)
        result = pq(fork, "rebase", "--continue", ok=False)
    assert result.exit_code == 0, result.output
    return fork, orig, last


def git_rebase_with_rerere(fork: Path, last: str) -> str:
    """The tip `git rebase` with rerere gives for the same patch commits."""
    git(fork, "checkout", "-q", "-B", "gitside", last)
    base = git(fork, "merge-base", "gitside", "upstream/main")
    rr = ["git", "-c", "rerere.enabled=true", "-c", "rerere.autoupdate=true"]
    env = {**os.environ, "GIT_EDITOR": "true"}  # --continue keeps the message as it is
    subprocess.run([*rr, "rebase", "-q", "--onto", "upstream/main", base], cwd=fork, env=env,
                   capture_output=True, check=False)
    for _ in range(10):  # each stop: rerere resolved and staged it
        if not (fork / ".git/rebase-merge").is_dir():
            break
        assert not git(fork, "diff", "--name-only", "--diff-filter=U")
        subprocess.run([*rr, "rebase", "--continue"], cwd=fork, env=env, capture_output=True,
                       check=False)
    assert not (fork / ".git/rebase-merge").is_dir()
    tip = git(fork, "rev-parse", "HEAD")
    git(fork, "checkout", "-q", "paddle")
    return tip


def test_a_reuse_in_the_working_tree_keeps_the_patch_s_mode_change(tmp_path: Path) -> None:
    fork, orig, last = fork_with_recorded(
        tmp_path, {"run.sh": LINES}, {"run.sh": lines_with("patched")},
        {"run.sh": lines_with("upstream")}, modes={"run.sh": 0o755})
    assert git(fork, "ls-tree", "HEAD~1", "run.sh").startswith("100755")
    git(fork, "reset", "-q", "--hard", orig)
    data = json.loads(pq(fork, "rebase", "upstream/main", "--json").output)
    assert data["patches"][0]["rerere"] is True
    theirs = git_rebase_with_rerere(fork, last)
    assert git(fork, "ls-tree", theirs, "run.sh").startswith("100755")
    assert git(fork, "ls-tree", "paddle~1", "run.sh") == git(fork, "ls-tree", theirs, "run.sh")


def test_one_resolution_serving_several_files_is_forgotten_by_any_of_them(tmp_path: Path
                                                                         ) -> None:
    names = ("a.txt", "b.txt", "c.txt")  # the same conflict, other lines around it
    fork, orig, _ = fork_with_recorded(
        tmp_path, {n: lines_with("line 5", f"tail of {n}\n") for n in names},
        {n: lines_with("patched", f"tail of {n}\n") for n in names},
        {n: lines_with("upstream", f"tail of {n}\n") for n in names})
    git(fork, "reset", "-q", "--hard", orig)
    pq(fork, "rebase", "upstream/main")
    notes = json.loads((fork / ".git/rr-cache/pq-paths.json").read_text())
    assert [e["paths"] for e in notes.values()] == [list(names)]
    result = pq(fork, "rebase", "--forget", "a.txt")
    assert result.output.startswith("forgot 1 recorded resolution(s) of a.txt: ")
    assert json.loads((fork / ".git/rr-cache/pq-paths.json").read_text()) == {}


def test_rerere_is_configured_as_at_the_start_as_git_reads_it(tmp_path: Path) -> None:
    """git reads its configuration once, when `git rebase` starts: a pre-rebase hook that
    turns rerere off is heard by the next rebase, not by this one. pq reads it ahead in a
    thread, and waits for that read before it runs the hook."""
    fork, orig, last = fork_with_recorded(
        tmp_path, {"a.txt": LINES}, {"a.txt": lines_with("patched")},
        {"a.txt": lines_with("upstream")})
    write(fork, ".git/hooks/pre-rebase", "#!/bin/sh\ngit config rerere.enabled false\n",
          mode=0o755)
    git(fork, "config", "rerere.enabled", "true")
    git(fork, "checkout", "-q", "-B", "gitside", last)
    subprocess.run(["git", "rebase", "-q", "upstream/main"], cwd=fork, capture_output=True,
                   check=False)
    assert "<<<<<<<" not in (fork / "a.txt").read_text()  # git reused the resolution
    subprocess.run(["git", "rebase", "--abort"], cwd=fork, capture_output=True, check=False)
    git(fork, "checkout", "-q", "paddle")
    for _ in range(3):  # read in a thread: no race decides it
        git(fork, "config", "rerere.enabled", "true")
        git(fork, "reset", "-q", "--hard", orig)
        result = pq(fork, "rebase", "upstream/main", ok=False)
        assert result.exit_code == 0, result.output
        assert "resolved from a recorded resolution" in result.output
    assert git(fork, "config", "rerere.enabled") == "false"  # the hook ran
    git(fork, "reset", "-q", "--hard", orig)
    result = pq(fork, "rebase", "upstream/main", ok=False)  # the next one hears it
    assert result.exit_code == 1 and "<<<<<<<" in (fork / "a.txt").read_text()
    pq(fork, "rebase", "--abort")


def test_rerere_enabled_false_as_git_reads_it_is_honoured(tmp_path: Path) -> None:
    fork, orig, _ = fork_with_recorded(
        tmp_path, {"a.txt": LINES}, {"a.txt": lines_with("patched")},
        {"a.txt": lines_with("upstream")})
    rebased = git(fork, "rev-parse", "HEAD")  # the first rebase's, resolution recorded
    for value in ("", "00", "0x0"):  # all false to `git config --type=bool`
        git(fork, "config", "rerere.enabled", value)
        git(fork, "reset", "-q", "--hard", orig)
        result = pq(fork, "rebase", "upstream/main", ok=False)
        assert result.exit_code == 1, (value, result.output)
        assert "<<<<<<<" in (fork / "a.txt").read_text()
        pq(fork, "rebase", "--abort")
    git(fork, "config", "rerere.enabled", "maybe")
    git(fork, "reset", "-q", "--hard", orig)
    bad = pq(fork, "rebase", "upstream/main", ok=False)
    assert bad.exit_code == 2 and "rerere.enabled is not a boolean" in bad.output
    # With no conflict, git never reads rerere.enabled: the rebase goes on, as git's does
    # (pq reads rerere's configuration early where rr-cache exists, its error kept).
    up = tmp_path / "upstream"
    write(up, "b.txt", "a file no patch touches\n")
    commit_all(up, "upstream: a clean change")
    git(fork, "fetch", "-q", "upstream")
    git(fork, "reset", "-q", "--hard", rebased)
    assert (fork / ".git/rr-cache").is_dir()
    clean = pq(fork, "rebase", "upstream/main", ok=False)
    assert clean.exit_code == 0, clean.output
