"""pq.git.forked: Python work in a forked child, with real processes: its value or its
error comes back, a child killed or cancelled is reaped, nothing is forked beside a thread
or without a process to be had, and a fork's child has no fault checkpoints."""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from procs import gone, read_pid, until

from pq.git.forked import forked
from pq.git.process import usable_cores


def hanging(started: Path) -> Callable[[], None]:
    """Work that writes its process's id to `started`, then hangs a minute."""
    def hang() -> None:
        started.write_text(str(os.getpid()))
        time.sleep(60)
    return hang


needs_two_cores = pytest.mark.skipif(usable_cores() < 2 or not hasattr(os, "fork"),
                                     reason="forked runs nothing where it would not pay")
alone = pytest.mark.usefixtures("one_thread")




@needs_two_cores
@alone
def test_forked_work_runs_in_another_process_and_its_value_comes_back() -> None:
    child = forked(lambda: (os.getpid(), {"found": [1, 2]}))
    assert child is not None
    pid, value = child.result()
    assert pid == child.pid != os.getpid()
    assert value == {"found": [1, 2]}


@needs_two_cores
@alone
def test_what_forked_work_raised_is_raised_here_and_words_stand_for_what_cannot_travel(
) -> None:
    child = forked(lambda: int("not a number"))
    assert child is not None
    with pytest.raises(ValueError, match="not a number"):
        child.result()

    class Local(Exception):  # a class pickle cannot find by name
        pass

    def raise_local() -> None:
        raise Local("kept in words")

    child = forked(raise_local)
    assert child is not None
    with pytest.raises(RuntimeError, match="Local: kept in words"):
        child.result()


@needs_two_cores
@alone
def test_a_forked_child_killed_before_it_answers_is_an_error_and_cancel_reaps_it(
        tmp_path: Path) -> None:
    started = tmp_path / "started"
    hang = hanging(started)
    child = forked(hang)
    assert child is not None
    os.kill(read_pid(started), 9)
    with pytest.raises(RuntimeError, match="without an answer .killed by SIGKILL"):
        child.result()
    started.unlink()
    child = forked(hang)
    assert child is not None
    pid = read_pid(started)
    child.cancel()
    assert gone(pid)
    with pytest.raises(ChildProcessError):  # reaped: no zombie left behind
        os.waitpid(pid, os.WNOHANG)


@needs_two_cores
@alone
def test_a_forked_child_has_no_fault_checkpoints(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """As pq's threads have none: a kill numbered by a count that a child's steps entered
    in turn with the parent's would land somewhere else each run."""
    from pq import faults

    monkeypatch.setenv("PQ_FAULT_LOG", str(log := tmp_path / "checkpoints"))
    child = forked(lambda: faults.checkpoint("in the child"))
    assert child is not None
    child.result()
    faults.checkpoint("in the parent")
    assert log.read_text().split()[1:] == ["in", "the", "parent"]


@alone
def test_nothing_is_forked_beside_another_thread() -> None:
    import threading

    release = threading.Event()
    beside = threading.Thread(target=release.wait)
    beside.start()
    try:
        assert forked(lambda: 1) is None  # a lock that thread held would stay held
    finally:
        release.set()
        beside.join()


@needs_two_cores
@alone
def test_a_child_not_to_be_had_is_no_error_the_caller_runs_the_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """At a process limit (EAGAIN) or out of memory, fork() fails: the push refused with
    an internal error where its audit could have run in a thread."""
    import errno

    def no_fork() -> int:
        raise OSError(errno.EAGAIN, "Resource temporarily unavailable")

    before = set(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "fork", no_fork)
    assert forked(lambda: 1) is None
    assert set(os.listdir("/proc/self/fd")) == before  # the pipe closed again


@needs_two_cores
@alone
def test_what_forked_work_raised_carries_the_childs_traceback() -> None:
    def inner_rule() -> None:
        raise ValueError("a bug in a rule")

    child = forked(inner_rule)
    assert child is not None
    with pytest.raises(ValueError) as raised:
        child.result()
    notes = "\n".join(getattr(raised.value, "__notes__", []))
    assert "forked child" in notes and "inner_rule" in notes, notes


@needs_two_cores
@alone
def test_a_child_killed_while_its_result_is_awaited_ends_the_wait(tmp_path: Path) -> None:
    """What an interrupt of the parent does to a child whose answer a thread awaits."""
    import threading

    started = tmp_path / "started"
    hang = hanging(started)
    child = forked(hang)
    assert child is not None
    pid = read_pid(started)
    outcome: list[BaseException] = []

    def wait() -> None:
        try:
            child.result()
        except BaseException as exc:
            outcome.append(exc)

    waiting = threading.Thread(target=wait)
    waiting.start()
    child.kill()
    waiting.join(10)
    assert not waiting.is_alive() and isinstance(outcome[0], RuntimeError), outcome
    assert gone(pid)


@needs_two_cores
@pytest.mark.skipif(os.uname().sysname != "Linux", reason="PR_SET_PDEATHSIG is Linux's")
def test_a_child_dies_with_pq(tmp_path: Path) -> None:
    """pq killed outright (a CI job's timeout) left its child working on, holding pq's
    stdout open for as long as the work lasted."""
    import signal
    import subprocess
    import sys

    started = tmp_path / "started"
    script = ("import os, time\nfrom pq.git.forked import forked\n"
              f"def hang():\n    open({str(started)!r}, 'w').write(str(os.getpid()))\n"
              "    time.sleep(60)\n"
              "forked(hang)\ntime.sleep(60)\n")
    pq_process = subprocess.Popen([sys.executable, "-c", script])
    try:
        child = read_pid(started)
        pq_process.send_signal(signal.SIGKILL)
        pq_process.wait()
        assert until(lambda: gone(child), 10), f"child {child} outlived pq"
    finally:
        pq_process.kill()
