"""Workaround paths that follow upstream's renames.

`pq rebase` onto an upstream that renamed a file moves the patch's hunks to the new path
(git's rename detection, as `git rebase` does); the paths a workaround block names must
follow too, or the audit reports the patch outside its `covers` (WA007) and checks
`upstream-contains` against a file that is gone. This module owns that rewrite: `covers`
entries that name a renamed file exactly (`file` or `file::symbol`; folders and globs are
left alone) and `upstream-contains: <file>: <text>` conditions in `remove_when`.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace
from typing import Any

from pq.git.objects import printable
from pq.model.series import Series

UPSTREAM_CONTAINS = "upstream-contains"


def _path(item: str, renames: dict[str, str]) -> str:
    path, sep, symbol = item.partition("::")
    return renames[path] + sep + symbol if path in renames else item


def _condition(cond: Any, renames: dict[str, str]) -> Any:
    if isinstance(cond, dict) and len(cond) == 1 and UPSTREAM_CONTAINS in cond \
            and isinstance(cond[UPSTREAM_CONTAINS], str):
        file, sep, text = cond[UPSTREAM_CONTAINS].partition(":")
        if sep and file.strip() in renames:
            return {UPSTREAM_CONTAINS: f"{renames[file.strip()]}:{text}"}
    elif isinstance(cond, str):
        key, sep, rest = cond.partition(":")
        file, sep2, text = rest.partition(":")
        if sep and sep2 and key.strip() == UPSTREAM_CONTAINS and file.strip() in renames:
            return f"{key}: {renames[file.strip()]}:{text}"
    return cond


def follow(series: Series, renamed: Callable[[], dict[str, str]]) -> Series:
    """`series` with the paths its workaround blocks name renamed as upstream renamed them;
    `renamed()` gives {old path: new path}, asked only when a workaround block is there."""
    if not any(isinstance(e.workaround, dict) for e in series.patches):
        return series
    # series.yaml is UTF-8 text: a new name that is not (its bytes read with
    # surrogateescape) cannot be written there, so the block keeps the old one.
    renames = {old: new for old, new in renamed().items() if printable(new) == new}
    if not renames:
        return series
    entries = []
    for entry in series.patches:
        w = entry.workaround
        if isinstance(w, dict):
            new = dict(w)
            covers = w.get("covers")
            if isinstance(covers, str):
                new["covers"] = _path(covers, renames)
            elif isinstance(covers, list):
                new["covers"] = [_path(c, renames) if isinstance(c, str) else c
                                 for c in covers]
            remove_when = w.get("remove_when")
            if isinstance(remove_when, list):
                new["remove_when"] = [_condition(c, renames) for c in remove_when]
            elif remove_when is not None:
                new["remove_when"] = _condition(remove_when, renames)
            if new != w:
                entry = replace(entry, workaround=new)
        entries.append(entry)
    return replace(series, patches=tuple(entries))
