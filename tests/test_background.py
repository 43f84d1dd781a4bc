"""pq.background: work in a thread beside the caller, its result or its error handed over."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from pq.background import Background


def test_the_work_runs_beside_the_caller_and_hands_over_its_result() -> None:
    both = threading.Barrier(2, timeout=10)  # passed only while both threads run at once

    def work() -> str:
        both.wait()
        return threading.current_thread().name

    running = Background(work, "pq test work")
    both.wait()
    assert running.result() == "pq test work"
    assert running.result() == "pq test work"  # asked again: the same result


def test_the_error_is_raised_when_the_result_is_asked_for_and_kept_on_leaving() -> None:
    def work() -> None:
        raise ValueError("the work failed")

    with Background(work, "pq test work") as failing:
        pass  # leaving waits for the work and raises nothing
    with pytest.raises(ValueError, match="the work failed"):
        failing.result()


def test_no_thread_to_be_had_runs_the_work_here(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", refuse)
    ran_on: list[str] = []
    work = Background(lambda: ran_on.append(threading.current_thread().name) or 7, "pq test")
    assert work.result() == 7 and ran_on == [threading.main_thread().name]


def test_a_fault_fires_only_after_the_running_work_ended(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capfd: pytest.CaptureFixture[str]
        ) -> None:
    """A test's command at a checkpoint (or the kill) never meets a git process of pq's
    threads still running, say a `git status` holding index.lock."""
    import pq.git.process  # noqa: F401 - registers the runner for PQ_FAULT_RUN
    from pq import faults

    done = tmp_path / "done"
    release = threading.Event()

    def work() -> None:
        release.wait(10)
        done.write_text("the work ended\n")

    monkeypatch.setattr(faults, "_count", 0)
    monkeypatch.setenv("PQ_FAULT_AT", "1")
    monkeypatch.setenv("PQ_FAULT_RUN", f"cat {done}")
    running = Background(work, "pq test work")
    threading.Timer(0.3, release.set).start()
    faults.checkpoint("git test")  # waits for the work, then runs the command
    assert "the work ended" in capfd.readouterr().err
    running.wait()


def test_what_the_work_held_is_let_go_once_it_ran() -> None:
    """A finished Background keeps its result, not its work: a repository the work
    captured (rerere's read-ahead keys a weak map on it) can be collected."""
    import gc
    import weakref

    class Repo:
        pass

    def start(repo: Repo) -> Background[str]:
        return Background(lambda: type(repo).__name__, "pq test work")

    repo = Repo()
    gone = weakref.ref(repo)
    done = start(repo)
    assert done.result() == "Repo"
    del repo
    gc.collect()
    assert gone() is None


def test_work_started_in_another_thread_is_waited_for_only_once_it_runs() -> None:
    """A thread of pq's starts work of its own (the drift scan reads the range's `git log`
    beside it) while a fault waits for every running piece of work: what is waited for
    has started, never a thread not yet started (`cannot join thread before it is
    started`, which ended a rebase with an internal error in place of its fault)."""
    from pq import background

    stop = threading.Event()
    failed: list[BaseException] = []

    def start_many() -> None:
        while not stop.is_set():
            Background(lambda: None, "pq test inner").wait()

    starter = threading.Thread(target=start_many, daemon=True)
    starter.start()
    try:
        for _ in range(20_000):
            try:
                background._wait_running()
            except RuntimeError as exc:
                failed.append(exc)
                break
    finally:
        stop.set()
        starter.join(timeout=10)
    assert failed == []
