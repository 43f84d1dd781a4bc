"""Running the stages: a throwaway worktree of the tip, one `bash -c` per stage, logs kept.

Each stage runs through pq.git.process in its own process group with its timeout (the whole
group is stopped: TERM, a grace, KILL),
its output streamed straight to a log file (large build logs never sit in memory), and the
run stops at the first failure. The worktree is always removed, also after a crash.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from pq.atomic import oldest_first
from pq.gate import ccache, compare_stage
from pq.gate import result as R
from pq.gate.config import Stage
from pq.gate.reuse import StageCache, reused_result
from pq.gate.symbols import shared_objects
from pq.git import process
from pq.git.repo import Git
from pq.oplog.lock import Lock, LockBusy

Progress = Callable[[int, int, str], None]
SymbolCheck = Callable[[Path, dict[str, str], dict[str, tuple[int, int, int]]], list[str]]

TAIL_LINES = 30
MAX_ERROR_LINES = 12
_ERROR_LINE = re.compile(rb"(\b[Ee]rror\b\s*[:(]|: [Ee]rror\b|undefined reference|"
                         rb"^FAILED: |fatal error|symbol lookup error)")
_ERROR_NEEDLES = (b"rror", b"undefined reference", b"FAILED: ")
KEEP_LOG_TIPS = 20
_WORKTREE_PREFIX = "pq-gate-"
@dataclass(frozen=True)
class RunContext:
    """What every stage shares: where it runs, which interpreter, where logs go."""

    worktree: Path
    tip: str
    python: str
    log_dir: Path
    gpu: bool
    extra_env: dict[str, str] = field(default_factory=dict)  # compiler caching (gate/ccache)


# -- the worktree --------------------------------------------------------------------------


@contextmanager
def throwaway_worktree(git: Git, tip: str) -> Iterator[Path]:
    """A detached worktree of `tip` in a temporary folder; removed however the block ends."""
    remove_stale_worktrees(git)
    holder = Path(tempfile.mkdtemp(prefix=f"{_WORKTREE_PREFIX}{os.getpid()}-"))
    path = holder / (git.root.name or "src")
    try:
        # No hooks: a post-checkout hook of the user's has no business in a gate run.
        git.add_worktree(path, tip)
        yield path
    finally:
        git.remove_worktree(path)
        shutil.rmtree(holder, ignore_errors=True)


def remove_stale_worktrees(git: Git) -> None:
    """Worktrees left by a gate run that was killed (its process is gone)."""
    for path in git.worktree_paths():
        m = re.match(rf"^{_WORKTREE_PREFIX}(\d+)-", path.parent.name)
        if m and not process.pid_alive(int(m.group(1))):
            git.remove_worktree(path)
            shutil.rmtree(path.parent, ignore_errors=True)


def base_env(python: str) -> dict[str, str]:
    """The caller's environment, minus variables pointing at the user's repository, with
    the interpreter as PQ_PYTHON/PYTHON and its folder first on PATH."""
    env = process.scrubbed_env({"PQ_PYTHON": python, "PYTHON": python})
    env["PATH"] = os.path.dirname(python) + os.pathsep + env.get("PATH", os.defpath)
    return env


def stage_env(ctx: RunContext, stage: Stage) -> dict[str, str]:
    env = base_env(ctx.python)
    env["PQ_GATE_STAGE"] = stage.name
    env["PQ_GATE_TIP"] = ctx.tip
    env["PQ_GATE_WORKTREE"] = str(ctx.worktree)
    env.update(ccache.for_stage(ctx.extra_env, stage.env))
    env.update(stage.env)
    return env


def run_stages(ctx: RunContext, stages: tuple[Stage, ...], *, progress: Progress | None = None,
               check_symbols: SymbolCheck | None = None, cache: StageCache | None = None
               ) -> list[R.StageResult]:
    """Every stage in order; after the first failure the rest are `not-run`. A reusable
    stage with a cached passing run is restored from `cache` instead of run, where each
    reusable stage before it was restored too (one that ran may have made other files);
    a pass is kept where each of those ran or was restored here (not with `--stage` alone)."""
    ctx.log_dir.mkdir(parents=True, exist_ok=True)
    results: list[R.StageResult] = []
    failed = False
    restored: set[str] = set()
    ran: set[str] = set()
    for i, stage in enumerate(stages):
        if failed:
            results.append(R.StageResult(stage.name, R.NOT_RUN, stage.requires))
            continue
        # A GPU stage without a GPU is owed, whatever a cache holds.
        key = cache.key(stage) if cache is not None else None
        before = cache.chain.get(stage.name, ()) if cache is not None else ()
        usable = key is not None and not (stage.needs_gpu and not ctx.gpu) and all(
            name in restored for name in before)
        hit = cache.restore(stage, ctx.worktree) if cache is not None and usable else None
        if hit is not None and key is not None:
            results.append(reused_result(stage, key, hit))
            restored.add(stage.name)
            continue
        if cache is not None:
            cache.before(stage, ctx.worktree)
        res = run_stage(ctx, stage, i, len(stages), progress, check_symbols)
        res.inputs = key
        if cache is not None and res.status == R.PASSED:
            ran.add(stage.name)
            if all(name in restored or name in ran for name in before):
                cache.save(stage, ctx.worktree, ctx.tip)
        results.append(res)
        failed = res.failed
    if progress is not None and stages:
        progress(len(stages), len(stages), "done")  # past the last stage: clear the line
    return results


def run_stage(ctx: RunContext, stage: Stage, index: int, total: int,
              progress: Progress | None, check_symbols: SymbolCheck | None) -> R.StageResult:
    if stage.needs_gpu and not ctx.gpu:
        return R.StageResult(stage.name, R.SKIPPED_NO_GPU, stage.requires,
                             detail="no CUDA GPU visible (nvidia-smi -L lists none, or "
                                    "CUDA_VISIBLE_DEVICES names none)")
    if stage.kind == compare_stage.KIND:
        if progress is not None:
            progress(index, total, stage.name)
        start = time.monotonic()
        res = compare_stage.run(stage.options, stage.name, ctx.worktree, ctx.python,
                                ctx.log_dir / f"{stage.name}.log", stage.timeout_s)
        if res.status != R.NOT_AVAILABLE:  # it ran: its time is the stage's, not pq's
            res.duration_s = round(time.monotonic() - start, 3)
        return res
    if stage.run is None:
        return R.StageResult(stage.name, R.NOT_AVAILABLE, stage.requires,
                             detail=f"built-in stage kind `{stage.kind}` is not available in "
                             "this pq yet")
    env = stage_env(ctx, stage)
    before = shared_objects(ctx.worktree) if stage.check_symbols else {}
    log_path = ctx.log_dir / f"{stage.name}.log"

    def tick(elapsed: float) -> None:
        if progress is not None:
            progress(index, total, f"{stage.name} ({elapsed:.0f} s)")

    tick(0.0)
    try:
        code, duration, timed_out = run_command(stage.run, ctx.worktree, env, stage.timeout_s,
                                                log_path, tick)
    except OSError as exc:  # the system would not start it: a command or `env` past its
        # size limit (E2BIG), a worktree an earlier stage removed
        return R.StageResult(stage.name, R.FAILED, stage.requires, log=str(log_path),
                             detail=f"could not start: {exc.strerror or exc}")
    res = R.StageResult(stage.name, R.PASSED, stage.requires, duration_s=round(duration, 3),
                        exit_code=code, log=str(log_path))
    if timed_out:
        res.status = R.TIMED_OUT
        res.detail = f"timed out after {_seconds(stage.timeout_s)} s"
    elif code != 0:
        res.status = R.FAILED
        res.detail = process.exit_detail(code)
    elif stage.check_symbols and check_symbols is not None:
        tick(duration)
        findings = check_symbols(ctx.worktree, env, before)
        if findings:
            res.status = R.FAILED
            res.detail = findings[0] + (f" (and {len(findings) - 1} more)"
                                        if len(findings) > 1 else "")
            with open(log_path, "ab") as log:
                log.write(("\n# pq gate: undefined symbols in built extension modules\n"
                           + "".join(f + "\n" for f in findings)).encode(
                               "utf-8", "surrogateescape"))  # a name's bytes, as they are
    res.log_sha256 = file_sha256(log_path)
    if res.failed:
        res.tail = excerpt(log_path)
    return res


def run_command(command: str, cwd: Path, env: dict[str, str], timeout_s: float,
                log_path: Path, tick: Callable[[float], None]) -> tuple[int | None, float, bool]:
    """(exit code, seconds, timed out) of `bash -c command`, its output in log_path."""
    with open(log_path, "wb") as log:
        log.write(f"# pq gate: $ {command}\n".encode("utf-8", "surrogateescape"))
        log.flush()
        # bash found on pq's own PATH: a stage's `env` may set a PATH without it.
        shell = shutil.which("bash") or "/bin/bash"
        done = process.run([shell, "-c", command], timeout=timeout_s, cwd=str(cwd), env=env,
                           log=log, tick=tick,
                           marker=f"PQ_GATE_WORKTREE={env['PQ_GATE_WORKTREE']}"
                           if "PQ_GATE_WORKTREE" in env else None)
        how = "timed out" if done.timed_out else process.exit_detail(done.code)
        log.write(f"\n# pq gate: {how} after {done.seconds:.1f} s\n".encode())
    return done.code, done.seconds, done.timed_out


def _seconds(value: float) -> str:
    return str(int(value)) if value == int(value) else str(value)


# -- logs ------------------------------------------------------------------------------------


def log_dir(git: Git, tip: str) -> Path:
    return git.pq_dir() / "gate" / "logs" / tip


@contextmanager
def log_folder(git: Git, tip: str) -> Iterator[Path]:
    """Where this run's logs go: `logs/<tip>`, or, while another gate of the same tip writes
    there (a second worktree, another interpreter), `logs/<tip>/run-<pid>`, so that one
    run's report and log_sha256 never point at another run's output."""
    root = log_dir(git, tip)
    lock = Lock(root / ".running", "pq gate")
    try:
        lock.acquire(wait_s=0)
    except LockBusy:
        pass  # another gate of this tip is running: a folder of this run's own
    try:
        yield root if lock.held else root / f"run-{os.getpid()}"
    finally:
        lock.release()


def prune_logs(git: Git, keep: int = KEEP_LOG_TIPS) -> None:
    """Keep the logs of the most recent `keep` tips (another gate may prune them too)."""
    dirs = oldest_first(git.pq_dir() / "gate" / "logs", lambda st, _: stat.S_ISDIR(st.st_mode))
    for old in dirs[:max(0, len(dirs) - keep)]:
        shutil.rmtree(old, ignore_errors=True)


def file_sha256(path: Path) -> str | None:
    if not path.is_file():
        return None
    digest = hashlib.sha256()
    with open(path, "rb") as f:
        for chunk in iter(lambda: f.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def excerpt(path: Path) -> str:
    """The log's compiler/linker error lines (a build's cause often scrolls far above the
    traceback that ends it), then its tail."""
    end = tail(path)
    shown = set(end.splitlines())
    errors: list[str] = []
    try:
        with open(path, "rb") as f:
            carry = b""
            while len(errors) < MAX_ERROR_LINES:
                chunk = f.read(8 << 20)
                if not chunk:
                    break
                data = carry + chunk
                cut = data.rfind(b"\n") + 1 or len(data)
                data, carry = data[:cut], data[cut:]
                _error_lines(data, shown, errors)
            if carry:
                _error_lines(carry, shown, errors)
    except OSError:
        return end
    if not errors:
        return end
    return "\n".join(["[error lines]", *errors, "[last lines]", end])


def _error_lines(data: bytes, shown: set[str], errors: list[str]) -> None:
    spans: set[tuple[int, int]] = set()
    for needle in _ERROR_NEEDLES:  # bytes.find is fast; the regex then looks at few lines
        pos = data.find(needle)
        while pos >= 0:
            start = data.rfind(b"\n", 0, pos) + 1
            stop = data.find(b"\n", pos)
            stop = len(data) if stop < 0 else stop
            spans.add((start, stop))
            pos = data.find(needle, stop)
    for start, stop in sorted(spans):
        raw = data[start:stop]
        if not _ERROR_LINE.search(raw):
            continue
        line = raw.decode("utf-8", "replace").rstrip("\r")
        line = line if len(line) <= 400 else line[:400] + " ..."
        if line not in shown and line not in errors:
            errors.append(line)
            if len(errors) >= MAX_ERROR_LINES:
                return


def tail(path: Path, lines: int = TAIL_LINES, max_bytes: int = 64 * 1024) -> str:
    """The last lines of a log, read from its end (a build log may be very large)."""
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - max_bytes))
            data = f.read()
    except OSError:
        return ""
    text = data.decode("utf-8", "replace").replace("\r\n", "\n")
    kept = text.rstrip("\n").split("\n")[-lines:]
    return "\n".join(line if len(line) <= 400 else line[:400] + " ..." for line in kept)

