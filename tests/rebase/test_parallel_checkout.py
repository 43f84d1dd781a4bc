"""The big checkouts of a rebase and an abort run git's parallel checkout where the user's
configuration leaves `checkout.workers` unset, and write exactly the files git's own
rebase writes (attributes, CRLF, `ident`, executables); a value the user set is kept."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, make_upstream, pq, worktree_files, write

from pq.git import gateway

FILES = 160  # above git's checkout.thresholdForParallelism (100): git goes parallel
ATTRIBUTES = "*.txt text eol=crlf\n*.id ident\n"


def content(i: int, version: int) -> str:
    return "".join(f"line {k} of file {i}\n" for k in range(12)) + f"version {version}\n"


def name(i: int) -> str:
    return f"d{i % 7}/f{i:03d}." + ("txt" if i % 3 == 0 else "id" if i % 3 == 1 else "py")


def upstream_of(tmp: Path) -> Path:
    files = {name(i): content(i, 0) for i in range(FILES)}
    files[".gitattributes"] = ATTRIBUTES
    files["d0/f001.id"] = "$Id$\n" + content(1, 0)
    return make_upstream(tmp / "upstream", files)


def patch(fork: Path) -> None:
    write(fork, name(5), content(5, 0).replace("line 0 ", "line zero "))
    write(fork, "tool.sh", "#!/bin/sh\necho fork\n", mode=0o755)
    commit_all(fork, "build: a tool of the fork's")


def move_upstream(upstream: Path) -> None:
    for i in range(FILES):  # every file changes far below the patch's line
        text = content(i, 1) if i != 1 else "$Id$\n" + content(1, 1)
        write(upstream, name(i), text)
    commit_all(upstream, "upstream: every file moves on")


def moved_fork(tmp: Path, configured: str | None) -> tuple[Path, Path]:
    """(upstream, fork): the fork carries `patch` as its series (`configured`: its
    checkout.workers), and upstream has moved every file on since."""
    upstream = upstream_of(tmp)
    fork = make_fork(tmp, upstream)
    patch(fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    if configured is not None:
        git(fork, "config", "checkout.workers", configured)
    move_upstream(upstream)
    return upstream, fork


def started_checkouts(trace: Path) -> list[list[str]]:
    """The argv of every `git reset`, `git checkout` and parallel checkout worker
    (`git checkout--worker`) git's trace2 saw start."""
    argv = [json.loads(line)["argv"] for line in trace.read_text().splitlines()
            if '"event":"start"' in line]
    return [a for a in argv if {"reset", "checkout", "checkout--worker"} & set(a)]


# (cores pq may use, the user's checkout.workers): the workers pq asks for at the landing
# (which leaves a core to the drift scan beside it) and at a stop and its abort.
CASES = {(4, None): ("3", "4"), (2, None): (None, "2"), (4, "1"): (None, None)}


@pytest.fixture(params=sorted(CASES, key=str), ids=lambda c: f"{c[0]}-cores-{c[1] or 'unset'}")
def case(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch
         ) -> tuple[str | None, str | None, str | None]:
    """(the user's checkout.workers, the workers wanted at the landing, at a stop), with
    the cores pq may use pinned to the case's."""
    cores, configured = request.param
    monkeypatch.setattr(gateway, "usable_cores", lambda: cores)
    return configured, *CASES[request.param]


def test_the_rebase_checkout_goes_parallel_and_writes_what_git_writes(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        case: tuple[str | None, str | None, str | None]) -> None:
    configured, landing, stop = case
    upstream, fork = moved_fork(tmp_path, configured)
    base = git(upstream, "rev-parse", "HEAD~1")
    git(fork, "fetch", "-q", "upstream")
    (tmp_path / "by-git").mkdir()
    by_git = make_fork(tmp_path / "by-git", upstream)
    git(by_git, "reset", "-q", "--hard", base)
    patch(by_git)
    git(by_git, "rebase", "-q", "upstream/main")

    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    pq(fork, "rebase", "upstream/main")
    monkeypatch.delenv("GIT_TRACE2_EVENT")

    ours = {p: b for p, b in worktree_files(fork).items()
            if p != "series.yaml" and not p.startswith("patches/")}
    assert ours == worktree_files(by_git)
    assert ours["d0/f000.txt"].endswith(b"version 1\r\n")  # eol=crlf went through
    assert b"$Id: " in ours["d0/f001.id"]  # and ident
    assert os.access(fork / "tool.sh", os.X_OK)
    assert git(fork, "status", "--porcelain") == ""
    assert_workers(started_checkouts(trace), "--keep", landing)


def assert_workers(started: list[list[str]], mode: str, workers: str | None) -> None:
    """The last checkout in `mode` ran with pq's `-c checkout.workers=<workers>` (None:
    without one), and git's parallel workers wrote its files exactly when it did."""
    moves = [i for i, a in enumerate(started) if mode in a]
    assert moves, started
    given = [a for a in started[moves[-1]] if a.startswith("checkout.workers=")]
    assert given == ([f"checkout.workers={workers}"] if workers else [])
    ran = [a for a in started[moves[-1] + 1:] if "checkout--worker" in a]
    assert bool(ran) == bool(workers), started


def test_the_abort_reset_goes_parallel_and_puts_every_byte_back(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        case: tuple[str | None, str | None, str | None]) -> None:
    configured, landing, stop = case
    upstream, fork = moved_fork(tmp_path, configured)
    write(upstream, name(5), content(5, 1).replace("line 0 ", "line nought "))
    commit_all(upstream, "upstream: the patched line too")
    git(fork, "fetch", "-q", "upstream")
    before = worktree_files(fork)

    trace = tmp_path / "trace.json"
    monkeypatch.setenv("GIT_TRACE2_EVENT", str(trace))
    assert pq(fork, "rebase", "upstream/main", ok=False).exit_code == 1
    assert_workers(started_checkouts(trace), "checkout", stop)
    pq(fork, "rebase", "--abort")
    monkeypatch.delenv("GIT_TRACE2_EVENT")

    assert worktree_files(fork) == before
    assert git(fork, "status", "--porcelain") == ""
    assert_workers(started_checkouts(trace), "--hard", stop)
