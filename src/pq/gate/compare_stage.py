"""The built-in gate stage `kind: compare`: its keys in series.yaml (validated with their
location) and its run, `pq compare` on the gate's worktree with the result as the stage's.

Paths (script, torch_path, paddle_path) are relative to the worktree of the tip.
"""

from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any

from pq.atomic import write_atomic
from pq.compare.values import DTYPES, Tolerance, parse_tolerance, unknown_dtype
from pq.errors import ConfigError, PqError
from pq.gate import result as R
from pq.model.series import Series

KIND = "compare"
KEYS = ("script", "package", "namespace", "tolerance", "torch_python", "paddle_python",
        "torch_path", "paddle_path", "seed")
_STRINGS = ("script", "package", "namespace", "torch_python", "paddle_python")
_PATHS = ("torch_path", "paddle_path")


def parse(series: Series, path: tuple[str | int, ...], name: str,
          item: dict[str, Any]) -> dict[str, Any]:
    """The stage's compare options, checked; ConfigError at the offending value."""
    kind = item.get("kind")
    options: dict[str, Any] = {}
    for key in KEYS:
        if key not in item:
            continue
        value = item[key]
        where = path + (key,)
        if kind != KIND:
            raise series.error(where, f"gate stage {name!r}: `{key}` belongs to `kind: "
                               f"{KIND}` stages", hint="remove it, or set `kind: compare`")
        if key in _STRINGS:
            if not isinstance(value, str) or not value.strip():
                raise series.error(where, f"gate stage {name!r}: `{key}` must be a non-empty "
                                   "string")
            options[key] = value
        elif key in _PATHS:
            value = [value] if isinstance(value, str) else value
            if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
                raise series.error(where, f"gate stage {name!r}: `{key}` must be a folder or "
                                   "a list of folders", hint="relative to the repository")
            options[key] = tuple(value)
        elif key == "seed":
            if isinstance(value, bool) or not isinstance(value, int):
                raise series.error(where, f"gate stage {name!r}: `seed` must be an integer")
            options[key] = value
        else:
            options[key] = _tolerance(series, where, name, value)
    if options and "script" not in options:
        raise series.error(path, f"gate stage {name!r}: `kind: compare` needs `script`",
                           hint="the Python script to run under torch and under Paddle, "
                                "e.g. `script: tests/compare_ops.py`")
    return options


def _tolerance(series: Series, where: tuple[str | int, ...], name: str,
               value: Any) -> dict[str, Tolerance]:
    if not isinstance(value, dict):
        raise series.error(where, f"gate stage {name!r}: `tolerance` must map dtypes to "
                           "[rtol, atol]", hint="e.g. tolerance: {float32: [1.3e-6, 1e-5]}")
    out: dict[str, Tolerance] = {}
    for dtype, pair in value.items():
        ok = isinstance(pair, list) and len(pair) == 2 and all(
            isinstance(v, (int, float)) and not isinstance(v, bool) for v in pair)
        if (why := unknown_dtype(str(dtype))) is not None:
            raise series.error(where + (dtype,), f"gate stage {name!r}: tolerance for {dtype!r}, "
                               f"{why}",
                               hint=f"name one of {', '.join(DTYPES)}")
        try:
            if not ok:
                raise ConfigError("bad")
            out[str(dtype)] = parse_tolerance(f"{dtype}={pair[0]},{pair[1]}")[1]
        except ConfigError:
            raise series.error(where + (dtype,), f"gate stage {name!r}: tolerance {dtype} "
                               "must be [rtol, atol], two non-negative numbers") from None
    return out


def run(options: dict[str, Any], name: str, worktree: Path, python: str,
        log_path: Path, timeout_s: float) -> R.StageResult:
    """`pq compare` as a gate stage: passed when the traces agree; the comparison, as JSON,
    in the stage's log."""
    if not options:
        return R.StageResult(name, R.NOT_AVAILABLE, detail="`kind: compare` without `script`: "
                             "nothing to compare (see docs/compare.md)")
    from pq.compare import api  # a stage that runs needs it; reading the gate block does not

    def interpreter(side: str) -> str:
        given = options.get(f"{side}_python")
        if given is None:
            return api.resolve_python(python, side)
        if "/" in given and not Path(given).is_absolute():
            given = str(worktree / given)  # relative to the repository, like gate.python
        return api.resolve_python(given, side)

    try:
        sides = (api.Side("torch", interpreter("torch"), options.get("torch_path", ())),
                 api.Side("paddle", interpreter("paddle"), options.get("paddle_path", (".",))))
        result = api.run_compare(Path(options["script"]), sides, package=options.get("package"),
                                 namespace=options.get("namespace"),
                                 tolerance=options.get("tolerance"),
                                 seed=options.get("seed", 0), timeout_s=timeout_s,
                                 cwd=worktree)
    except PqError as exc:
        return _result(name, R.FAILED, exc.render(), exc.exit_code, log_path,
                       f"# pq gate: compare: {exc.render()}\n")
    status = R.PASSED if result.status == api.AGREE else R.FAILED
    trace = result.error.traceback.rstrip() + "\n" if result.error else ""
    res = _result(name, status, "" if status == R.PASSED else result.summary(),
                  result.exit_code, log_path, f"# pq gate: compare: {result.summary()}\n"
                  + json.dumps(result.to_json(), indent=2, sort_keys=True) + "\n" + trace)
    if res.failed:
        res.tail = result.summary() + ("\n" + trace.rstrip() if trace else "")
    return res


def _result(name: str, status: str, detail: str, code: int, log_path: Path,
            log: str) -> R.StageResult:
    data = log.encode("utf-8", "replace")
    write_atomic(log_path, data)
    return R.StageResult(name, status, detail=detail, exit_code=code, log=str(log_path),
                         log_sha256=hashlib.sha256(data).hexdigest())
