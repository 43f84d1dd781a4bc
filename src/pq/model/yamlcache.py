"""Located YAML kept between commands: what `yamldoc.load` made of a file's exact bytes (the
plain data and where each value starts), stored as JSON under `.git/pq/yaml-cache/`.

Most commands read a series.yaml that an earlier command read too. Reading the entry back
costs a JSON parse (about a quarter of composing the file: 9 against 39 ms for 1000
patches) instead of importing PyYAML (~20 ms) and composing the file with it.

An entry is named by a digest of the bytes, of yamldoc's own code and of the PyYAML it runs
on (size and modification time of each, as a stat gives them): other bytes or another
parser name another entry, so a stale one can only go unused. Only what its reader accepts
is kept (series.loads: a series that loads), so a broken file is parsed, and reported at
its line and column, every time. An entry that does not read back as data of the expected
shape (cut short, edited by hand) is a miss. At most ENTRIES are kept; a new one removes
the oldest. The folder's name holds "cache", so snapshots (pq.oplog.snapshot) do not
carry it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
from functools import cache
from pathlib import Path
from typing import Any

from pq.atomic import oldest_first, write_atomic

FOLDER = "yaml-cache"
ENTRIES = 16
FORMAT = 1

Marks = dict[tuple[str | int, ...], tuple[int, int]]


@cache
def _salt() -> bytes:
    """pq's yamldoc and the PyYAML on sys.path, as a stat sees them (no module imported)."""
    h = hashlib.sha256(b"pq yaml-cache %d\0" % FORMAT)
    here = os.path.join(os.path.dirname(os.path.abspath(__file__)), "yamldoc.py")
    parser = next((p for p in (os.path.join(d or ".", "yaml", "__init__.py")
                               for d in sys.path) if os.path.isfile(p)), "")
    for path in (here, parser):
        try:
            st = os.stat(path)
        except OSError:
            continue
        h.update(b"%s\0%d\0%d\0" % (os.fsencode(path), st.st_size, st.st_mtime_ns))
    return h.digest()


def _entry(pq_dir: Path, text: bytes) -> Path:
    return pq_dir / FOLDER / (hashlib.sha256(_salt() + text).hexdigest() + ".json")


def get(pq_dir: Path, text: bytes) -> tuple[Any, Marks] | None:
    """(data, marks) kept for exactly `text`, or None."""
    try:
        stored = json.loads(_entry(pq_dir, text).read_bytes())
        data, listed = stored["data"], stored["marks"]
        marks: Marks = {}
        for path, line, column in listed:
            if not (isinstance(path, list) and all(isinstance(p, (str, int)) for p in path)
                    and isinstance(line, int) and isinstance(column, int)):
                return None
            marks[tuple(path)] = (line, column)
    except (OSError, ValueError, RecursionError, TypeError, KeyError):
        return None
    return data, marks


def put(pq_dir: Path, text: bytes, data: Any, marks: Marks) -> None:
    """Keep (data, marks) for `text`; a folder that takes no file only costs time later."""
    entry = _entry(pq_dir, text)
    stored = {"data": data, "marks": [[list(p), *at] for p, at in marks.items()]}
    try:
        write_atomic(entry, json.dumps(stored, separators=(",", ":")).encode(),
                     durable=False)
        _prune(entry.parent)
    except OSError:
        pass


def _prune(folder: Path) -> None:
    """Remove the oldest entries beyond ENTRIES (another pq may prune them too)."""
    entries = oldest_first(folder, lambda _, entry: entry.suffix == ".json")
    for entry in entries[:max(0, len(entries) - ENTRIES)]:
        entry.unlink(missing_ok=True)
