"""`pq compare`: run one script under real PyTorch and under Paddle compat, each in its own
process with the same seed, and report the first divergence between the two traces.

Library entry point `run_compare` returns a `Comparison`; set-up problems raise ConfigError.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pq.compare import align
from pq.compare.values import Tolerance, tolerances
from pq.errors import ConfigError
from pq.git import process

CHILD = Path(__file__).with_name("child.py")
SIDES = ("torch", "paddle")
AGREE, DIVERGE, ERROR = "agree", "diverge", "error"
EXIT = {AGREE: 0, DIVERGE: 1, ERROR: 2}
DEFAULT_TIMEOUT_S = 600.0
DEFAULT_MAX_VALUES = 4096
TRACEBACK_CHARS = 8000
Progress = Callable[[int, int, str], None]


@dataclass(frozen=True)
class Side:
    """How one side runs: its interpreter and the folders put first on its import path."""

    name: str
    python: str
    path: tuple[str, ...] = ()


@dataclass(frozen=True)
class SideError:
    side: str
    stage: str  # setup (seeding, compat, importing the package), script, crash, timeout
    message: str
    traceback: str = ""

    def to_json(self) -> dict[str, str]:
        return {"side": self.side, "stage": self.stage, "message": self.message,
                "traceback": self.traceback}


@dataclass(frozen=True)
class Comparison:
    status: str  # agree, diverge, error
    script: str
    package: str | None
    observations: tuple[int, int]  # recorded by torch, by paddle
    frameworks: dict[str, str] = field(default_factory=dict)
    divergence: align.Divergence | None = None
    error: SideError | None = None
    tolerances: dict[str, Tolerance] = field(default_factory=dict)

    @property
    def exit_code(self) -> int:
        return EXIT[self.status]

    def summary(self) -> str:
        """One line: agreement, the first divergence and where, or the set-up error."""
        if self.error is not None:
            return self.error.message
        d = self.divergence
        if d is None:
            n = max(self.observations)
            return f"traces agree ({n} observation{'' if n == 1 else 's'})"
        text = f"first divergence: {d.message}"
        if d.site is not None:
            text += f" at {d.site.text()}"
        if d.implementation is not None:
            text += f"; implementation {d.implementation.text()}"
        return text

    def to_json(self) -> dict[str, Any]:
        return {
            "status": self.status, "script": self.script, "package": self.package,
            "observations": {"torch": self.observations[0], "paddle": self.observations[1]},
            "frameworks": self.frameworks,
            "tolerances": {k: {"rtol": t.rtol, "atol": t.atol}
                           for k, t in sorted(self.tolerances.items())},
            "divergence": self.divergence.to_json() if self.divergence else None,
            "error": self.error.to_json() if self.error else None,
        }


def resolve_python(python: str, what: str) -> str:
    """An interpreter given by path or by name on PATH; ConfigError when there is none."""
    found = shutil.which(os.path.expanduser(python))
    if found is None:
        raise ConfigError(f"{what} interpreter {python!r} not found",
                          hint=f"give an existing python with --{what}-python")
    return os.path.abspath(found) if "/" in found else found


def run_compare(script: Path, sides: tuple[Side, Side], *, package: str | None = None,
                namespace: str | None = None, args: tuple[str, ...] = (),
                tolerance: Mapping[str, Tolerance] | None = None, seed: int = 0,
                max_values: int = DEFAULT_MAX_VALUES, timeout_s: float = DEFAULT_TIMEOUT_S,
                cwd: Path | None = None, progress: Progress | None = None) -> Comparison:
    """Both sides run in parallel (each its own process); then the traces are aligned."""
    cwd = (cwd or Path.cwd()).resolve()
    script = (cwd / script).resolve() if not script.is_absolute() else script
    if not script.is_file():
        raise ConfigError(f"script {script} not found", hint="give the path of a Python script")
    tols = tolerances(tolerance)
    with tempfile.TemporaryDirectory(prefix="pq-compare-") as tmp:
        env = {"PQ_COMPARE_SEED": str(seed), "PQ_COMPARE_MAX_VALUES": str(max_values),
               "PQ_COMPARE_PACKAGE": package or "", "PQ_COMPARE_NS": namespace or ""}

        def one(side: Side) -> tuple[align.Trace, SideError | None]:
            return _run_side(side, script, args, env, Path(tmp), cwd, timeout_s)

        if progress is not None:
            progress(0, 2, "running the script under torch and under Paddle")
        with ThreadPoolExecutor(max_workers=2) as pool:
            (torch, terr), (paddle, perr) = pool.map(one, sides)
    counts = (len(torch.events), len(paddle.events))
    frameworks = {t.side: str(t.header.get("framework", "?")) for t in (torch, paddle)}

    def result(status: str, divergence: align.Divergence | None = None,
               error: SideError | None = None) -> Comparison:
        return Comparison(status, str(script), package, counts, frameworks, divergence,
                          error, tols)

    if terr or perr:
        return result(ERROR, error=terr or perr)
    ctx = align.Context(
        torch_roots=_roots(sides[0], torch, cwd), paddle_roots=_roots(sides[1], paddle, cwd),
        torch_root=torch.root, paddle_root=paddle.root)
    if progress is not None:
        progress(1, 2, "aligning the traces")
    found = align.first_divergence(torch, paddle, tols, ctx)
    return result(DIVERGE if found else AGREE, divergence=found)


def _roots(side: Side, trace: align.Trace, cwd: Path) -> list[Path]:
    roots = [Path(p).resolve() for p in side.path]
    if trace.root is not None:
        roots.append(trace.root)
    return [*roots, cwd]


def _run_side(side: Side, script: Path, args: tuple[str, ...], common: dict[str, str],
              tmp: Path, cwd: Path, timeout_s: float) -> tuple[align.Trace, SideError | None]:
    out = tmp / f"{side.name}.jsonl"
    env = process.scrubbed_env({**common, "PQ_COMPARE_SIDE": side.name,
                                "PQ_COMPARE_TRACE": str(out),
                                "PQ_COMPARE_PATH": os.pathsep.join(
                                    str(Path(cwd, p).resolve()) for p in side.path)})
    try:
        done = process.run([side.python, str(CHILD), str(script), *args], timeout=timeout_s,
                           cwd=str(cwd), env=env, merge_stderr=False)
    except OSError as exc:
        raise ConfigError(f"{side.name} interpreter {side.python!r} cannot run: "
                          f"{exc.strerror}", hint=f"give a working --{side.name}-python") from None
    trace = align.read_trace(side.name, out)
    if done.timed_out:
        return trace, SideError(side.name, "timeout", f"the {side.name} side did not finish "
                                f"within {timeout_s:g} s")
    end = trace.end
    if end is not None and end.get("kind") == "error":
        text = str(end.get("traceback", ""))[-TRACEBACK_CHARS:]
        last = text.strip().splitlines()[-1] if text.strip() else "error"
        stage = str(end.get("stage", "script"))
        what = "the script" if stage == "script" else "setting up the side"
        return trace, SideError(side.name, stage, f"{what} failed on the {side.name} side: "
                                f"{last}", text)
    if done.code != 0 or end is None:
        err = done.stderr.decode("utf-8", "replace")[-TRACEBACK_CHARS:]
        why = (": the script ended the process itself (os._exit?); return from it or call "
               "sys.exit instead") if done.code == 0 else ""
        return trace, SideError(side.name, "crash", f"the {side.name} side died "
                                f"({process.exit_detail(done.code)}) before its trace ended"
                                f"{why}", err)
    return trace, None
