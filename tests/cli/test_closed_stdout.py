"""A reader that went away (`pq rebase upstream/main | head -1`): pq still finishes what it
started, says nothing more, and exits 141 (128 + SIGPIPE) as git does: not 1, which
means a conflict or a finding."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import commit_all, git, one_patch_fork, series_fork, write


def closed_stdout(fork: Path, *args: str) -> tuple[int, str]:
    """Run `python -m pq ARGS` with a stdout whose reader is closed already."""
    read, written = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "pq", *args], cwd=fork, stdout=written,
                              stderr=subprocess.PIPE, check=False)
    finally:
        os.close(written)
    return proc.returncode, proc.stderr.decode()


@pytest.mark.parametrize("click", [False, True])
def test_a_rebase_into_a_closed_pipe_finishes_and_exits_141(tmp_path: Path, click: bool
                                                            ) -> None:
    fork = one_patch_fork(tmp_path, {"pkg/__init__.py": "import paddle\n"}, {"NEWS": "moved\n"})
    code, err = closed_stdout(fork, *(["-C", "."] if click else []), "rebase", "upstream/main")
    assert (code, err) == (141, "")
    assert git(fork, "rev-parse", "HEAD~2") == git(fork, "rev-parse", "upstream/main")
    assert git(fork, "status", "--porcelain") == ""
    assert not (fork / ".git" / "pq" / "rebase" / "state.json").exists()
    assert git(fork, "log", "-1", "--format=%s") == "pq: rebase series onto " + git(
        fork, "rev-parse", "--short=12", "upstream/main")
    assert closed_stdout(fork, "series") == (141, "")


@pytest.mark.skipif(not Path("/dev/full").exists(), reason="needs /dev/full")
@pytest.mark.parametrize("args", [("series",), ("series", "--json"), ("log", "--json"),
                                  ("status", "--json"), ("-C", ".", "rebase", "--json")])
def test_a_stdout_that_cannot_be_written_is_one_line_on_stderr(tmp_path: Path,
                                                               args: tuple[str, ...]) -> None:
    """A full disk under stdout (`> /dev/full`): the write's error is pq's one line, on
    stderr, with --json too (its JSON error cannot go where the report could not)."""
    fork = one_patch_fork(tmp_path, {"pkg/__init__.py": "import paddle\n"}, {"NEWS": "moved\n"})
    with open("/dev/full", "wb") as full:
        proc = subprocess.run([sys.executable, "-m", "pq", *args], cwd=fork, stdout=full,
                              stderr=subprocess.PIPE, check=False)
    assert (proc.returncode, proc.stderr.decode()) == (
        2, "pq: error: No space left on device (free some disk space, then run the command "
           "again)\n")


@pytest.mark.parametrize("unbuffered", [False, True])
@pytest.mark.parametrize("as_json", [False, True])
def test_a_reader_gone_mid_report_exits_141_and_says_nothing(tmp_path: Path, unbuffered: bool,
                                                             as_json: bool) -> None:
    """`pq classify ... | head -c 10` on a report larger than the pipe holds: 141 and a quiet
    stderr. The interpreter's last flush of what was left failed (exit 120, a traceback's
    line), and under PYTHONUNBUFFERED a write the pipe took in part lost its rest (exit 0)."""
    git(tmp_path, "init", "-q")
    names = [f"f{i}.py" for i in range(3000)]
    for name in names:
        (tmp_path / name).write_text("x\n")
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    if unbuffered:
        env["PYTHONUNBUFFERED"] = "1"
    proc = subprocess.Popen([sys.executable, "-m", "pq", "classify", *names,
                             *(["--json"] if as_json else [])], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    assert proc.stdout is not None and proc.stderr is not None
    assert len(proc.stdout.read(10)) == 10
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert (proc.wait(), err) == (141, "")


@pytest.mark.parametrize("args", [["series"], ["rebase", "--abort"]])
def test_an_error_line_stderr_cannot_take_keeps_its_exit_code(tmp_path: Path,
                                                             args: list[str]) -> None:
    """stderr's reader gone (a terminal hung up, a closed pipe) as pq says its error: the
    interpreter's last flush failed again, and pq exited 120, not the error's 2."""
    read, written = os.pipe()
    os.close(read)
    try:
        proc = subprocess.run([sys.executable, "-m", "pq", *args], cwd=tmp_path,
                              stdout=subprocess.DEVNULL, stderr=written, check=False)
    finally:
        os.close(written)
    assert proc.returncode == 2


def closed_streams(fork: Path, redirect: str, *args: str) -> subprocess.CompletedProcess[str]:
    """Run `python -m pq ARGS` with a standard stream closed by the shell (`2>&-`, `<&-`)."""
    return subprocess.run(["sh", "-c", f'exec "$@" {redirect}', "sh", sys.executable, "-m",
                           "pq", *args], cwd=fork, stdout=subprocess.PIPE, text=True,
                          check=False)


@pytest.mark.parametrize("click", [False, True])
def test_a_closed_stderr_or_stdin_is_no_internal_error(tmp_path: Path, click: bool) -> None:
    """`pq rebase upstream/main 2>&-` runs as git's rebase does: Python left sys.stderr None,
    and the progress display's `isatty()` on it was an internal error (exit 2, nothing
    done); `pq hook run REMOTE URL <&-` read a None stdin the same way."""
    fork = one_patch_fork(tmp_path, {"pkg/__init__.py": "import paddle\n"}, {"NEWS": "moved\n"})
    prefix = ["-C", "."] if click else []
    rebased = closed_streams(fork, "2>&-", *prefix, "rebase", "upstream/main")
    assert rebased.returncode == 0, rebased.stdout
    assert "rebased paddle onto" in rebased.stdout
    assert git(fork, "rev-parse", "HEAD~2") == git(fork, "rev-parse", "upstream/main")
    applied = closed_streams(fork, "2>&-", "apply", "-b", "other", "--json")
    assert applied.returncode == 0 and '"branch": "other"' in applied.stdout, applied.stdout
    hook = closed_streams(fork, "<&- 2>/dev/null", *prefix, "hook", "run", "origin", "url")
    assert hook.returncode == 0, hook.stdout


def test_a_rebase_that_stops_early_takes_its_progress_line_off_the_terminal(
        tmp_path: Path) -> None:
    """On a terminal, `rebasing 1/2: ...` stayed up when the rebase stopped at its first
    patch (the line was cleared only once the last patch started): the report's first line
    was written on the end of it."""
    import pty

    fork = series_fork(tmp_path, ("python-glue: a", {"a.txt": "fork\n"}),
                       ("python-glue: b", {"b.txt": "fork\n"}))
    write(tmp_path / "upstream", "a.txt", "upstream\n")
    commit_all(tmp_path / "upstream", "upstream: a")
    git(fork, "fetch", "-q", "upstream")
    main, terminal = pty.openpty()
    proc = subprocess.Popen([sys.executable, "-m", "pq", "rebase", "upstream/main"], cwd=fork,
                            stdin=subprocess.DEVNULL, stdout=terminal, stderr=terminal)
    os.close(terminal)
    shown = b""
    while True:
        try:
            chunk = os.read(main, 4096)
        except OSError:  # EIO: the terminal's last writer is gone
            break
        if not chunk:
            break
        shown += chunk
    os.close(main)
    assert proc.wait() == 1, shown
    assert b"rebasing 1/2" in shown, shown
    report = shown.index(b"upstream upstream/main:")
    assert shown[:report].endswith(b"\r" + b" " * 80 + b"\r"), shown[:report]
