"""Hermetic git for every test: a private HOME, no system config, fixed identities and dates.
Also the `slow` mark: the end-to-end modules that `make test-fast` leaves out (tests/ mirrors
the package: model/ and queue/ hold fast unit tests; test files need unique base names)."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import hypothesis
import pytest

sys.path.insert(0, str(Path(__file__).parent))

# `make test` (and so CI) runs the property tests on Hypothesis's fixed examples
# (`--hypothesis-profile=repeatable`), so that a failure there is one anyone can rerun; a
# plain `pytest` (and `make test-fast`) draws new examples every run, which is where new
# findings come from.
hypothesis.settings.register_profile("repeatable", derandomize=True, database=None,
                                     print_blob=True)


@pytest.fixture(autouse=True)
def hermetic_git(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
                 ) -> Iterator[None]:
    home = tmp_path_factory.mktemp("home")
    for key in list(os.environ):
        if key.startswith(("GIT_", "PQ_")):
            monkeypatch.delenv(key, raising=False)
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / ".config"))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_AUTHOR_NAME", "A U Thor")
    monkeypatch.setenv("GIT_AUTHOR_EMAIL", "author@example.com")
    monkeypatch.setenv("GIT_COMMITTER_NAME", "C O Mitter")
    monkeypatch.setenv("GIT_COMMITTER_EMAIL", "committer@example.com")
    monkeypatch.setenv("GIT_AUTHOR_DATE", "1700000000 +0100")
    monkeypatch.setenv("GIT_COMMITTER_DATE", "1700000000 +0100")
    monkeypatch.setenv("GIT_EDITOR", "false")
    monkeypatch.setenv("PQ_LOCK_WAIT", "0.5")
    (home / ".gitconfig").write_text(
        "[init]\n\tdefaultBranch = main\n[advice]\n\tdetachedHead = false\n"
        "[core]\n\tautocrlf = false\n")
    yield


# End-to-end modules that dominate the suite's time (measured; see `make test-fast`).
SLOW_MODULES = frozenset({
    "test_faults.py", "test_hostile.py", "test_transcripts.py", "test_hostile_content.py",
    "test_demo.py",
})


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    for item in items:
        if item.path.name in SLOW_MODULES:
            item.add_marker(pytest.mark.slow)


@pytest.fixture
def one_thread() -> None:
    """`forked` forks only where no other thread runs: one an earlier test left (a timer)
    is waited for here, and named where it outlives the wait."""
    import threading

    deadline = time.monotonic() + 30
    while threading.active_count() > 1 and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == 1, threading.enumerate()
