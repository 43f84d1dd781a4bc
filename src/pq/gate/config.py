"""The `gate` block of series.yaml: the ordered stages, validated strictly.

Every problem becomes a ConfigError at series.yaml:line:column. Pure: this module never
runs git, a process or prints; it turns the committed series into a `GateConfig`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from pq.errors import ConfigError
from pq.gate import compare_stage
from pq.model.series import SERIES_FILE, Series

DEFAULT_ORDER = ("build", "import", "smoke", "tests", "compare")
DEFAULT_TIMEOUT_S = 600.0
BUILTIN_KINDS = ("compare",)
REQUIREMENTS = ("gpu",)
SYMBOL_CHECK_STAGE = "build"
BASE = "base:"  # an input pattern over the files of the series' recorded upstream base
BUILD_STAGE = "build"  # reusable by default: its inputs are the native sources (gate/inputs)

_TOP_KEYS = ("python", "required_for_push", "stages")
_STAGE_KEYS = ("name", "run", "kind", "requires", "timeout", "env", "check_symbols", "inputs",
               "artifacts") + compare_stage.KEYS
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$")
_ENV_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")

EXAMPLE = (
    "gate: {python: .venv/bin/python, stages: ["
    "{name: build, run: '\"$PYTHON\" setup.py build_ext --inplace'}, "
    "{name: import, run: '\"$PYTHON\" -c \"import mypkg\"'}, "
    "{name: smoke, run: '\"$PYTHON\" -m pytest -q tests -k smoke'}, "
    "{name: tests, run: '\"$PYTHON\" -m pytest -q tests'}]}"
)


@dataclass(frozen=True)
class Stage:
    name: str
    run: str | None = None
    kind: str | None = None
    requires: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_TIMEOUT_S
    env: dict[str, str] = field(default_factory=dict)
    check_symbols: bool = False
    options: dict[str, Any] = field(default_factory=dict)  # a built-in kind's own keys
    inputs: tuple[str, ...] | None = None  # glob patterns; None: the default (gate/inputs)
    artifacts: tuple[str, ...] | None = None  # glob patterns; None: all the stage wrote

    @property
    def needs_gpu(self) -> bool:
        return "gpu" in self.requires

    @property
    def reusable(self) -> bool:
        """Whether a passing run with the same input fingerprint may stand for this one."""
        return self.run is not None and (self.inputs is not None or self.name == BUILD_STAGE)


@dataclass(frozen=True)
class GateConfig:
    stages: tuple[Stage, ...]
    python: str | None = None
    required_for_push: tuple[str, ...] = ()

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(s.name for s in self.stages)

    def select(self, names: tuple[str, ...] | list[str] | None) -> tuple[Stage, ...]:
        """The chosen stages in configuration order; every name must exist."""
        if not names:
            return self.stages
        unknown = [n for n in names if n not in self.names]
        if unknown:
            raise ConfigError(f"no gate stage named {unknown[0]!r}",
                              hint="stages in series.yaml: " + ", ".join(self.names))
        wanted = set(names)
        return tuple(s for s in self.stages if s.name in wanted)


def missing_gate_error(rev: str) -> ConfigError:
    return ConfigError(
        f"{SERIES_FILE} at {rev} has no `gate` section, so pq does not know how to run the "
        "stages " + ", ".join(DEFAULT_ORDER),
        hint=f"add a gate section and commit it, e.g. `{EXAMPLE}`; see docs/gate.md",
    )


def parse(series: Series, rev: str = "HEAD") -> GateConfig:
    """The gate configuration of a series; ConfigError (exit 2) on any problem."""
    data = series.gate
    if data is None:
        raise missing_gate_error(rev)
    where: tuple[str | int, ...] = ("gate",)
    if not isinstance(data, dict):
        raise series.error(where, "`gate` must be a mapping with `stages`",
                           hint=f"e.g. `{EXAMPLE}`")
    for key in data:
        if key not in _TOP_KEYS:
            raise series.error(where + (key,), f"unknown key `gate.{key}`",
                               hint="gate takes: " + ", ".join(_TOP_KEYS), key=True)
    python = data.get("python")
    if python is not None and (not isinstance(python, str) or not python.strip()):
        raise series.error(where + ("python",), "`gate.python` must be a non-empty string",
                           hint="a path such as .venv/bin/python, or a name on PATH")
    stages_data = data.get("stages")
    if stages_data is None:
        raise series.error(where, "`gate` needs `stages`", hint=f"e.g. `{EXAMPLE}`")
    if not isinstance(stages_data, list) or not stages_data:
        raise series.error(where + ("stages",), "`gate.stages` must be a non-empty list",
                           hint="one mapping per stage, each with `name` and `run`")
    stages: list[Stage] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(stages_data):
        stage = _stage(series, i, item)
        if stage.name in seen:
            raise series.error(where + ("stages", i, "name"),
                               f"duplicate gate stage {stage.name!r} (also stage "
                               f"{seen[stage.name] + 1})", hint="give each stage its own name")
        seen[stage.name] = i
        stages.append(stage)
    required = _required(series, data.get("required_for_push"), seen)
    return GateConfig(stages=tuple(stages), python=python, required_for_push=required)


def _required(series: Series, value: Any, names: dict[str, int]) -> tuple[str, ...]:
    path: tuple[str | int, ...] = ("gate", "required_for_push")
    if value is None:
        return ()
    if not isinstance(value, list):
        raise series.error(path, "`gate.required_for_push` must be a list of stage names")
    out = []
    for i, item in enumerate(value):
        if not isinstance(item, str):
            raise series.error(path + (i,), "`gate.required_for_push` must list stage names")
        if item not in names:
            raise series.error(path + (i,), f"`required_for_push` names no stage {item!r}",
                               hint="stages: " + ", ".join(names))
        out.append(item)
    return tuple(out)


def _stage(series: Series, i: int, item: Any) -> Stage:
    path: tuple[str | int, ...] = ("gate", "stages", i)
    if not isinstance(item, dict):
        raise series.error(path, f"gate stage {i + 1} must be a mapping with `name` and `run`")
    for key in item:
        if key not in _STAGE_KEYS:
            raise series.error(path + (key,), f"unknown key `{key}` in gate stage {i + 1}",
                               hint="a stage takes: " + ", ".join(_STAGE_KEYS), key=True)
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise series.error(path + ("name",) if "name" in item else path,
                           f"gate stage {i + 1} needs a `name`",
                           hint="e.g. " + ", ".join(DEFAULT_ORDER))
    if not _NAME_RE.fullmatch(name):
        raise series.error(path + ("name",), f"bad gate stage name {name!r}",
                           hint="letters, digits, '.', '_' and '-', at most 64")
    run, kind = item.get("run"), item.get("kind")
    if (run is None) == (kind is None):
        where = path + ("kind",) if kind is not None else path
        raise series.error(where, f"gate stage {name!r} needs exactly one of `run` (a shell "
                           "command) and `kind` (a built-in stage)",
                           hint="built-in kinds: " + ", ".join(BUILTIN_KINDS))
    if run is not None and (not isinstance(run, str) or not run.strip()):
        raise series.error(path + ("run",), f"gate stage {name!r}: `run` must be a non-empty "
                           "shell command string")
    if isinstance(run, str) and "\0" in run:
        raise series.error(path + ("run",), f"gate stage {name!r}: `run` holds a NUL "
                           "character, which no command line can carry",
                           hint="remove the `\\0` from the command")
    if kind is not None and kind not in BUILTIN_KINDS:
        raise series.error(path + ("kind",), f"gate stage {name!r}: unknown kind {kind!r}",
                           hint="built-in kinds: " + ", ".join(BUILTIN_KINDS))
    return Stage(
        name=name,
        run=run,
        kind=kind,
        requires=_requires(series, path, name, item.get("requires")),
        timeout_s=_timeout(series, path, name, item.get("timeout")),
        env=_env(series, path, name, item.get("env")),
        check_symbols=_check_symbols(series, path, name, item),
        options=compare_stage.parse(series, path, name, item),
        inputs=_globs(series, path, name, item, "inputs"),
        artifacts=_globs(series, path, name, item, "artifacts"),
    )


def _globs(series: Series, path: tuple[str | int, ...], name: str, item: dict[str, Any],
           key: str) -> tuple[str, ...] | None:
    value = item.get(key)
    if value is None:
        return None
    if not isinstance(value, list) or not all(isinstance(v, str) and v.strip() for v in value):
        raise series.error(path + (key,), f"gate stage {name!r}: `{key}` must be a list of "
                           "glob patterns", hint="e.g. [csrc/**, setup.py]")
    if key == "inputs" and not value:
        raise series.error(path + (key,), f"gate stage {name!r}: `inputs: []` names no file, "
                           "so the stage would be reused whenever its command matched",
                           hint="list the files it reads, e.g. [csrc/**, setup.py], or leave "
                                "`inputs` out: the stage then runs every time")
    for j, pattern in enumerate(value):
        if "{" in pattern and "}" in pattern:
            raise series.error(path + (key, j), f"gate stage {name!r}: `{key}` pattern "
                               f"{pattern!r} uses braces, which are no glob syntax here",
                               hint="list the patterns separately, e.g. "
                                    "[csrc/*.c, csrc/*.h], or use a class: csrc/*.[ch]")
        if key == "inputs" and pattern.startswith(BASE):  # the recorded base's files
            pattern = pattern[len(BASE):]
            if not pattern.strip():
                raise series.error(path + (key, j), f"gate stage {name!r}: `base:` names no "
                                   "files", hint="e.g. base:csrc/**, or base:** for all")
        if pattern.startswith("/") or ".." in pattern.split("/"):
            raise series.error(path + (key, j), f"gate stage {name!r}: `{key}` pattern "
                               f"{pattern!r} leaves the repository",
                               hint="patterns are relative to the repository's top folder")
    return tuple(value)


def _requires(series: Series, path: tuple[str | int, ...], name: str,
              value: Any) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list):
        raise series.error(path + ("requires",), f"gate stage {name!r}: `requires` must be a "
                           "list, e.g. [gpu]")
    for j, req in enumerate(value):
        if req not in REQUIREMENTS:
            raise series.error(path + ("requires", j),
                               f"gate stage {name!r}: unknown requirement {req!r}",
                               hint="known: " + ", ".join(REQUIREMENTS))
    return tuple(dict.fromkeys(value))


def _timeout(series: Series, path: tuple[str | int, ...], name: str, value: Any) -> float:
    if value is None:
        return DEFAULT_TIMEOUT_S
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise series.error(path + ("timeout",), f"gate stage {name!r}: `timeout` must be a "
                           "positive number of seconds")
    if value > 7 * 24 * 3600:
        raise series.error(path + ("timeout",), f"gate stage {name!r}: `timeout` {value} s is "
                           "more than a week")
    return float(value)


def _env(series: Series, path: tuple[str | int, ...], name: str, value: Any) -> dict[str, str]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise series.error(path + ("env",), f"gate stage {name!r}: `env` must be a mapping "
                           "of variable names to strings")
    env: dict[str, str] = {}
    for key, val in value.items():
        if not _ENV_RE.fullmatch(key):
            raise series.error(path + ("env", key), f"gate stage {name!r}: bad environment "
                               f"variable name {key!r}")
        if not isinstance(val, str):  # YAML reads 12.10 as 12.1, 022 as 18: never guess
            raise series.error(path + ("env", key), f"gate stage {name!r}: env {key} must be a "
                               "string", hint=f"write it quoted, `{key}: \"...\"`; unquoted, "
                               "YAML reads 12.10 as the number 12.1 and 022 as 18")
        if "\0" in val:
            raise series.error(path + ("env", key), f"gate stage {name!r}: env {key} holds a "
                               "NUL character, which no environment variable can carry",
                               hint="remove the `\\0` from the value")
        env[key] = val
    return env


def _check_symbols(series: Series, path: tuple[str | int, ...], name: str,
                   item: dict[str, Any]) -> bool:
    value = item.get("check_symbols")
    if value is None:
        return name == SYMBOL_CHECK_STAGE
    if not isinstance(value, bool):
        raise series.error(path + ("check_symbols",), f"gate stage {name!r}: `check_symbols` "
                           "must be true or false")
    return value
