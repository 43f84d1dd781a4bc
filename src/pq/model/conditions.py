"""Removal conditions: when a workaround may be deleted, written so that pq can check it.

`paddle >= X.Y[.Z]`, `mre-passes`, `upstream-contains: <file>: <text>` and `manual: <text>`
are parsed here and evaluated against facts gathered elsewhere; nothing here runs a process.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

MET = "met"
NOT_MET = "not met"
MANUAL = "manual"
UNKNOWN = "unknown"
NOT_RUN = "not run"
STATES = (MET, NOT_MET, MANUAL, UNKNOWN, NOT_RUN)

PADDLE = "paddle"
MRE_PASSES = "mre-passes"
UPSTREAM_CONTAINS = "upstream-contains"
MANUAL_KIND = "manual"
SYNTAX = ("`paddle >= X.Y[.Z]`, `mre-passes`, `upstream-contains: <file>: <text>` "
          "or `manual: <text>`; quote text that contains `: `")

_PADDLE_RE = re.compile(r"^paddle(?:paddle)?\s*>=\s*(\d+(?:\.\d+){1,2})$", re.ASCII)


class ConditionSyntaxError(ValueError):
    """A condition pq cannot read; the caller turns it into a located ConfigError."""

    def __init__(self, message: str, hint: str = "write " + SYNTAX) -> None:
        super().__init__(message)
        self.hint = hint


@dataclass(frozen=True)
class Condition:
    kind: str
    text: str  # canonical spelling, as reports show it
    version: tuple[int, ...] = ()
    file: str = ""
    needle: str = ""
    note: str = ""


@dataclass(frozen=True)
class ConditionState:
    condition: Condition
    state: str
    detail: str = ""


@dataclass(frozen=True)
class Facts:
    """What the evaluation needs to know about the world, gathered before it starts."""

    paddle_version: str | None = None
    paddle_source: str = ""  # e.g. "installed paddlepaddle", "--paddle-version"
    upstream_ref: str = ""
    upstream_commit: str | None = None
    upstream_files: dict[str, bytes | None] = field(default_factory=dict)
    run_mre: bool = False


@dataclass(frozen=True)
class MreOutcome:
    """How one reproducer run ended: exit code, or a reason it could not run."""

    exit_code: int | None
    timed_out: bool = False
    error: str = ""


def parse(raw: Any) -> Condition:
    """One entry of `remove_when`: a string, or a one-key mapping YAML made of `key: text`."""
    if isinstance(raw, dict):
        if len(raw) != 1:
            raise ConditionSyntaxError("a condition is one line of text")
        key, value = next(iter(raw.items()))
        if not isinstance(value, (str, int, float)) or isinstance(value, bool):
            raise ConditionSyntaxError(f"`{key}:` needs text after it")
        raw = f"{key}: {value}"
    if not isinstance(raw, str):
        raise ConditionSyntaxError("a condition must be text")
    text = raw.strip()
    if not text:
        raise ConditionSyntaxError("empty condition")
    if text.lower().startswith("paddle"):
        m = _PADDLE_RE.match(" ".join(text.split()))
        if not m:
            raise ConditionSyntaxError(f"cannot read {text!r}", "write `paddle >= X.Y[.Z]`")
        version = tuple(int(x) for x in m.group(1).split("."))
        return Condition(PADDLE, f"paddle >= {m.group(1)}", version=version)
    if text == MRE_PASSES:
        return Condition(MRE_PASSES, MRE_PASSES)
    key, sep, rest = text.partition(":")
    rest = rest.strip()
    if sep and key.strip() == UPSTREAM_CONTAINS:
        file, _, needle = rest.partition(":")
        file, needle = file.strip(), needle.strip()
        if not file or not needle:
            raise ConditionSyntaxError(f"cannot read {text!r}",
                                       "write `upstream-contains: <file>: <text>`, quoted")
        if file.startswith("/") or ".." in file.split("/") or "\n" in file:
            raise ConditionSyntaxError(f"{file!r} is not a path inside the upstream tree",
                                       "a path relative to the upstream repository's root")
        return Condition(UPSTREAM_CONTAINS, f"upstream-contains: {file}: {needle}",
                         file=file, needle=needle)
    if sep and key.strip() == MANUAL_KIND:
        if not rest:
            raise ConditionSyntaxError("`manual:` needs the check a person makes",
                                       "write `manual: <what to check>`")
        return Condition(MANUAL_KIND, f"manual: {rest}", note=rest)
    raise ConditionSyntaxError(f"unknown condition {text!r}")


# -- versions ------------------------------------------------------------------------


# A version as PEP 440 spells it (what pip and Paddle's wheels write): the release, then
# a pre-release, a post-release, a development release and a local part, each optional,
# with the separators PEP 440 lets each take.
_VERSION = re.compile(
    r"v?(?P<release>[0-9]+(?:\.[0-9]+)*)"
    r"(?P<pre>[-_.]?(?:a|alpha|b|beta|c|rc|pre|preview)(?:[-_.]?[0-9]+)?)?"
    r"(?P<post>-[0-9]+|[-_.]?(?:post|rev|r)(?:[-_.]?[0-9]+)?)?"
    r"(?P<dev>[-_.]?dev(?:[-_.]?[0-9]+)?)?"
    r"(?:\+[a-z0-9]+(?:[-_.][a-z0-9]+)*)?", re.ASCII | re.IGNORECASE)


def parse_version(text: str) -> tuple[tuple[int, ...], bool] | None:
    """(release numbers, is a pre-release or a development release) of a version such as
    3.3.1, 3.4.0rc1 or 3.4.0_rc1 (PEP 440's spellings); None for anything else (3.4.0foo)."""
    m = _VERSION.fullmatch(text.strip())
    if not m:
        return None
    release = tuple(int(x) for x in m.group("release").split("."))
    return release, bool(m.group("pre") or m.group("dev"))


def version_at_least(installed: str, wanted: tuple[int, ...]) -> bool | None:
    parsed = parse_version(installed)
    if parsed is None:
        return None
    release, pre = parsed
    width = max(len(release), len(wanted))
    have = release + (0,) * (width - len(release))
    want = wanted + (0,) * (width - len(wanted))
    if have == want:
        return not pre
    return have > want


# -- evaluation ----------------------------------------------------------------------


def evaluate(cond: Condition, facts: Facts, mre: MreOutcome | None = None) -> ConditionState:
    if cond.kind == PADDLE:
        return _paddle(cond, facts)
    if cond.kind == MRE_PASSES:
        return _mre(cond, facts, mre)
    if cond.kind == UPSTREAM_CONTAINS:
        return _upstream(cond, facts)
    return ConditionState(cond, MANUAL, "a person checks this")


def _paddle(cond: Condition, facts: Facts) -> ConditionState:
    version = facts.paddle_version
    if version is None:
        return ConditionState(cond, UNKNOWN, "paddle is not installed; pass --paddle-version")
    where = f"{facts.paddle_source} {version}".strip()
    parsed = parse_version(version)
    if parsed is None or parsed[0] == (0, 0, 0):
        return ConditionState(cond, UNKNOWN, f"{where}: not a release version; "
                              "pass --paddle-version")
    ok = version_at_least(version, cond.version)
    return ConditionState(cond, MET if ok else NOT_MET, where)


def _mre(cond: Condition, facts: Facts, mre: MreOutcome | None) -> ConditionState:
    if not facts.run_mre:
        return ConditionState(cond, NOT_RUN, "rerun with --run-mre")
    if mre is None:
        return ConditionState(cond, UNKNOWN, "no reproducer to run")
    if mre.error:
        return ConditionState(cond, UNKNOWN, mre.error)
    if mre.timed_out:
        return ConditionState(cond, UNKNOWN, "the reproducer timed out")
    if mre.exit_code == 0:
        return ConditionState(cond, MET, "the reproducer passes (exit 0): the gap is closed")
    return ConditionState(cond, NOT_MET, f"the reproducer fails (exit {mre.exit_code}): "
                          "the gap is still there")


def _upstream(cond: Condition, facts: Facts) -> ConditionState:
    if facts.upstream_commit is None:
        return ConditionState(cond, UNKNOWN, f"upstream ref {facts.upstream_ref!r} not found; "
                              "git fetch it, or pass --upstream REF")
    at = f"{facts.upstream_ref} at {facts.upstream_commit[:12]}"
    data = facts.upstream_files.get(cond.file)
    if data is None:
        return ConditionState(cond, NOT_MET, f"{cond.file} is no file in {at} (absent, or a "
                              "folder: the condition reads one file's text)")
    if cond.needle.encode("utf-8") in data:
        return ConditionState(cond, MET, f"found in {cond.file} ({at})")
    return ConditionState(cond, NOT_MET, f"not in {cond.file} ({at})")


def combine(states: list[ConditionState]) -> str:
    """A workaround's removal state. Each condition is sufficient on its own: one that is
    met makes the workaround removable; otherwise the state says what is left to find out."""
    if not states:
        return UNKNOWN
    found = {s.state for s in states}
    for state in (MET, NOT_RUN, UNKNOWN, MANUAL):
        if state in found:
            return state
    return NOT_MET
