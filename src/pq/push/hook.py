"""The pre-push hook: which pushed refs pq checks, the result cache, and the hook file.

Deletions and refs whose tip has no series.yaml pass; the rest run `pq.push.checks`, and a
passing commit is remembered in `.git/pq/hook-cache.json`. Nothing here prints.
"""

from __future__ import annotations

import hashlib
import json
import os
import shlex
import subprocess
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pq import __version__
from pq.errors import ConfigError
from pq.git.repo import CommitId, Git, clean_env

HOOK_NAME = "pre-push"
CHAINED_SUFFIX = ".pre-pq"
REPLACED_SUFFIX = ".replaced-by-pq"  # a foreign hook that `install --force` set aside
MARKER = "# pq-hook: pre-push"
CACHE_FILE = "hook-cache.json"
CACHE_ENTRIES = 256
SKIP_ENV = "PQ_SKIP"


@dataclass(frozen=True)
class RefUpdate:
    """One line of git's pre-push input."""

    local_ref: str
    local_sha: str
    remote_ref: str
    remote_sha: str

    @property
    def is_deletion(self) -> bool:
        return set(self.local_sha) == {"0"}

    @property
    def label(self) -> str:
        local = self.local_ref.removeprefix("refs/heads/")
        remote = self.remote_ref.removeprefix("refs/heads/")
        return local if remote in ("", local) else f"{local} -> {remote}"


def parse_push_lines(data: bytes) -> list[RefUpdate]:
    updates = []
    for raw in data.decode("utf-8", "surrogateescape").splitlines():
        if not raw.strip():
            continue
        parts = raw.split()
        if len(parts) != 4:
            raise ConfigError(f"cannot read git's pre-push input line {raw!r}",
                              hint="expected `<local ref> <local sha> <remote ref> <remote sha>`")
        updates.append(RefUpdate(*parts))
    return updates


def updates_from_env(environ: Mapping[str, str]) -> list[RefUpdate]:
    """The one ref the pre-commit framework hands its pre-push hooks, or HEAD."""
    to_ref = environ.get("PRE_COMMIT_TO_REF", "")
    local = environ.get("PRE_COMMIT_LOCAL_BRANCH", "")
    remote = environ.get("PRE_COMMIT_REMOTE_BRANCH", "")
    from_ref = environ.get("PRE_COMMIT_FROM_REF", "") or "0" * 40
    if to_ref:
        return [RefUpdate(local or to_ref, to_ref, remote, from_ref)]
    if local:  # a new branch with its root commit: pre-commit passes no range
        return [RefUpdate(local, local, remote, from_ref)]
    return [RefUpdate("HEAD", "HEAD", remote, from_ref)]


def parse_skip(value: str | None) -> tuple[frozenset[str], list[str]]:
    """PQ_SKIP's check names, and the names in it that are no check."""
    from pq.push import checks

    names = frozenset(n.strip() for n in (value or "").split(",") if n.strip())
    unknown = sorted(n for n in names if n != "all" and n not in checks.names())
    return names, unknown


# -- running the checks ---------------------------------------------------------------


@dataclass
class RefReport:
    update: RefUpdate
    commit: CommitId | None = None
    state: str = "checked"  # deleted | unmanaged | cached | checked
    statuses: dict[str, str] = field(default_factory=dict)
    failures: list[Any] = field(default_factory=list)  # checks.CheckFailure
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

    @property
    def ok(self) -> bool:
        return all(r.ok for r in self.reports) and not (self.chained and self.chained[1])


@dataclass(frozen=True)
class _Probe:
    commit: CommitId | None
    tree: str | None
    series_blob: str | None


def _probe(git: Git, revs: Sequence[str]) -> list[_Probe]:
    """Commit, tree and series.yaml blob of each rev, in one `cat-file --batch-check`."""
    lines = "".join(f"{r}^{{commit}}\n{r}^{{tree}}\n{r}:series.yaml\n" for r in revs)
    ids = [None if obj is None else obj[0] for obj in git.odb.read_many(lines.splitlines())]
    return [_Probe(CommitId(c) if c else None, t, s)
            for c, t, s in zip(ids[0::3], ids[1::3], ids[2::3])]


def cache_key(probe: _Probe, skip: frozenset[str]) -> str:
    """The commit (history matters: an unexported or reworded commit keeps the tree), its
    tree and series blob, the check list and what of it is installed, and PQ_SKIP."""
    from pq.push import checks

    data = [1, __version__, checks.fingerprint(), probe.commit, probe.tree,
            probe.series_blob, sorted(skip)]
    return hashlib.sha256(json.dumps(data).encode()).hexdigest()


def _load_cache(git: Git) -> list[dict[str, Any]]:
    try:
        data = json.loads((git.pq_dir() / CACHE_FILE).read_bytes())
    except (OSError, ValueError):
        return []
    entries = data.get("passed") if isinstance(data, dict) else None
    return [e for e in entries if isinstance(e, dict)] if isinstance(entries, list) else []


def _store_cache(git: Git, entries: list[dict[str, Any]]) -> None:
    from pq.queue.files import write_atomic

    data = {"version": 1, "passed": entries[-CACHE_ENTRIES:]}
    try:
        write_atomic(git.pq_dir() / CACHE_FILE, (json.dumps(data, indent=1) + "\n").encode())
    except OSError:
        pass  # a cache that cannot be written only costs time


def check_refs(git: Git, updates: Sequence[RefUpdate], skip: frozenset[str],
               use_cache: bool = True) -> list[RefReport]:
    from pq.push import checks

    reports = [RefReport(u) for u in updates]
    live = [r for r in reports if not r.update.is_deletion]
    for r in reports:
        if r.update.is_deletion:
            r.state = "deleted"
    probes = _probe(git, [r.update.local_sha for r in live]) if live else []
    cache = _load_cache(git) if use_cache else []
    known = {e.get("key"): e for e in cache}
    done: dict[str, RefReport] = {}
    dirty = False
    for report, probe in zip(live, probes):
        report.commit = probe.commit
        if probe.commit is None or probe.series_blob is None:
            report.state = "unmanaged"
            continue
        key = cache_key(probe, skip)
        if key in done:  # the same commit pushed to two refs: checked once
            first = done[key]
            report.state, report.statuses, report.failures = first.state, first.statuses, \
                first.failures
            report.notices, report.seconds = first.notices, first.seconds
            continue
        hit = known.get(key)
        if hit is not None:
            report.state = "cached"
            report.statuses = dict(hit.get("statuses") or {})
            report.notices = list(hit.get("notices") or [])
            done[key] = report
            continue
        started = time.monotonic()
        ctx = checks.load_context(git, probe.commit, report.update.local_ref)
        outcome = checks.run_checks(git, ctx, skip)
        report.statuses, report.failures = outcome.statuses, outcome.failures
        report.notices = outcome.notices
        report.seconds = time.monotonic() - started
        done[key] = report
        if outcome.ok and use_cache and _as_predicted(outcome.statuses):
            cache = [e for e in cache if e.get("key") != key]
            cache.append({"key": key, "commit": probe.commit, "statuses": outcome.statuses,
                          "notices": outcome.notices})
            dirty = True
    if dirty:
        _store_cache(git, cache)
    return reports


def _as_predicted(statuses: Mapping[str, str]) -> bool:
    """A check the fingerprint thought installed but that was unavailable is not cached."""
    from pq.push import checks

    return all(statuses.get(c.name) != checks.UNAVAILABLE or not checks.available(c)
               for c in checks.all_checks())


def check_rev(git: Git, rev: str, skip: frozenset[str], use_cache: bool = True) -> RefReport:
    """`pq check REV`: the same checks as the hook, on one commit."""
    commit = git.resolve(rev)
    report = check_refs(git, [RefUpdate(rev, commit, "", "0" * 40)], skip, use_cache)[0]
    if report.state == "unmanaged":
        raise ConfigError(f"{rev} ({commit[:12]}) has no series.yaml: pq does not manage it",
                          hint="`pq init --upstream <ref>` starts a series")
    return report


# -- the hook's entry -------------------------------------------------------------------


def open_for_hook(environ: Mapping[str, str]) -> Git:
    """The repository git is pushing from, opened with git's hook variables scrubbed."""
    git = Git.open(environ.get("GIT_WORK_TREE") or ".")
    given = environ.get("GIT_DIR")
    if given and Path(given).resolve() != git.git_dir.resolve():
        git.close()
        raise ConfigError(f"git pushes from {given}, but pq's hook runs in {git.root}",
                          hint="push from inside the working tree, or `git push --no-verify`")
    return git


def scrub_environment() -> None:
    """Drop GIT_DIR, GIT_INDEX_FILE and friends from this process, as gitio does per call."""
    keep = clean_env()
    for key in list(os.environ):
        if key not in keep:
            del os.environ[key]


def run_chained(path: str, args: Sequence[str], stdin: bytes) -> tuple[str, int] | None:
    """Run the hook `pq hook install --chain` moved aside, with git's input; None if absent."""
    if not os.path.lexists(path):
        return None
    if not os.access(path, os.X_OK):
        return (path, 0)  # git ignores a hook that is not executable; so does pq
    try:
        rc = subprocess.run([path, *args], input=stdin, check=False).returncode
    except OSError as exc:
        raise ConfigError(f"cannot run the chained hook {path}: {exc.strerror}",
                          hint="make it an executable script, or `pq hook uninstall`") from None
    return (path, rc)


def pre_push(remote: str | None, url: str | None, stdin: bytes, environ: Mapping[str, str],
             chain: str | None = None) -> HookResult:
    """What `pq hook run` does: the chained hook first, then the checks of each ref."""
    chained = run_chained(chain, [a for a in (remote, url) if a is not None], stdin) \
        if chain else None
    skip, unknown = parse_skip(environ.get(SKIP_ENV))
    if chained and chained[1]:
        return HookResult([], skip, unknown, chained)
    updates = parse_push_lines(stdin) if remote is not None else updates_from_env(environ)
    scrub_environment()
    with open_for_hook(environ) as git:
        reports = check_refs(git, updates, skip)
    return HookResult(reports, skip, unknown, chained)


# -- what the hook says ------------------------------------------------------------------


def skip_warnings(skip: frozenset[str], unknown: Sequence[str], subject: str) -> list[str]:
    """The warning lines for PQ_SKIP, the same from the hook and from `pq check`."""
    if not skip:
        return []
    what = "every pq check" if "all" in skip else \
        ("the check " if len(skip) == 1 else "the checks ") + ", ".join(sorted(skip))
    lines = [f"pq: WARNING: {SKIP_ENV}={','.join(sorted(skip))}: skipping {what}; "
             f"{subject} is NOT fully verified"]
    if unknown:
        lines.append(f"pq: WARNING: {SKIP_ENV} names no check called {', '.join(unknown)}")
    return lines


def consistent_summary(statuses: dict[str, str], how: str | None) -> str:
    """'series consistent (N checks passed[, M skipped][, how])'."""
    ran = sum(1 for s in statuses.values() if s == "passed")
    skipped = sum(1 for s in statuses.values() if s == "skipped")
    parts = [_n(ran, "check") + " passed"] + ([f"{skipped} skipped"] if skipped else []) + (
        [how] if how else [])
    return f"series consistent ({', '.join(parts)})"


def render(result: HookResult) -> list[str]:
    """The hook's lines for stderr (the entry points print them)."""
    lines: list[str] = []
    if result.chained and result.chained[1]:
        path, rc = result.chained
        return [f"pq: the chained hook {path} failed (exit {rc}); push refused"]
    managed = [r for r in result.reports if r.managed]
    if result.skip and managed:
        lines += skip_warnings(result.skip, result.unknown_skip, "this push")
    for r in managed:
        lines.extend(render_report(r))
    if not result.ok:
        lines.append("pq: push refused; fix the problems above and push again "
                     "(`git push --no-verify` skips pq's hook)")
    return lines


ACK_HINT = ("a finding you reviewed and keep: acknowledge it on the patch's entry in "
            "series.yaml, `acknowledged: [{rule: WA014, reason: \"...\"}]`")


def _n(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def split_failures(failures: Sequence[Any]) -> tuple[list[Any], list[Any]]:
    """(consistency problems: branch vs series, policy findings: the audit's errors)."""
    from pq.push import checks

    policy = [f for f in failures if f.check in checks.POLICY_CHECKS]
    return [f for f in failures if f.check not in checks.POLICY_CHECKS], policy


def render_report(r: RefReport) -> list[str]:
    where = f"{r.update.label} {(r.commit or '')[:12]}"
    lines = [f"pq: notice: {n}" for n in r.notices]
    if r.ok:
        how = "cached" if r.state == "cached" else f"{r.seconds:.1f} s"
        lines.append(f"pq: {where}: {consistent_summary(r.statuses, how)}")
        return lines
    consistency, policy = split_failures(r.failures)
    if consistency:
        lines.append(f"pq: {where}: the branch does not match its series "
                     f"({_n(len(consistency), 'problem')}):")
        lines.extend(_failure_lines(consistency))
    else:
        lines.append(f"pq: {where}: the branch matches its series")
    if policy:
        lines.append(f"pq: {where}: {_n(len(policy), 'policy finding')} of the workaround "
                     "audit (`pq audit workarounds` shows them all):")
        lines.extend(_failure_lines(policy))
        lines.append(f"pq:   {ACK_HINT}")
    return lines


def _failure_lines(failures: Sequence[Any]) -> list[str]:
    lines = []
    for f in failures:
        lines.append(f"pq:   [{f.check}] {f.message}")
        lines.append(f"pq:   {' ' * (len(f.check) + 2)} fix: {f.fix_command}")
    return lines


# -- installing the hook -----------------------------------------------------------------


def script(python: str | None) -> str:
    """The hook script; `hooks/pre-push` in pq's source is this with no interpreter."""
    return f"""#!/bin/sh
{MARKER} (written by `pq hook install`; `pq hook uninstall` removes it)
# Refuses a push whose branch, series.yaml and patches/ disagree: the same checks as
# `pq check`. `git push --no-verify` skips it; PQ_SKIP=gate (or all) skips checks, loudly.
PQ_PYTHON={shlex.quote(python or '')}
if [ -e "$0{CHAINED_SUFFIX}" ]; then
    set -- --chain "$0{CHAINED_SUFFIX}" "$@"
fi
if [ -n "$PQ_PYTHON" ] && [ -x "$PQ_PYTHON" ]; then
    exec "$PQ_PYTHON" -m pq hook run "$@"
fi
if command -v pq >/dev/null 2>&1; then
    exec pq hook run "$@"
fi
if command -v python3 >/dev/null 2>&1; then
    exec python3 -m pq hook run "$@"
fi
echo "pq: pre-push hook: pq is not installed (install it, or \\`git push --no-verify\\`)" >&2
exit 1
"""


def hooks_dir(git: Git) -> Path:
    """Where git looks for hooks: core.hooksPath when set, else .git/hooks."""
    path = Path(git.text("rev-parse", "--git-path", "hooks").strip())
    return path if path.is_absolute() else git.root / path


def is_ours(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            return MARKER.encode() in f.read(4096)
    except OSError:
        return False


@dataclass(frozen=True)
class InstallResult:
    path: Path
    action: str  # installed | updated | replaced
    chained: Path | None
    set_aside: Path | None = None  # a foreign hook moved to pre-push.replaced-by-pq


def install(git: Git, *, force: bool = False, chain: bool = False,
            python: str | None = None) -> InstallResult:
    path = hooks_dir(git) / HOOK_NAME
    chained = path.with_name(HOOK_NAME + CHAINED_SUFFIX)
    replaced = path.with_name(HOOK_NAME + REPLACED_SUFFIX)
    action = "installed"
    set_aside: Path | None = None
    if os.path.lexists(path):
        if path.is_dir():
            raise ConfigError(f"{path} is a directory", hint="move it away first")
        if is_ours(path):
            action = "updated"
        elif chain:
            if os.path.lexists(chained) and not force:
                raise ConfigError(f"{chained} already exists",
                                  hint="remove it, or pass --force to replace it")
            if os.path.lexists(chained):
                set_aside = _set_aside(chained, replaced)
            os.replace(path, chained)
        elif force:
            action = "replaced"
            set_aside = _set_aside(path, replaced)
        else:
            raise ConfigError(f"{path} exists and was not written by pq",
                              hint="`pq hook install --chain` keeps it and runs it first; "
                                   "`--force` replaces it")
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{HOOK_NAME}.pq-tmp")
    tmp.write_text(script(python))
    os.chmod(tmp, 0o755)
    os.replace(tmp, path)
    result = InstallResult(path, action, chained if os.path.lexists(chained) else None,
                           set_aside)
    if set_aside is not None:
        from pq.oplog.txn import log_note

        log_note(git, "pq hook install --force" + (" --chain" if chain else ""),
                 f"replaced {set_aside}, which pq did not write; kept as {replaced.name}")
    return result


def _set_aside(hook: Path, replaced: Path) -> Path:
    """Move a hook pq did not write out of the way, never deleting it; returns where it was."""
    if os.path.lexists(replaced):
        replaced.unlink()  # an older one set aside: the log record names it
    os.replace(hook, replaced)
    return hook


@dataclass(frozen=True)
class UninstallResult:
    path: Path
    removed: bool
    restored: bool
    foreign: bool
    restored_from: str | None = None


def uninstall(git: Git) -> UninstallResult:
    path = hooks_dir(git) / HOOK_NAME
    chained = path.with_name(HOOK_NAME + CHAINED_SUFFIX)
    if not os.path.lexists(path):
        return UninstallResult(path, False, False, False)
    if not is_ours(path):
        return UninstallResult(path, False, False, True)
    os.unlink(path)
    restored = False
    restored_from = None
    for kept in (chained, path.with_name(HOOK_NAME + REPLACED_SUFFIX)):
        if os.path.lexists(kept):
            os.replace(kept, path)
            restored, restored_from = True, kept.name
            break
    return UninstallResult(path, True, restored, False, restored_from)


def exit_code(result: HookResult) -> int:
    """0 lets the push go; the chained hook's own code, or 1, refuses it."""
    if result.chained and result.chained[1]:
        return result.chained[1]
    return 0 if result.ok else 1
