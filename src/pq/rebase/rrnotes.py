"""pq's notes beside git's recorded resolutions: which resolutions each pq operation
recorded or reused, for `pq rebase --forget PATH` and for what `pq undo` says.

They live in `.git/rr-cache/pq-paths.json` (git ignores names there that are no conflict
id). Not pq state: undo and abort leave the file, as they leave git's recorded
resolutions. A damaged file is no note, never a path to delete.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

from pq.errors import ConfigError
from pq.git.repo import Git
from pq.oplog.txn import Transaction, current_record_id
from pq.quoting import from_here, shell_args
from pq.rebase.rerere import Resolution, rr_cache, variants

CACHE_FILE = "pq-paths.json"


def _cache_path(git: Git) -> Path:
    return rr_cache(git) / CACHE_FILE


def _read_cache(git: Git) -> dict[str, dict[str, Any]]:
    """The file's entries of the shape pq writes, keyed by a conflict id (its rr-cache
    folder's name, `.N` for a variant); any other is no note: a damaged file names no
    folder to delete and no path to show."""
    try:
        data = json.loads(_cache_path(git).read_bytes())
    except (OSError, ValueError, RecursionError):  # not there, not a file, not JSON
        return {}
    if not isinstance(data, dict):
        return {}
    return {rid: e for rid, e in data.items() if _RR_ID.fullmatch(rid) and isinstance(e, dict)
            and isinstance(e.get("ops", []), list)
            and all(isinstance(op, int) for op in e.get("ops", []))
            and isinstance(e.get("paths", []), list) and isinstance(e.get("also", []), list)
            and all(isinstance(p, str) for p in [*e.get("paths", []), e.get("path", ""),
                                                 *e.get("also", [])])}


_RR_ID = re.compile(r"[0-9a-f]{40}(?:[0-9a-f]{24})?(?:\.[0-9]+)?")


def _write_cache(git: Git, data: dict[str, dict[str, Any]]) -> None:
    """Atomic, not durable (no fsync), as git writes rr-cache itself: after a crash the
    file is the old one or the new one, and losing the newest notes only costs `--forget`
    and `pq undo` the naming of those paths; its two fsyncs cost a rebase that reuses a
    resolution ~20 ms."""
    from pq.atomic import write_atomic

    write_atomic(_cache_path(git), (json.dumps(data, indent=1, sort_keys=True) + "\n").encode(),
                 durable=False)


def _exists(git: Git, rid: str) -> bool:
    return any(suffix == ("." + rid.partition(".")[2] if "." in rid else "")
               for suffix, _, _ in variants(rr_cache(git) / rid.partition(".")[0]))


def _paths(entry: dict[str, Any]) -> list[str]:
    """The paths an entry's resolution served (an older file's entry has one `path`)."""
    return list(entry.get("paths", [entry["path"]] if "path" in entry else []))


def remember(git: Git, resolutions: list[Resolution], also: list[str] | None = None) -> None:
    """Note that the running operation recorded or reused these resolutions. One
    resolution (one conflict id) can serve several paths whose conflicts hash alike: each
    is kept, and `--forget` of any of them forgets it, as `git rerere forget` does.
    `also` (recorded ones): the other files the resolution changed."""
    if not resolutions or not rr_cache(git).is_dir():
        return
    op = current_record_id(git)
    data = _read_cache(git)
    for r in resolutions:
        entry = data.setdefault(r.id, {"ops": []})
        entry["paths"] = sorted({*_paths(entry), r.path})
        entry.pop("path", None)
        if also is not None:
            entry["also"] = sorted(also)
        if op is not None and op not in entry.setdefault("ops", []):
            entry["ops"] = sorted([*entry["ops"], op])
    _write_cache(git, data)


def with_also(git: Git, resolutions: list[Resolution]) -> list[Resolution]:
    """`resolutions` (reused) with what each also changed when it was recorded."""
    data = _read_cache(git)
    for r in resolutions:
        r.also = [p for p in data.get(r.id, {}).get("also", []) if p != r.path]
    return resolutions


def paths_of_operation(git: Git, op: int) -> list[str]:
    """The paths whose resolutions operation `op` recorded or reused, still recorded."""
    return sorted({p for rid, e in _read_cache(git).items()
                   if op in e.get("ops", []) and _exists(git, rid) for p in _paths(e)})


def forget(git: Git, paths: list[str]) -> dict[str, list[str]]:
    """Remove the recorded resolutions pq recorded or reused for each of `paths`: their ids,
    per path. A path with none is refused before anything is removed."""
    with Transaction(git, "pq rebase --forget", mutating=False, index=False):
        data = _read_cache(git)
        ids = {path: [rid for rid in sorted(data) if path in _paths(data[rid])]
               for path in paths}
        for path, found in ids.items():
            if not found:
                raise ConfigError(
                    f"no recorded resolution of {path} that pq recorded or reused",
                    path=str(rr_cache(git)),
                    hint=f"for one git recorded on its own, run `git rerere forget "
                         f"{shell_args(from_here(git.root, [path]))}` while that conflict is in "
                         "the working tree (e.g. when a `pq rebase --no-rerere` stops on it); "
                         "nothing was forgotten")
        for rid in sorted({rid for found in ids.values() for rid in found}):
            cid, _, variant = rid.partition(".")
            folder = rr_cache(git) / cid
            suffix = f".{variant}" if variant else ""
            for name in ("preimage", "postimage", "thisimage"):
                (folder / (name + suffix)).unlink(missing_ok=True)
            if folder.is_dir() and not folder.is_symlink() and not variants(folder):
                import shutil  # `--forget` alone gets here

                shutil.rmtree(folder)
            del data[rid]
        _write_cache(git, data)
    return ids
