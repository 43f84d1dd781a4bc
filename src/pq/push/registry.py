"""The check registry: named checks, the order they run in, and what running them gives.

A check is `(git, ctx) -> list[CheckFailure]`, registered with `@check(...)` (the checks
themselves live in `pq.push.checks`, imported on first use of the list); `run_checks`
runs them all on the pushed commit's objects (never the working tree), each once the checks
it needs are decided, several at a time, and reports them in registry order.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import pq
from pq.errors import ConfigError, PqError
from pq.git.objects import CommitId, TreeId
from pq.git.repo import Git
from pq.push.turns import Turns

if TYPE_CHECKING:
    from pq.git.forked import Forked
    from pq.queue.files import Queue

# Checks that judge the fork's code against a policy, not whether branch and series agree:
# reported apart from the consistency checks ("policy findings", not "does not match").
POLICY_CHECKS = frozenset({"audit"})
# Checks that want a record of something done to the pushed commit (the gate's stages),
# not agreement between branch and series: "have not passed", not "does not match".
GATE_CHECKS = frozenset({"gate"})

PASSED = "passed"
FAILED = "failed"
SKIPPED = "skipped"  # PQ_SKIP named it, or a check it needs
NOT_RUN = "not-run"  # a check it needs failed first (or could not run)
UNAVAILABLE = "unavailable"  # the module it needs is not installed yet


@dataclass(frozen=True)
class CheckFailure:
    """One thing wrong with the pushed commit, and the command that fixes it."""

    check: str
    message: str
    fix_command: str
    rule: str | None = None  # the audit rule a policy finding is of (WA014, say)
    # series.yaml itself is wrong as every pq command reads it (it does not load, a block
    # is malformed): no mismatch between the branch and its series, though no match either.
    unreadable: bool = False

    def to_json(self) -> dict[str, str]:
        return {"check": self.check, "message": self.message, "fix": self.fix_command}


class CheckUnavailable(Exception):
    """Raised by a check whose machinery is not installed; the check passes with a notice."""


@dataclass
class CheckContext:
    """What every check sees: the pushed commit and the queue committed in it."""

    commit: CommitId
    ref: str
    tree: TreeId
    queue: Queue | None = None
    load_error: ConfigError | None = None
    # The statuses decided so far (run_checks fills it); `status_of` waits on `decided`.
    statuses: dict[str, str] = field(default_factory=dict)
    decided: threading.Condition = field(default_factory=threading.Condition)
    slots: Turns | None = None  # run_checks' running checks, when it runs
    # A check read more than the commit (this repository's own attribute files): the
    # verdict is not kept for the next push of the same commit.
    read_local: bool = False
    # The export check may answer from pq's export cache (`pq check --no-cache`: not).
    use_export_cache: bool = True

    def status_of(self, name: str) -> str:
        """The status of check `name`, once decided: a check that runs alongside the
        checks it comes `after` asks before work that is only worth doing if they pass.
        While it waits, its place among the running checks goes to another (the one it
        waits for, maybe)."""
        if name not in _REGISTRY:  # it would never be decided
            raise ValueError(f"no check is named {name!r}")
        with self.decided:
            if name in self.statuses:
                return self.statuses[name]
        if self.slots is not None:
            self.slots.release()
        try:
            with self.decided:
                self.decided.wait_for(lambda: name in self.statuses)
                return self.statuses[name]
        finally:
            if self.slots is not None:
                self.slots.acquire()

    def decide(self, name: str, status: str) -> None:
        with self.decided:
            self.statuses[name] = status
            self.decided.notify_all()


CheckFn = Callable[[Git, CheckContext], list[CheckFailure]]


@dataclass(frozen=True)
class Check:
    name: str
    summary: str
    run: CheckFn
    needs: tuple[str, ...] = ()  # checks that must pass (or be unavailable) before it runs
    # Checks whose failure makes its verdict moot: it runs alongside them, and is reported
    # not-run unless they pass. Only for a check that can run whatever they find.
    after: tuple[str, ...] = ()
    version: int = 1  # bump when the check's verdict can change for the same commit
    module: str | None = None  # an optional pq module the check imports lazily
    # Pure Python work on what the context holds, reading ctx and changing nothing in it
    # (no `after`): run in a forked child where one pays (pq.git.forked), so that
    # it does not take turns on the interpreter lock with the other checks.
    forks: bool = False


_REGISTRY: dict[str, Check] = {}


def check(name: str, summary: str, *, needs: tuple[str, ...] = (),
          after: tuple[str, ...] = (), version: int = 1,
          module: str | None = None, forks: bool = False) -> Callable[[CheckFn], CheckFn]:
    """Register `fn` as the check `name`; checks are reported in registration order."""
    def register(fn: CheckFn) -> CheckFn:
        if name in _REGISTRY:
            raise ValueError(f"check {name!r} registered twice")
        for dep in (*needs, *after):
            if dep not in _REGISTRY:
                raise ValueError(f"check {name!r} needs {dep!r}, which is not registered yet")
        if forks and after:
            raise ValueError(f"check {name!r} forks: it cannot wait for {after[0]!r}")
        _REGISTRY[name] = Check(name, summary, fn, needs, after, version, module, forks)
        return fn
    return register


def _registered() -> dict[str, Check]:
    """The registry, with pq's own checks loaded (they register on import)."""
    import pq.push.checks  # noqa: F401

    return _REGISTRY


def all_checks() -> list[Check]:
    return list(_registered().values())


def names() -> list[str]:
    return list(_registered())


def available(c: Check) -> bool:
    """Whether the optional module a check imports is installed (looked up, not imported)."""
    if c.module is None:
        return True
    parts = c.module.split(".")
    if parts[0] != "pq":
        return True
    where = Path(pq.__file__).parent.joinpath(*parts[1:])
    return where.with_suffix(".py").is_file() or (where / "__init__.py").is_file()


def fingerprint() -> str:
    """Changes when a check is added, removed, versioned or becomes available (cache key)."""
    return ",".join(f"{c.name}@{c.version}{'' if available(c) else '-absent'}"
                    for c in _registered().values())


def load_context(git: Git, commit: CommitId, ref: str) -> CheckContext:
    from pq.queue.files import read_tree

    ctx = CheckContext(commit=commit, ref=ref, tree=git.tree_of(commit))
    try:
        ctx.queue = read_tree(git, commit)
    except ConfigError as exc:
        ctx.load_error = exc
    return ctx


@dataclass
class RunOutcome:
    """Per-check status (in registry order), the failures, and notices worth printing."""

    statuses: dict[str, str]
    failures: list[CheckFailure]
    notices: list[str]

    @property
    def ok(self) -> bool:
        return not self.failures


def run_checks(git: Git, ctx: CheckContext, skip: frozenset[str] = frozenset(),
               workers: int = 2) -> RunOutcome:
    """Run every check on `ctx`, each in a thread of its own as soon as the checks it needs
    are decided, `workers` of them at a time: one check's git processes (the export's diff
    of every commit, the apply's `git apply`) run while another's Python reads patches.
    Statuses, failures and notices come out in registry order, whichever check ends first;
    so does the error of a check that raised one, unless its verdict was moot anyway. An
    interrupt starts no further check. (Plain threads: concurrent.futures costs a push
    ~15 ms of imports. Two at a time: the checks' Python shares one interpreter lock, and a
    third thread only takes turns; on 1000 patches, 2 cores, 511 ms against 555 ms with
    three, medians of 10 rounds.) A check that `forks` (the audit's pure Python) runs in a
    child process started before the threads, and takes no place among them: on 1000
    patches, 2 cores, a push's checks took 438 ms against 522 ms, medians of 9 rounds."""
    from functools import partial
    from queue import SimpleQueue

    from pq.git.forked import forked

    if workers < 1:
        raise ValueError(f"run_checks needs at least one worker, not {workers}")
    checks = all_checks()
    statuses = ctx.statuses
    statuses.clear()
    found: dict[str, list[CheckFailure]] = {}
    notices: dict[str, str] = {}
    errors: dict[str, Exception] = {}
    waiting = list(checks)
    ended: SimpleQueue[tuple[Check, list[CheckFailure] | BaseException]] = SimpleQueue()
    slots = ctx.slots = Turns(workers)
    stop = threading.Event()
    threads: list[threading.Thread] = []
    running = 0
    children: dict[str, Forked[tuple[list[CheckFailure], bool]]] = {}  # not waited for yet
    waited: list[Forked[tuple[list[CheckFailure], bool]]] = []

    def wait_for(c: Check, child: Forked[tuple[list[CheckFailure], bool]]) -> None:
        try:
            failures, read_local = child.result()
            ctx.read_local = ctx.read_local or read_local
            ended.put((c, failures))
        except BaseException as exc:  # handed to the main thread
            ended.put((c, exc))

    def work(c: Check, ticket: object) -> None:
        slots.acquire(ticket)
        try:
            if stop.is_set():
                return
            try:
                ended.put((c, c.run(git, ctx)))
            except BaseException as exc:  # handed to the main thread
                if not isinstance(exc, Exception):
                    stop.set()  # Ctrl-C: before this place is free for the next check
                ended.put((c, exc))
        finally:
            slots.release()

    try:
        # Forked before any thread (a fork beside threads is not safe), whatever the checks
        # they need will say: a verdict that turns out moot is thrown away.
        for c in checks:
            if c.forks and _moot(c, {}, skip) is None and (
                    child := forked(partial(_in_child, c, git, ctx))) is not None:
                children[c.name] = child
        while waiting or running:
            while ready := [c for c in waiting if all(dep in statuses for dep in c.needs)]:
                for c in ready:
                    waiting.remove(c)
                    moot = _moot(c, statuses, skip)
                    if moot is not None:
                        ctx.decide(c.name, moot)
                        if c.name in children:
                            children.pop(c.name).cancel()
                        continue
                    if c.name in children:  # it takes no place among the threads
                        waited.append(children.pop(c.name))
                        thread = threading.Thread(target=wait_for, args=(c, waited[-1]))
                    else:
                        thread = threading.Thread(target=work, args=(c, slots.ask()))
                    thread.daemon, thread.name = True, f"pq check {c.name}"
                    threads.append(thread)
                    threads[-1].start()
                    running += 1
            if not running:
                if waiting:  # `check` registers a check only after the ones it needs
                    raise AssertionError(f"checks waiting on nothing: {waiting}")
                break
            endings = [ended.get()]  # and every other ending already there, as one batch
            while not ended.empty():
                endings.append(ended.get_nowait())
            for c, outcome in endings:
                running -= 1
                _record(ctx, c, outcome, found, notices, errors)
    except BaseException:
        stop.set()
        for child in waited:  # its thread's wait for the answer ends now
            child.kill()
        slots.close()  # a place asked for and never taken (an interrupt just then) blocks none
        with ctx.decided:  # a check waiting on one that will not run now goes on
            for c in checks:
                statuses.setdefault(c.name, NOT_RUN)
            ctx.decided.notify_all()
        raise
    finally:
        for thread in threads:
            if thread.ident is not None:  # started (an interrupt can come in between)
                thread.join()
        for child in children.values():  # never waited for
            child.cancel()
        ctx.slots = None
    for c in checks:  # in order: a check found moot makes the checks resting on it moot
        moot = _moot(c, statuses, skip)
        if moot is not None:
            statuses[c.name] = moot
            found.pop(c.name, None)
            notices.pop(c.name, None)
            errors.pop(c.name, None)
    order = [c.name for c in checks]
    for name in order:
        if name in errors:
            raise errors[name]
    return RunOutcome({n: statuses[n] for n in order},
                      [f for n in order for f in found.get(n, [])],
                      [notices[n] for n in order if n in notices])


def _in_child(c: Check, git: Git, ctx: CheckContext) -> tuple[list[CheckFailure], bool]:
    """A forked check's run, in its child, with a cat-file of its own: its failures (what
    it could not read among them, as `_record` takes it), and `ctx.read_local`, the one
    thing a check tells the context. No check decides a status in the child: one that
    would wait for another's is a mistake, said at once (it would wait for ever)."""
    def cannot_wait(name: str) -> str:
        raise RuntimeError(f"check {c.name!r} forks: it cannot wait for {name!r}")

    git.odb.after_fork()
    ctx.status_of = cannot_wait  # type: ignore[method-assign]
    try:
        return c.run(git, ctx), ctx.read_local
    except PqError as exc:
        return _failed_to_read(c, exc), ctx.read_local


def _failed_to_read(c: Check, exc: PqError) -> list[CheckFailure]:
    return [CheckFailure(c.name, exc.message, exc.hint or "see the message")]


def _record(ctx: CheckContext, c: Check, outcome: list[CheckFailure] | BaseException,
            found: dict[str, list[CheckFailure]], notices: dict[str, str],
            errors: dict[str, Exception]) -> None:
    """Decide check `c` from what its run gave: its failures, or what it raised."""
    if isinstance(outcome, CheckUnavailable):
        notices[c.name] = f"{c.name}: {outcome}"
        ctx.decide(c.name, UNAVAILABLE)
        return
    if isinstance(outcome, PqError):  # it could not read what it needs: a failure
        outcome = _failed_to_read(c, outcome)
    elif isinstance(outcome, Exception):  # a bug: raised at the end unless moot
        errors[c.name], outcome = outcome, []
    elif isinstance(outcome, BaseException):  # Ctrl-C, an exit: at once
        raise outcome
    found[c.name] = outcome
    ctx.decide(c.name, FAILED if outcome or c.name in errors else PASSED)


def _moot(c: Check, statuses: dict[str, str], skip: frozenset[str] = frozenset()
          ) -> str | None:
    """SKIPPED (skipped, or resting on a skipped check: not verified, and not a failure) or
    NOT_RUN (resting on a check that did not pass), judged on the checks it needs or runs
    after that are decided; None: nothing decided so far makes its verdict moot."""
    deps = [dep for dep in (*c.needs, *c.after) if dep in statuses]
    if c.name in skip or "all" in skip or any(statuses[dep] == SKIPPED for dep in deps):
        return SKIPPED
    if any(statuses[dep] not in (PASSED, UNAVAILABLE) for dep in deps):
        return NOT_RUN
    return None


def split_failures(failures: Sequence[CheckFailure]) -> tuple[
        list[CheckFailure], list[CheckFailure], list[CheckFailure], list[CheckFailure],
        list[CheckFailure]]:
    """(series.yaml's own errors: it does not load, a block is malformed; the branch's
    mismatches with its series; policy findings: the audit's errors; what stopped the
    audit: an entry it cannot read, with no rule to acknowledge; the gate stages that
    series.yaml requires for a push and no record shows passed). The first two are the
    consistency problems."""
    consistency = [f for f in failures if f.check not in POLICY_CHECKS]
    policy = [f for f in failures if f.check in POLICY_CHECKS and f.rule]
    stopped = [f for f in failures if f.check in POLICY_CHECKS and not f.rule]
    gate = [f for f in consistency if f.check in GATE_CHECKS and not f.unreadable]
    return ([f for f in consistency if f.unreadable],
            [f for f in consistency if not f.unreadable and f.check not in GATE_CHECKS],
            policy, stopped, gate)
