"""The `workaround` block of a patch entry: its schema, read strictly from series.yaml
(series.loads reads every block, so each command refuses a malformed one).

A malformed block (wrong type, unknown key, unreadable condition) is a ConfigError at the
block's file:line:column; a missing field is not an error here but a finding of the audit.
"""

from __future__ import annotations

import difflib
import fnmatch
import re
from collections.abc import Callable, Collection, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from pq.errors import ConfigError
from pq.model import conditions
from pq.model.conditions import Condition
from pq.model.series import ACK_KEY, SERIES_FILE, PatchEntry, Series

COMPAT_GAP = "compat-gap"
UPSTREAM_PRIVATE = "upstream-private"
BUILD_ENTRY = "build-entry"
KINDS = (COMPAT_GAP, UPSTREAM_PRIVATE, BUILD_ENTRY)

REQUIRED = ("kind", "covers", "reason", "remove_when", "issue", "marker")
KEYS = ("kind", "covers", "reason", "remove_when", "issue", "mre", "marker")
NOT_NEEDED = "not-needed"
NO_MARKER = "none"

Fail = Callable[..., ConfigError]  # (key, message, hint=None, sub=()) -> located error


@dataclass(frozen=True)
class Cover:
    path: str
    symbol: str | None = None

    def __str__(self) -> str:
        return f"{self.path}::{self.symbol}" if self.symbol else self.path

    def matches(self, path: str) -> bool:
        if self.path.endswith("/"):
            return path.startswith(self.path)
        if any(c in self.path for c in "*?["):
            return _glob_matches(self.path, path)
        return path == self.path


def uncovered(paths: Iterable[str], covers: Sequence[Cover]) -> list[str]:
    """Those of `paths` that no cover of `covers` matches, as trying each cover on each
    path would find, in time that does not grow with the number of covers: plain paths
    and folders are looked up in a set, and a glob is tried only on paths that start with
    its characters before the first `*`, `?` or `[` (`pkg/d3/f` for `pkg/d3/f*.py`)."""
    plain = {c.path for c in covers if not any(ch in c.path for ch in "*?[")}
    globs: dict[str, list[Cover]] = {}
    for c in covers:
        if c.path not in plain:
            lead = next(i for i, ch in enumerate(c.path) if ch in "*?[")
            globs.setdefault(c.path[:lead], []).append(c)
    leads = sorted({len(lead) for lead in globs})

    def covered(path: str) -> bool:
        folders = [path[:i + 1] for i, ch in enumerate(path) if ch == "/"]
        return path in plain or any(f in plain for f in folders) or any(
            g.matches(path) for n in leads if n <= len(path) for g in globs.get(path[:n], ()))
    return [p for p in paths if not covered(p)]


def _glob_matches(pattern: str, path: str) -> bool:
    """Whether `path` matches a `covers` glob as git matches a glob pathspec: the path
    itself, or segment by segment, where `*`, `?` and `[...]` never cross a `/`, a `**`
    segment stands for any number of folders, and a trailing `/**` for what is inside."""
    return pattern == path or _segments(tuple(pattern.split("/")), tuple(path.split("/")))


@lru_cache(maxsize=4096)
def _segments(pattern: tuple[str, ...], path: tuple[str, ...]) -> bool:
    if not pattern:
        return not path
    head, rest = pattern[0], pattern[1:]
    if head == "**":
        if not rest:
            return bool(path)  # `dir/**`: everything inside, not `dir` itself
        return any(_segments(rest, path[i:]) for i in range(len(path) + 1))
    return bool(path) and fnmatch.fnmatchcase(path[0], head) and _segments(rest, path[1:])


@dataclass(frozen=True)
class Issue:
    url: str | None = None
    not_needed: str | None = None  # why no Paddle issue is needed

    def __str__(self) -> str:
        return self.url if self.url else f"{NOT_NEEDED}: {self.not_needed}"


@dataclass(frozen=True)
class Workaround:
    """A validated `workaround` block; a field that is absent (or empty) is None."""

    patch: str
    index: int  # the entry's position in series.yaml's `patches`
    kind: str | None
    covers: tuple[Cover, ...] | None
    reason: str | None
    remove_when: tuple[Condition, ...] | None
    issue: Issue | None
    mre: str | None
    marker: str | None
    missing: tuple[str, ...]
    no_marker: str | None = None  # `marker: "none: <why>"`: why the code carries none

    def needs_mre_run(self) -> bool:
        return bool(self.mre) and any(c.kind == conditions.MRE_PASSES
                                      for c in self.remove_when or ())


def read_all(series: Series) -> dict[str, Workaround]:
    """Every patch's workaround block, by patch name; the first malformed one raises."""
    out = {}
    for i, entry in enumerate(series.patches):
        wa = read(series, i, entry)
        if wa is not None:
            out[entry.name] = wa
    return out


def read(series: Series, index: int, entry: PatchEntry) -> Workaround | None:
    block = entry.workaround
    if block is None:
        return None
    at: tuple[str | int, ...] = ("patches", index, "workaround")

    def fail(key: str | None, message: str, hint: str | None = None,
             sub: tuple[str | int, ...] = ()) -> ConfigError:
        path = at + ((key,) if key else ()) + sub
        return series.error(path, f"patch {entry.name}: workaround {message}", hint)

    for key in block:
        if key not in KEYS and not str(key).startswith("x-"):
            close = difflib.get_close_matches(str(key), KEYS, n=1)
            hint = f"did you mean `{close[0]}`?" if close else "known keys: " + ", ".join(KEYS)
            raise fail(key, f"has an unknown key `{key}`", hint)

    kind = _text(block, "kind", fail)
    if kind is not None and kind not in KINDS:
        raise fail("kind", f"kind {kind!r} is not one of {', '.join(KINDS)}",
                   "compat-gap: Paddle's compat layer lacks a public API; upstream-private: "
                   "upstream relies on PyTorch internals; build-entry: a chosen build entry")
    reason = _text(block, "reason", fail)
    marker = _text(block, "marker", fail)
    no_marker = None
    if marker is not None and re.match(r"(?i)^none\s*(?::|$)", marker):
        no_marker = marker[len(NO_MARKER):].lstrip(" :").strip()
        if not no_marker:
            raise fail("marker", "`marker: none` must say why the code carries no marker",
                       "write `marker: \"none: <why>\"`, or the TODO text the code carries")
        marker = None
    covers = _covers(block, fail)
    remove_when = _conditions(block, fail)
    issue = _issue(block, fail)
    mre = _mre(block, fail, series)
    values: dict[str, Any] = {"kind": kind, "covers": covers, "reason": reason,
                              "remove_when": remove_when, "issue": issue, "marker": marker}
    missing = tuple(k for k in REQUIRED if values[k] is None
                    and not (k == "marker" and no_marker))
    return Workaround(patch=entry.name, index=index, kind=kind, covers=covers, reason=reason,
                      remove_when=remove_when, issue=issue, mre=mre, marker=marker,
                      missing=missing, no_marker=no_marker)


def _text(block: dict[str, Any], key: str, fail: Fail) -> str | None:
    value = block.get(key)
    if value is None:
        return None
    if not isinstance(value, str):
        raise fail(key, f"`{key}` must be text", "quote it if YAML read it as something else")
    return value.strip() or None


def _blank(value: Any) -> bool:
    """A required field left empty (`""`, `[]`): missing, a finding, not a format error."""
    return value is None or value == [] or (isinstance(value, str) and not value.strip())


def _covers(block: dict[str, Any], fail: Fail) -> tuple[Cover, ...] | None:
    value = block.get("covers")
    if _blank(value):
        return None
    if isinstance(value, str):
        value = [value]
    if not isinstance(value, list):
        raise fail("covers", "`covers` must be a list of files (optionally `file::symbol`)")
    out = []
    for j, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise fail("covers", "`covers` entries must be paths such as `pkg/x.py` or "
                       "`pkg/x.py::func`", sub=(j,))
        path, _, symbol = item.strip().partition("::")
        path = path.strip()
        if not path or path.startswith("/") or ".." in path.split("/") or "\0" in path:
            raise fail("covers", f"covers {item!r}: not a path inside the repository",
                       "paths are relative to the repository root", sub=(j,))
        # `./pkg/x.py`, `pkg//x.py`: the path git's pathspec reads there
        parts = [part for part in path.split("/") if part not in ("", ".")]
        if not parts:
            raise fail("covers", f"covers {item!r} is the whole repository",
                       "name the files the workaround touches", sub=(j,))
        path = "/".join(parts) + ("/" if path.endswith(("/", "/.")) else "")
        out.append(Cover(path, symbol.strip() or None))
    return tuple(out) or None


def _conditions(block: dict[str, Any], fail: Fail) -> tuple[Condition, ...] | None:
    value = block.get("remove_when")
    if _blank(value):
        return None
    items = value if isinstance(value, list) else [value]
    out = []
    for j, item in enumerate(items):
        try:
            out.append(conditions.parse(item))
        except conditions.ConditionSyntaxError as exc:
            raise fail("remove_when", f"remove_when: {exc}", exc.hint,
                       sub=(j,) if isinstance(value, list) else ()) from None
    return tuple(out) or None


_URL = re.compile(r"https?://[^\s/?#@]+(?:[/?#]\S*)?")


def _issue(block: dict[str, Any], fail: Fail) -> Issue | None:
    value = block.get("issue")
    hint = "a Paddle issue URL, or `not-needed: <why no issue is needed>`"
    if value is None:
        return None
    if isinstance(value, dict):
        if set(value) != {NOT_NEEDED} or not isinstance(value[NOT_NEEDED], str):
            raise fail("issue", "`issue` must be a URL or `not-needed: <why>`", hint)
        value = f"{NOT_NEEDED}: {value[NOT_NEEDED]}"
    if not isinstance(value, str):
        raise fail("issue", "`issue` must be a URL or `not-needed: <why>`", hint)
    value = value.strip()
    if value.startswith(("https://", "http://")) and len(value.split()) == 1:
        if not _URL.fullmatch(value):  # `https://`, `https:///x`: no host
            raise fail("issue", f"issue {value!r} names no host", hint)
        return Issue(url=value)
    if value.startswith(NOT_NEEDED):
        why = value[len(NOT_NEEDED):].lstrip(" :").strip()
        if not why:
            raise fail("issue", "`not-needed` must say why no Paddle issue is needed",
                       "write `issue: \"not-needed: <why>\"`")
        return Issue(not_needed=why)
    if not value:
        return None
    raise fail("issue", f"issue {value!r} is neither a URL nor `not-needed: <why>`", hint)


def _mre(block: dict[str, Any], fail: Fail, series: Series) -> str | None:
    value = block.get("mre")
    if _blank(value):
        return None
    if not isinstance(value, str):
        raise fail("mre", "`mre` must be a path such as `mre/<name>/`")
    path = value.strip().rstrip("/")
    parts = path.split("/")
    if any(ord(c) < 0x20 or c == "\x7f" for c in path):  # (a finding prints it on a line)
        raise fail("mre", f"mre {value!r} holds a control character (a line break, a tab)",
                   "name the reproducer's folder with printable characters, e.g. `mre/<name>/`")
    if path.startswith("/") or ".." in parts or "." in parts or "\\" in path:
        raise fail("mre", f"mre {value!r} is not a path inside the repository",
                   "write it relative to the repository root, e.g. `mre/<name>/`")
    roots = [q for q in series.queue_paths if q not in ("series.yaml", "patches")]
    if not any(path == q or path.startswith(q + "/") for q in roots):
        raise fail("mre", f"mre {value!r} is outside the queue",
                   "keep reproducers under " + " or ".join(f"`{q}/`" for q in roots)
                   + " so that they travel with the series")
    return path


# -- acknowledged findings ------------------------------------------------------------

ACK_FIELDS = ("rule", "reason")


@dataclass(frozen=True)
class Acknowledgement:
    """`acknowledged: [{rule: WA014, reason: "..."}]` in a patch's entry: a reviewed finding
    (of any rule in pq.audit.rules.REGISTRY, audit or lint) that is reported as acknowledged
    and does not fail the audit, lint or the hook."""

    patch: str
    rule: str
    reason: str
    location: str  # series.yaml:LINE:COL of the item

    def to_data(self) -> dict[str, str]:
        return {"rule_id": self.rule, "patch": self.patch, "reason": self.reason,
                "location": self.location}


def read_acknowledgements(series: Series, rule_ids: Collection[str]) -> list[Acknowledgement]:
    """Every patch entry's `acknowledged` list; a malformed item, an unknown rule id or a
    missing reason is a ConfigError at its file:line:column."""
    out = []
    for i, entry in enumerate(series.patches):
        value = entry.raw.get(ACK_KEY)
        if value is None:
            continue
        at: tuple[str | int, ...] = ("patches", i, ACK_KEY)
        example = "write `- {rule: WA014, reason: \"why this finding is fine\"}`"
        if not isinstance(value, list):
            raise series.error(at, f"patch {entry.name}: `{ACK_KEY}` must be a list", example)
        seen: dict[str, str] = {}  # rule id: where this patch acknowledged it
        for j, item in enumerate(value):
            if not isinstance(item, dict):
                raise series.error(at + (j,), f"patch {entry.name}: each `{ACK_KEY}` item "
                                   "must be a mapping with `rule` and `reason`", example)
            for key in item:
                if key not in ACK_FIELDS:
                    raise series.error(at + (j, key), f"patch {entry.name}: `{ACK_KEY}` item "
                                       f"has an unknown key `{key}`", "it takes `rule` and "
                                       "`reason`")
            rule = item.get("rule")
            if not isinstance(rule, str) or rule.strip() not in rule_ids:
                close = difflib.get_close_matches(str(rule), list(rule_ids), n=1)
                hint = (f"did you mean {close[0]}?" if close else
                        "`pq audit workarounds` and `pq lint` name each finding's rule id "
                        "(WA001..WA017, LN001..LN013)")
                raise series.error(at + (j, "rule") if "rule" in item else at + (j,),
                                   f"patch {entry.name}: `{ACK_KEY}` names "
                                   + (f"no rule {rule!r}" if "rule" in item else "no `rule`"),
                                   hint)
            reason = item.get("reason")
            if not isinstance(reason, str) or not reason.strip():
                typed = reason is not None and not isinstance(reason, str)  # `reason: 5`
                raise series.error(at + (j, "reason") if "reason" in item else at + (j,),
                                   f"patch {entry.name}: acknowledging {rule.strip()} needs "
                                   "a `reason`" + (f" in words, not {type(reason).__name__}"
                                                   if typed else ""),
                                   "say why the finding is fine, for reviewers"
                                   + (" (in quotes)" if typed else ""))
            line, col = series.locate(at + (j,))
            where = SERIES_FILE if line is None else \
                f"{SERIES_FILE}:{line}" + (f":{col}" if col is not None else "")
            first = seen.get(rule.strip())
            if first is not None:
                raise series.error(at + (j,), f"patch {entry.name} acknowledges {rule.strip()} "
                                   f"twice (first at {first})",
                                   "keep one item per rule, with both reasons in it")
            seen[rule.strip()] = where
            out.append(Acknowledgement(entry.name, rule.strip(), " ".join(reason.split()),
                                       where))
    return out
