"""The pre-push hook's checking: which pushed refs pq checks, and the result cache.

Deletions, pq's own refs (`refs/pq/*`, which `git push --mirror` sends too) and refs
whose tip has no series.yaml pass; the rest run the checks of `pq.push.registry`, and a
passing commit is remembered in `.git/pq/hook-cache.json`. Nothing here prints:
`pq.cli.render_hook` says what the result means."""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import time
from collections.abc import Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pq import __version__
from pq.errors import ConfigError
from pq.git import process
from pq.git.gateway import clean_env, worktree_of
from pq.git.hooks import HookRun, ignored_hook
from pq.git.objects import CommitId
from pq.git.repo import Git
from pq.push.install import CHAINING, HOOK_NAME
from pq.push.refs import (
    SKIP_ENV,
    RefUpdate,
    parse_push_lines,
    parse_skip,
    tracked_ref,
    updates_from_env,
)

if TYPE_CHECKING:
    from pq.push.registry import CheckFailure

CACHE_FILE = "hook-cache.json"
CACHE_ENTRIES = 256


# -- running the checks ---------------------------------------------------------------


@dataclass
class RefReport:
    update: RefUpdate
    commit: CommitId | None = None
    state: str = "checked"  # deleted | unmanaged | unmanaging | cached | checked
    statuses: dict[str, str] = field(default_factory=dict)
    failures: list[CheckFailure] = field(default_factory=list)
    notices: list[str] = field(default_factory=list)
    seconds: float = 0.0

    @property
    def managed(self) -> bool:
        return self.state in ("cached", "checked")

    @property
    def ok(self) -> bool:
        return not self.failures


@dataclass
class HookResult:
    reports: list[RefReport]
    skip: frozenset[str]
    unknown_skip: list[str]
    chained: tuple[str, int] | None = None
    ignored_hooks: list[str] = field(default_factory=list)  # (git's hint: git/hooks.py)

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.reports) and not (self.chained and self.chained[1])

    @property
    def exit_code(self) -> int:
        """0 lets the push go; the chained hook's own code (128 + N: killed by signal N,
        as a shell says), or 1, refuses it."""
        if self.chained and (rc := self.chained[1]):
            return rc if rc > 0 else 128 - rc
        return 0 if self.ok else 1


@dataclass(frozen=True)
class _Probe:
    commit: CommitId | None
    tree: str | None
    series_blob: str | None


def _probe(git: Git, revs: Sequence[str]) -> list[_Probe]:
    """Commit, tree and series.yaml blob of each rev, in one `cat-file --batch-check`."""
    lines = "".join(f"{r}^{{commit}}\n{r}^{{tree}}\n{r}:series.yaml\n" for r in revs)
    found = git.odb.read_many(lines.splitlines())
    ids = [None if obj is None else obj[0] for obj in found]
    # A series.yaml that is a folder or a submodule is no series: the ref is unmanaged.
    blobs = [obj[0] if obj is not None and obj[1] == "blob" else None for obj in found[2::3]]
    return [_Probe(CommitId(c) if c else None, t, s)
            for c, t, s in zip(ids[0::3], ids[1::3], blobs)]


def cache_key(probe: _Probe, skip: frozenset[str], gate_notes: str | None = None) -> str:
    """The commit (history matters: an unexported or reworded commit keeps the tree), its
    tree and series blob, the check list and what of it is installed, pq's own code (an
    upgrade that keeps the version number may judge otherwise), PQ_SKIP, and the gate's
    records as this repository has them (`gate_notes`: their ref's tip; the gate check
    reads them, and a record removed or replaced may no longer cover the commit)."""
    from pq import installed
    from pq.push import registry

    data = [2, __version__, installed.code_digest().hex(), registry.fingerprint(), probe.commit,
            probe.tree, probe.series_blob, sorted(skip), gate_notes]
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()


def _gate_notes(git: Git) -> str | None:
    """The tip of the gate records' notes ref, or None without one."""
    from pq.gate import NOTES_REF

    found = git.odb.read_many([NOTES_REF])[0]
    return found[0] if found is not None else None


def _load_cache(git: Git) -> list[dict[str, Any]]:
    try:
        data = json.loads((git.pq_dir() / CACHE_FILE).read_bytes())
    except (OSError, ValueError, RecursionError):
        return []
    entries = data.get("passed") if isinstance(data, dict) else None
    return [e for e in entries if _well_formed(e)] if isinstance(entries, list) else []


def _well_formed(entry: object) -> bool:
    """An entry of the shape pq writes (any other is a miss: the checks run again)."""
    return (isinstance(entry, dict) and isinstance(entry.get("key"), str)
            and isinstance(entry.get("statuses"), dict)
            and all(isinstance(k, str) and isinstance(v, str)
                    for k, v in entry["statuses"].items())
            and isinstance(entry.get("notices", []), list)
            and all(isinstance(n, str) for n in entry.get("notices", [])))


def _store_cache(git: Git, entries: list[dict[str, Any]]) -> None:
    from pq.atomic import write_atomic

    data = {"version": 1, "passed": entries[-CACHE_ENTRIES:]}
    with suppress(OSError):  # a cache that cannot be written only costs time
        write_atomic(git.pq_dir() / CACHE_FILE, (json.dumps(data, indent=1) + "\n").encode(),
                     durable=False)


def _pq_own(update: RefUpdate) -> bool:
    """Pushed to pq's own namespace (`--mirror` sends it so); one of them pushed to a
    branch (`refs/pq/orig-head/x:refs/heads/x`) is checked as any branch."""
    return update.remote_ref.startswith("refs/pq/")


def check_refs(git: Git, updates: Sequence[RefUpdate], skip: frozenset[str],
               use_cache: bool = True) -> list[RefReport]:
    """Check each pushed ref; `git` reads commits as stored (`_as_stored`: its callers,
    `open_for_hook` and `check_rev`, set that up before their first read)."""
    from pq.push import registry

    reports = [RefReport(u) for u in updates]
    live = []
    for r in reports:
        if r.update.is_deletion:
            r.state = "deleted"
        elif _pq_own(r.update):  # `git push --mirror`: pq's bookkeeping (the tip a rebase
            r.state = "unmanaged"  # or apply replaced, say), not a branch of the series
        else:
            live.append(r)
    probes = _probe(git, [r.update.local_sha for r in live]) if live else []
    gate_notes = _gate_notes(git) if live else None
    cache = _load_cache(git) if use_cache else []
    known = {e.get("key"): e for e in cache}
    done: dict[str, RefReport] = {}  # (a commit pushed to two refs: checked once)
    dirty = False
    for report, probe in zip(live, probes):
        report.commit = probe.commit
        if probe.commit is None or probe.series_blob is None:
            report.state = "unmanaged"
            continue
        key = cache_key(probe, skip, gate_notes)
        if key in done:
            first = done[key]
            report.state, report.statuses, report.failures, report.notices, report.seconds = \
                first.state, first.statuses, first.failures, first.notices, first.seconds
            continue
        hit = known.get(key)
        if hit is not None and _upstream_moved(git, hit):
            hit = None  # the base check's verdict rests on where the upstream ref is
        if hit is not None:
            report.state = "cached"
            report.statuses = dict(hit.get("statuses") or {})
            report.notices = list(hit.get("notices") or [])
            done[key] = report
            continue
        started = time.monotonic()
        ctx = registry.load_context(git, probe.commit, report.update.local_ref)
        ctx.use_export_cache = use_cache
        outcome = registry.run_checks(git, ctx, skip)
        report.statuses, report.failures = outcome.statuses, outcome.failures
        report.notices = outcome.notices
        report.seconds = time.monotonic() - started
        done[key] = report
        if outcome.ok and use_cache and _as_predicted(outcome.statuses) and not ctx.read_local:
            cache = [e for e in cache if e.get("key") != key]
            ref = ctx.queue.series.upstream_ref if ctx.queue is not None else None
            cache.append({"key": key, "commit": probe.commit, "statuses": outcome.statuses,
                          "notices": outcome.notices,
                          "upstream": [ref, git.try_resolve(ref) if ref else None]})
            dirty = True
    if dirty:
        _store_cache(git, cache)
    _refuse_taking_series_off(git, [r for r in live if r.state == "unmanaged"])
    return reports


def _refuse_taking_series_off(git: Git, reports: list[RefReport]) -> None:
    """A tip with no series.yaml pushed over a remote ref whose tip (known here) has one:
    a stopped rebase's commit, a branch pushed to the wrong name. It would take the series
    off that ref, which no check of the pushed commit can see; refused (exit 1)."""
    from pq.push.registry import CheckFailure

    over = [r for r in reports if r.update.remote_sha.strip("0")]  # not a new remote ref
    for report, probe in zip(over, _probe(git, [r.update.remote_sha for r in over])):
        if probe.series_blob is None:
            continue
        remote = report.update.remote_ref.removeprefix("refs/heads/")
        report.state = "unmanaging"
        report.failures = [CheckFailure(
            "series", f"the pushed commit has no series.yaml, but {remote} on the remote "
                      f"({report.update.remote_sha[:12]}) has one: this push would take the "
                      "series off it",
            "push the branch that carries the series (a stopped `pq rebase` has none until "
            "it ends: `pq status`); to take pq off that branch on purpose, `git push "
            "--no-verify`")]


def _upstream_moved(git: Git, entry: Mapping[str, Any]) -> bool:
    """Whether the upstream ref a cached verdict saw has moved since (the base check finds
    upstream commits the branch holds past its recorded base through it); an entry that
    did not record it counts as moved."""
    seen = entry.get("upstream")
    if not (isinstance(seen, list) and len(seen) == 2):
        return True
    ref, sha = seen
    return isinstance(ref, str) and bool(ref) and git.try_resolve(ref) != sha


def _as_predicted(statuses: Mapping[str, str]) -> bool:
    """A check the fingerprint thought installed but that was unavailable is not cached;
    the base check is (unavailable in a clone without upstream.ref: the entry records that
    ref, and `_upstream_moved` drops it once the ref is there)."""
    from pq.push import registry

    return all(statuses.get(c.name) != registry.UNAVAILABLE or not registry.available(c)
               or c.name == "base" for c in registry.all_checks())


def _as_stored(git: Git) -> None:
    """Read commits as stored, as a push sends them, not as a `git replace` or a graft
    (`.git/info/grafts`) shows them."""
    if git.env.get("GIT_NO_REPLACE_OBJECTS") != "1":
        git.env["GIT_NO_REPLACE_OBJECTS"] = "1"
        git.env["GIT_GRAFT_FILE"] = os.devnull
        git.close()  # an object reader already started starts again without them


def check_rev(git: Git, rev: str, skip: frozenset[str], use_cache: bool = True) -> RefReport:
    """`pq check REV`: the same checks as the hook, on one commit."""
    _as_stored(git)
    commit = git.resolve(rev)
    report = check_refs(git, [RefUpdate(rev, commit, "", "0" * 40)], skip, use_cache)[0]
    if report.state == "unmanaged":
        from pq.rebase import state as rs  # (not on the hook's short path)

        stopped = rs.load(git) if rev == "HEAD" else None
        if stopped is not None and git.other_worktree(stopped.worktree) is None:
            raise ConfigError(f"HEAD ({commit[:12]}) is a stopped pq rebase's commit, with no "
                              "series.yaml until the rebase ends",
                              hint="`pq check <branch>` checks the branch as it was; `pq "
                                   "status` says where the rebase stands")
        raise ConfigError(f"{rev} ({commit[:12]}) has no series.yaml: pq does not manage it",
                          hint="`pq init --upstream <ref>` starts a series")
    return report


# -- the hook's entry -------------------------------------------------------------------


def open_for_hook(environ: Mapping[str, str]) -> Git:
    """The repository git is pushing from, opened with git's hook variables scrubbed. A push
    typed outside the working tree (`git --git-dir=fork/.git push`) runs the hook where it
    was typed: the repository is GIT_DIR's, and its working tree the one that git dir
    belongs to (the checks read commits, never the working tree's files)."""
    given = environ.get("GIT_DIR")
    where = environ.get("GIT_WORK_TREE") or (worktree_of(Path(given)) if given else ".")
    try:
        git = Git.open(where, bare=True)  # a bare repository's push: its commits are checked
    except ConfigError:
        if not given:
            raise
        # A work tree of GIT_DIR's own elsewhere (`git --git-dir=X --work-tree=Y push`, a
        # dotfiles checkout): the checks read commits only, so GIT_DIR is the repository.
        git = Git.open(given, bare=True)
    _as_stored(git)
    if given and Path(given).resolve() != git.git_dir.resolve():
        git.close()
        raise ConfigError(f"git pushes from {given}, but pq's hook runs in {git.root}",
                          hint="push from inside the working tree, or `git push --no-verify`")
    return git


def scrub_environment() -> None:
    """Drop GIT_DIR, GIT_INDEX_FILE and friends from this process, as gitio does per call."""
    for key in set(os.environ) - set(clean_env()):
        del os.environ[key]


def run_chained(path: str, args: Sequence[str], stdin: bytes) -> HookRun | None:
    """Run the hook `pq hook install --chain` moved aside, with git's input; None if absent."""
    if not os.path.lexists(path):
        return None
    if not os.access(path, os.X_OK):  # git ignores a hook that is not executable; so does pq
        return HookRun(0, path)  # (pre_push asks advice.ignoredHook once git is open)
    try:  # (a hook manager pq's hook was set aside for may run pq's again: it chains none)
        return HookRun(process.passthrough(_as_git_runs_it(path, args), input=stdin,
                                           env={**os.environ, CHAINING: "1"}))
    except OSError as exc:
        raise ConfigError(f"cannot run the chained hook {path}: {exc.strerror}",
                          hint="make it an executable script, or `pq hook uninstall`") from None


_SHELLS = ("sh", "dash", "bash", "zsh", "ksh", "ash")


def _as_git_runs_it(path: str, args: Sequence[str]) -> list[str]:
    """The command that runs the chained hook with the `$0` git gives a hook (its own
    folder's `pre-push`, not `pre-push.pre-pq`): hook managers find the user's script by
    that name (husky: `basename "$0"`). A shell script is sourced by its shell with `$0`
    set so (a text file without `#!` by sh, as git runs it); any other program, and a link
    (which finds its files through `$0`), is run as it is."""
    if os.path.islink(path):  # a link finds its own files through `$0`: run it as it is
        return [path, *args]
    try:
        with open(path, "rb") as f:
            first = f.readline(256)
    except OSError:
        return [path, *args]
    if first.startswith(b"#!"):
        words = first[2:].decode("utf-8", "replace").split()
    else:  # no `#!`: git runs a text file through sh; a binary program is run as it is
        words = ["/bin/sh"] if first and b"\0" not in first else []
    if words and os.path.basename(words[0]) == "env" and len(words) > 1:
        words = words[1:]
    if not words or os.path.basename(words[0]) not in _SHELLS:
        return [path, *args]
    name = os.path.join(os.path.dirname(path), HOOK_NAME)
    return [words[0] if "/" in words[0] else shutil.which(words[0]) or words[0], *words[1:],
            "-c", 'f=$1; shift; . "$f"', name, path, *args]


def _remote_tip(git: Git, environ: Mapping[str, str], update: RefUpdate) -> RefUpdate:
    """The pre-commit framework's update with the remote ref's tip as far as this
    repository knows it: a configured remote's remote-tracking ref (none: a new branch);
    pushing to a URL or a path, PRE_COMMIT_FROM_REF, which pre-commit sets to the remote
    tip when git has it (and leaves unset for a new branch)."""
    ref = tracked_ref(environ, update)
    if ref is None:
        return update
    if git.has_refs_under(f"refs/remotes/{environ.get('PRE_COMMIT_REMOTE_NAME')}/"):
        return replace(update, remote_sha=git.try_resolve(ref) or update.remote_sha)
    return replace(update, remote_sha=environ.get("PRE_COMMIT_FROM_REF") or update.remote_sha)


def pre_push(remote: str | None, url: str | None, stdin: bytes, environ: Mapping[str, str],
             chain: str | None = None) -> HookResult:
    """What `pq hook run` does: the chained hook first (unless this runs from it: pq's
    hook, run in turn by a hook manager pq's runs), then the checks of each ref."""
    chain = None if os.environ.get(CHAINING) else chain
    ran = run_chained(chain, [a for a in (remote, url) if a is not None], stdin) if chain \
        else None
    chained = (chain, ran.code) if chain and ran else None
    skip, unknown = parse_skip(environ.get(SKIP_ENV))
    if chained and chained[1]:
        return HookResult([], skip, unknown, chained)
    updates = parse_push_lines(stdin) if remote is not None else updates_from_env(environ)
    scrub_environment()
    with open_for_hook(environ) as git:
        if remote is None:
            updates = [_remote_tip(git, environ, u) for u in updates]
        reports = check_refs(git, updates, skip)
        ignored = ignored_hook(ran.ignored, git) if ran and ran.ignored else None
    return HookResult(reports, skip, unknown, chained, [ignored] if ignored else [])
