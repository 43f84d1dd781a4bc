"""The gate as other commands use it: `run_gate`, `read_status`, `record_ok`, `load_config`.

`run_gate` reads the gate configuration from the series committed at the tip, reuses a
passing record of the same tree and environment, or runs the stages in a throwaway worktree
(restoring reusable stages whose inputs did not change) and records the result as a git
note. It never changes a ref besides refs/notes/pq-gate.
The reports are data; `pq.cli.render_gate` says what they mean.
"""

from __future__ import annotations

import os
import time
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pq import __version__
from pq.errors import ConfigError, PqError
from pq.gate import NOTES_REF, ccache, inputs, probe, record, reuse, runner, symbols
from pq.gate import result as R
from pq.gate.config import GateConfig, Stage, parse
from pq.git.repo import Git
from pq.queue import files as queuefiles


@dataclass
class GateReport:
    """The outcome of one `pq gate`: status, per-stage results, and whether it was reused."""

    tip: str | None
    tree: str | None
    status: str
    stages: list[R.StageResult] = field(default_factory=list)
    fingerprint: dict[str, Any] | None = None
    cached: bool = False
    cached_from: str | None = None
    time: str | None = None
    partial: bool = False
    log_dir: str | None = None
    error: PqError | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        if self.status == R.GATE_ERROR:
            return self.error.exit_code if self.error is not None else 2
        return 1 if self.status == R.GATE_FAILED else 0

    @property
    def headline(self) -> str:
        if self.error is not None:
            return self.error.render()
        return R.describe(self.status, self.stages)

    def to_json(self) -> dict[str, Any]:
        stages = []
        for s in self.stages:
            item = s.to_record()
            item["display"] = s.display()
            item["log"] = s.log
            if s.failed:
                item["tail"] = s.tail
            stages.append(item)
        return {
            "tip": self.tip,
            "tree": self.tree,
            "status": self.status,
            "summary": self.headline,
            "exit_code": self.exit_code,
            "cached": self.cached,
            "cached_from": self.cached_from,
            "partial": self.partial,
            "time": self.time,
            "owed": R.owed_names(self.stages),
            "stages": stages,
            "fingerprint": self.fingerprint,
            "log_dir": self.log_dir,
            "error": self.error.render() if self.error is not None else None,
            "warnings": self.warnings,
        }


@dataclass(frozen=True)
class _Plan:
    tip: str
    tree: str
    config: GateConfig
    stages: tuple[Stage, ...]
    interpreter: probe.Interpreter
    gpu: bool
    fingerprint: dict[str, Any]
    base: str  # the series' recorded upstream base, whose files `base:` inputs name
    queue_paths: tuple[str, ...]  # pq's own files: never a default input of the build
    worktree: Path | None  # made early to ask a launcher which interpreter it runs there
    settings: dict[str, str]  # git config pq.gate.* (cache sizes)


def run_gate(git: Git, *, stages: list[str] | tuple[str, ...] | None = None,
             force: bool = False, progress: runner.Progress | None = None,
             python: str | None = None) -> GateReport:
    """Run (or reuse) the gate for HEAD. Configuration problems come back as status `error`
    with exit code 2; the report carries the ConfigError."""
    with ExitStack() as held:  # the worktree, once made, and the log folder
        return _run_gate(git, held, stages, force, progress, python)


def _run_gate(git: Git, held: ExitStack, stages: list[str] | tuple[str, ...] | None,
              force: bool, progress: runner.Progress | None, python: str | None
              ) -> GateReport:
    try:
        plan = _plan(git, held, stages, python)
    except ConfigError as exc:
        return GateReport(None, None, R.GATE_ERROR, error=exc)
    names = tuple(s.name for s in plan.stages)
    partial = names != plan.config.names
    uncommitted = ([f"uncommitted changes are not part of this result: the gate ran on the "
                    f"committed tip {plan.tip[:12]}"] if git.status_porcelain() else [])
    if not force:
        hit = record.find_cached(git, plan.tip, plan.tree, plan.fingerprint, names)
        if hit is not None:
            cached = _cached_report(plan, names, partial, *hit)
            cached.warnings.extend(uncommitted)
            return cached
    settings = plan.settings
    try:
        cache_bytes, ccache_size = _sizes(settings)
    except ConfigError as exc:
        return GateReport(plan.tip, plan.tree, R.GATE_ERROR, error=exc)
    entries = git.ls_tree(plan.tip)
    sources = [p for _, kind, _, p in entries if kind == "blob"
               and p.lower().endswith(symbols.SOURCE_SUFFIXES)]
    path_env = runner.base_env(plan.interpreter.path)["PATH"]
    # Every configured stage's key: one run with --stage still keys on the stages before.
    upstream = (git.ls_tree(plan.base) if inputs.reads_base(plan.config.stages)
                and git.try_resolve(plan.base) else [])
    keys = inputs.stage_keys(plan.config.stages, entries, plan.fingerprint,
                             plan.interpreter.path, upstream, plan.queue_paths)
    # A pattern that names no file (a typo, a file renamed): the stage is not reused.
    missing = {s.name: found for s in plan.stages if s.name in keys
               and (found := inputs.unmatched(s, entries, upstream))}
    keys = {name: key for name, key in keys.items() if name not in missing}
    reusable = [s.name for s in plan.config.stages if s.reusable]
    cache = reuse.StageCache(git.pq_dir() / reuse.CACHE_DIR, keys, cache_bytes,
                             lookup=not force, tracked={p: obj for _, kind, obj, p in entries
                                                        if kind == "blob"},
                             executable=[p for mode, _, _, p in entries if mode == "100755"],
                             before={n: reusable[:i] for i, n in enumerate(reusable)})
    logs = held.enter_context(runner.log_folder(git, plan.tip))
    worktree = plan.worktree or held.enter_context(runner.throwaway_worktree(git, plan.tip))
    wiring = ccache.wire(git.pq_dir(), worktree, path_env, dict(os.environ), ccache_size)
    ctx = runner.RunContext(worktree, plan.tip, plan.interpreter.path, logs, plan.gpu,
                            wiring.env)
    refs = _refs(git)  # the user's: a stage's worktree shares them (and the config)
    results = runner.run_stages(ctx, plan.stages, progress=progress,
                                check_symbols=_symbol_checker(plan.interpreter, sources),
                                cache=cache)
    moved = _refs_moved(refs, _refs(git))
    held.close()  # the worktree goes, the log folder is free: before the record is written
    status = R.overall(results)
    report = GateReport(plan.tip, plan.tree, status, results, plan.fingerprint,
                        time=_now(), partial=partial, log_dir=str(logs))
    report.warnings.extend(
        f"stage {name}: `inputs` {'pattern' if len(found) == 1 else 'patterns'} "
        f"{', '.join(repr(p) for p in found)} {'names' if len(found) == 1 else 'name'} no file "
        f"of {plan.tip[:12]}, so the stage is not reused (it ran): fix the pattern in "
        "series.yaml" for name, found in missing.items())
    report.warnings.extend(cache.notes)
    if not wiring.on and any(s.inputs and s.status != R.REUSED for s in results):
        report.warnings.append(wiring.note)
    report.warnings.extend(uncommitted)
    if moved:
        report.warnings.append(
            f"the repository's refs changed while the stages ran (their worktree shares "
            f"them): {', '.join(moved[:5])}{' ...' if len(moved) > 5 else ''}; a stage's git "
            "commands, or work done meanwhile: check them (`git reflog`)")
    try:
        record.save(git, plan.tip, _record(report))
    except PqError as exc:
        report.warnings.append(f"result not recorded in {NOTES_REF}: {exc.render()}")
    runner.prune_logs(git)
    return report


def _refs(git: Git) -> dict[str, str]:
    return {name: oid for name, _, oid, _ in git.list_refs() if name != NOTES_REF}


def _refs_moved(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """`refs/heads/x 1234abcd -> 5678ef90` (`-` where it was not or is no more)."""
    return [f"{name} {before.get(name, '-')[:12]} -> {after.get(name, '-')[:12]}"
            for name in sorted({*before, *after}) if before.get(name) != after.get(name)]


def _plan(git: Git, held: ExitStack, stages: list[str] | tuple[str, ...] | None,
          python: str | None) -> _Plan:
    tip = git.head()
    tree = git.commit(tip).tree
    queue = queuefiles.read_tree(git, tip)
    if queue is None:
        from pq.rebase import state as rs

        stopped = rs.load(git)
        if stopped is not None and git.other_worktree(stopped.worktree) is None:
            # HEAD is the stack so far, without the queue: `pq init` would be refused too
            raise ConfigError(f"HEAD ({tip[:12]}) is a stopped pq rebase's commit, with no "
                              "series.yaml until the rebase ends", hint="finish it (`pq rebase "
                              "--continue`) or end it (`pq rebase --abort`), then `pq gate`; "
                              "`pq status` says where it stands")
        raise ConfigError(f"HEAD ({tip[:12]}) has no committed series.yaml, so there is no "
                          "gate configuration", hint="run `pq init` and commit series.yaml")
    config = parse(queue.series, tip[:12])
    selected = config.select(list(stages) if stages else None)
    spec = python or config.python or "python3"
    path = probe.find_interpreter(spec, git.root)
    if path is None:
        there = "/" in spec and os.path.isfile(spec)  # (`/etc/passwd`, a script not +x)
        message = f"python interpreter {spec!r} " + ("is no executable file" if there
                                                     else "not found")
        hint = "install it, or point gate.python in series.yaml (or --python) at one"
        if python is None and config.python is not None:
            raise queue.series.error(("gate", "python"), message, hint)
        raise ConfigError(message + (" (from --python)" if python else " (python3 on PATH)"),
                          hint=hint)
    worktree = None
    if probe.is_launcher(path):  # a pyenv shim: what it runs depends on where, and on env
        worktree = held.enter_context(runner.throwaway_worktree(git, tip))
        path = probe.launched(path, worktree, runner.base_env(path))
    path_env = runner.base_env(path)["PATH"]
    found = probe.environment(path, path_env, git.pq_dir() / "gate" / probe.PROBE_FILE)
    # The caller's CC, CFLAGS, ... and the compilers on PATH decide a build as much as the
    # toolchain does.
    # So do the settings that decide the bytes the worktree's checkout writes.
    # One read of git's configuration: the gate's own settings and the checkout's.
    git_config = git.config_matching(rf"^pq\.gate\.|{inputs.CHECKOUT_CONFIG}")
    checkout = inputs.checkout_settings(git.common_dir, git_config, os.environ)
    # And which interpreter runs the stages: two virtualenvs of one Python differ in packages.
    fingerprint = {**found.fingerprint, "build_env": inputs.build_env(os.environ),
                   "compilers": inputs.compilers(path_env, os.environ), "checkout": checkout,
                   "interpreter": inputs.short_digest(found.interpreter.path),
                   "python_env": inputs.short_digest(
                       {k: os.environ.get(k) for k in inputs.PYTHON_ENV})}
    return _Plan(tip, tree, config, selected, found.interpreter, found.gpu, fingerprint,
                 queue.series.base, queue.series.queue_paths, worktree,
                 {k: v for k, v in git_config.items() if k.startswith("pq.gate.")})


def _sizes(settings: dict[str, str]) -> tuple[int, str]:
    """`git config pq.gate.cacheSize` in bytes (`2G`, `500M`, bytes; default 2 GiB) and
    `pq.gate.ccacheSize` as ccache takes it (default 2G); a value that is no size is a
    ConfigError naming the setting (ccache would fail every compile far from the cause)."""
    cache = settings.get("pq.gate.cachesize")
    size = reuse.DEFAULT_MAX_BYTES if cache is None else reuse.parse_size(cache)
    if size is None:
        raise ConfigError(f"git config pq.gate.cacheSize: {cache!r} is not a size",
                          hint="give bytes or a number with a k, M, G or T suffix: "
                               "`git config pq.gate.cacheSize 10G`")
    compiler = settings.get("pq.gate.ccachesize", ccache.DEFAULT_MAX_SIZE)
    if not ccache.valid_size(compiler):
        raise ConfigError(f"git config pq.gate.ccacheSize: {compiler!r} is not a size ccache "
                          "takes", hint="give a number with an optional k, M, G or T "
                                        "suffix, or Ki, Mi, Gi, Ti for binary units: "
                                        "`git config pq.gate.ccacheSize 5G`")
    return size, compiler


def _symbol_checker(interp: probe.Interpreter, sources: list[str]) -> runner.SymbolCheck:
    def check(worktree: Path, env: dict[str, str],
              before: dict[str, tuple[int, int, int]]) -> list[str]:
        built = symbols.new_objects(worktree, before)
        if not built:
            return []
        own = [p for p in (interp.facts.get("executable"), interp.facts.get("libpython"))
               if isinstance(p, str)]
        found = symbols.check(worktree, built, env, provided=symbols.exported_symbols(own),
                              library_dirs=probe.library_dirs(interp), sources=sources)
        return [u.message() for u in found]

    return check


def _cached_report(plan: _Plan, names: tuple[str, ...], partial: bool, annotated: str,
                   rec: record.Record) -> GateReport:
    by_name = {str(s.get("name")): s for s in rec.get("stages", []) if isinstance(s, dict)}
    stages = [R.StageResult.from_record(by_name[n]) for n in names]
    return GateReport(plan.tip, plan.tree, R.overall(stages), stages, plan.fingerprint,
                      cached=True, cached_from=annotated, time=str(rec.get("time")),
                      partial=partial)


def _record(report: GateReport) -> record.Record:
    return {
        "format": record.FORMAT,
        "tip": report.tip,
        "tree": report.tree,
        "status": report.status,
        "summary": report.headline,
        "owed": R.owed_names(report.stages),
        "partial": report.partial,
        "stages": [s.to_record() for s in report.stages],
        "fingerprint": report.fingerprint,
        "pq": __version__,
        "time": report.time,
    }


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


# -- the record, for `pq gate --status`, the pre-push hook and other commands ---------------


@dataclass(frozen=True)
class GateStatus:
    tip: str
    tree: str
    found_on: str | None  # the commit whose note holds the record (the tip, or an equal tree)
    record: dict[str, Any] | None
    history: list[dict[str, Any]]

    @property
    def whole(self) -> dict[str, Any] | None:
        """The newest record of a run of the whole gate (a `--stage` run is partial)."""
        return next((r for r in ([self.record] if self.record else []) + self.history
                     if not r.get("partial")), None)

    @property
    def exit_code(self) -> int:
        """0 when the newest run of the whole gate passed (a partial run's pass alone is
        not the gate's), else 1."""
        whole = self.whole
        return 0 if whole is not None and whole.get("status") in R.PASSING else 1

    def to_json(self) -> dict[str, Any]:
        return {"tip": self.tip, "tree": self.tree, "found_on": self.found_on,
                "record": self.record, "history": self.history}


def read_status(git: Git) -> GateStatus:
    tip = git.head()
    tree = git.commit(tip).tree
    # The newest record of the tree, wherever its note is (an equal tree's run a second
    # later is newer than the tip's own); the tip's own first of records of one time.
    found = sorted(record.records_for_tree(git, tip, tree),
                   key=lambda item: str(item[1].get("time", "")), reverse=True)
    if not found:
        return GateStatus(tip, tree, None, None, [])
    annotated, latest = found[0]
    history = [r for c, r in found[1:] if c == annotated]
    return GateStatus(tip, tree, annotated, latest, history)


def record_ok(git: Git, commit: str, required_stages: list[str] | tuple[str, ...]
              ) -> tuple[bool, str]:
    """Whether gate records of `commit`'s tree show every required stage passed; the text
    says what is missing (and the command that provides it). With no required stages, a
    passing record of the whole gate is needed."""
    resolved = git.resolve(commit)
    tree = git.commit(resolved).tree
    return record.covers(git, resolved, tree, tuple(required_stages))


def load_config(git: Git, rev: str) -> GateConfig | None:
    """The gate configuration committed at `rev`, or None when it has no series or no gate
    section (ConfigError when the section is malformed)."""
    queue = queuefiles.read_tree(git, rev)
    if queue is None or queue.series.gate is None:
        return None
    return parse(queue.series, rev)
