"""pq.background: work in a thread beside the caller, its result or its error handed over."""

from __future__ import annotations

import threading

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
