"""pq.push.registry's forked checks, on real repositories: the audit's pure Python runs in a
child process of its own, reads objects through a cat-file of its own, gives the verdict
it gives in a thread, and a verdict that turns out moot leaves no child behind."""

from __future__ import annotations

import dataclasses
import os
import time
from pathlib import Path

import pytest
from gitrepo import git, series_fork, write

from pq.git import forked as forking
from pq.git import process
from pq.git.objects import CommitId
from pq.git.repo import Git
from pq.push import registry

pytestmark = [pytest.mark.skipif(process.usable_cores() < 2 or not hasattr(os, "fork"),
                                 reason="checks fork only where a child pays"),
              pytest.mark.usefixtures("one_thread")]


def children() -> set[int]:
    """This process's child processes (every thread's), from /proc."""
    found: set[int] = set()
    for task in Path("/proc/self/task").iterdir():
        found |= {int(p) for p in (task / "children").read_text().split()}
    return found


def context(fork: Path) -> tuple[Git, registry.CheckContext]:
    repo = Git.open(fork)
    tip = CommitId(git(fork, "rev-parse", "HEAD"))
    return repo, registry.load_context(repo, tip, "refs/heads/paddle")


def fork_with_findings(tmp_path: Path) -> Path:
    """A series whose audit finds errors: a handler that swallows every exception (WA008)
    and a monkey-patch without a workaround block (WA014)."""
    return series_fork(
        tmp_path,
        ("python-glue: tolerate a missing op", {"pkg/glue.py": (
            "import torch\n\ntry:\n    import paddle\nexcept Exception:\n    pass\n")}),
        ("python-glue: patch torch", {"pkg/patch.py": (
            "import torch\n\ntorch.tensor_split = lambda *a: None\n")}))


def test_a_forked_check_reads_objects_through_a_cat_file_of_its_own(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The parent's cat-file answers the checks in its threads; a request from the child
    through the same pipes would tear their answers."""
    fork = series_fork(tmp_path, ("python-glue: glue", {"pkg/glue.py": "x = 1\n"}))

    def probe(repo: Git, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        before = children()
        repo.read_object(ctx.tree)
        own = children() - before
        return [registry.CheckFailure("probe", f"pid {os.getpid()} started {len(own)}", "-")]

    monkeypatch.setitem(registry._registered(), "probe", registry.Check(
        "probe", "reads the pushed tree", probe, needs=("series",), forks=True))
    repo, ctx = context(fork)
    with repo:
        repo.read_object(ctx.commit)  # the parent's cat-file runs already
        outcome = registry.run_checks(repo, ctx)
    said = [f.message for f in outcome.failures if f.check == "probe"]
    assert said == [said[0]] and said[0] != f"pid {os.getpid()} started 0", said
    assert said[0].endswith("started 1"), said  # its own reader, started in the child


def audit_noted(monkeypatch: pytest.MonkeyPatch, note: Path, wait: float = 0.0) -> None:
    """The audit check, writing the id of the process it runs in to `note` first."""
    audit = registry._registered()["audit"]

    def noted(repo: Git, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        note.write_text(str(os.getpid()))
        time.sleep(wait)
        return audit.run(repo, ctx)

    monkeypatch.setitem(registry._registered(), "audit", dataclasses.replace(audit, run=noted))


def test_the_forked_audit_gives_the_verdict_it_gives_in_a_thread(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fork = fork_with_findings(tmp_path)
    audit_noted(monkeypatch, note := tmp_path / "audit-pid")
    repo, ctx = context(fork)
    with repo:
        forked = registry.run_checks(repo, ctx)
    assert int(note.read_text()) != os.getpid()
    monkeypatch.setattr(forking, "forked", lambda fn: None)
    repo, ctx = context(fork)
    with repo:
        threaded = registry.run_checks(repo, ctx)
    assert int(note.read_text()) == os.getpid()
    assert forked.statuses == threaded.statuses
    assert forked.statuses["audit"] == registry.FAILED
    assert forked.failures == threaded.failures
    assert {f.rule for f in forked.failures if f.check == "audit"} == {"WA008", "WA014"}


def test_a_forked_verdict_made_moot_leaves_no_child(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """series.yaml does not load: the audit, started before that was known (and slow
    here), is not waited for, and its child is gone when the checks end."""
    fork = fork_with_findings(tmp_path)
    audit_noted(monkeypatch, tmp_path / "audit-pid", wait=60)
    write(fork, "series.yaml", "series: [unclosed\n")
    git(fork, "commit", "-qam", "a broken series.yaml")
    repo, ctx = context(fork)
    assert ctx.load_error is not None
    repo.close()
    started = time.monotonic()
    outcome = registry.run_checks(repo, ctx)
    assert time.monotonic() - started < 30
    assert outcome.statuses["series"] == registry.FAILED
    assert outcome.statuses["audit"] == registry.NOT_RUN
    assert children() == set()


def test_a_forked_check_that_would_wait_for_another_fails_at_once_and_tells_the_context(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Nothing decides a status in the child: a forked check asking for one waited for
    ever (a push hung). What it tells the context (`read_local`: do not cache the
    verdict) came back with its failures."""
    fork = series_fork(tmp_path, ("python-glue: glue", {"pkg/glue.py": "x = 1\n"}))

    def local(repo: Git, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        ctx.read_local = True
        return []

    def waits(repo: Git, ctx: registry.CheckContext) -> list[registry.CheckFailure]:
        ctx.status_of("series")
        return []

    monkeypatch.setitem(registry._registered(), "local", registry.Check(
        "local", "reads this repository's own files", local, needs=("series",), forks=True))
    repo, ctx = context(fork)
    with repo:
        assert registry.run_checks(repo, ctx).statuses["local"] == registry.PASSED
    assert ctx.read_local
    monkeypatch.setitem(registry._registered(), "waits", registry.Check(
        "waits", "asks for another's verdict", waits, needs=("series",), forks=True))
    repo, ctx = context(fork)
    started = time.monotonic()
    with repo, pytest.raises(RuntimeError, match="forks: it cannot wait for 'series'"):
        registry.run_checks(repo, ctx)
    assert time.monotonic() - started < 30
