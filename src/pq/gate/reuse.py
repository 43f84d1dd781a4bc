"""Stage reuse: the artifact cache under .git/pq, keyed on input fingerprints (gate/inputs).

A reusable stage (`inputs:`, or the stage named `build`) whose fingerprint matches a passing
run is not run again: that run's artifacts are restored and it is reported `reused`.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pq.gate import result as R
from pq.gate.config import Stage
from pq.gate.inputs import FORMAT, matches
from pq.git.odb import object_id

DEFAULT_MAX_BYTES = 2 << 30
CACHE_DIR = "gate-cache"
_META = "meta.json"
_FORMATS = {40: "sha1", 64: "sha256"}  # object id length: the object format
_FILES = "files"

Snapshot = dict[str, tuple[int, int, int, int]]  # path: (mtime ns, size, inode, mode)


# -- what a stage wrote ----------------------------------------------------------------------


def _walk(root: Path) -> tuple[Snapshot, set[str]]:
    """(mtime ns, size, inode, mode) of every file under root (a `chmod` changes no mtime),
    and its empty folders, its `.git` left out."""
    found: Snapshot = {}
    empty: set[str] = set()
    for folder, dirs, files in os.walk(root):
        if folder == str(root):
            dirs[:] = [d for d in dirs if d != ".git"]
        rel = os.path.relpath(folder, root)
        if rel != "." and not dirs and not files:
            empty.add(rel.replace(os.sep, "/"))
        links = [d for d in dirs if os.path.islink(os.path.join(folder, d))]  # not walked
        for name in files + links:
            if folder == str(root) and name == ".git":
                continue
            full = os.path.join(folder, name)
            try:
                st = os.lstat(full)
            except OSError:
                continue
            found[name if rel == "." else f"{rel}/{name}"] = (st.st_mtime_ns, st.st_size,
                                                              st.st_ino, st.st_mode)
    return found, empty


def written(after: Snapshot, before: Snapshot, patterns: tuple[str, ...] | None) -> list[str]:
    """The files of `after` that are new or changed since `before` (matching `patterns`)."""
    return sorted(p for p, st in after.items() if before.get(p) != st
                  and (patterns is None or matches(p, patterns)))


# -- the cache -------------------------------------------------------------------------------


@dataclass(frozen=True)
class Hit:
    commit: str
    files: int
    seconds: float


class StageCache:
    """Artifacts of passing runs under `<pq dir>/gate-cache/<fingerprint>/`: meta.json (the
    commit, the time, each file's size, mode and SHA-256) and the files; LRU by meta.json's
    mtime, at most `max_bytes` in all."""

    def __init__(self, root: Path, keys: Mapping[str, str], max_bytes: int = DEFAULT_MAX_BYTES,
                 *, lookup: bool = True, tracked: Mapping[str, str] | None = None,
                 executable: Iterable[str] = (),
                 before: Mapping[str, Sequence[str]] | None = None) -> None:
        self.root = root
        self.lookup = lookup  # False (`--force`): run every stage, refresh the entries
        self.keys = dict(keys)
        # {stage: the reusable stages configured before it}, whose fingerprints its key
        # holds: it is reused only after each of them was, and kept only after each of
        # them ran or was reused in the same run (`--stage` runs some alone).
        self.chain = {name: tuple(names) for name, names in (before or {}).items()}
        self.max_bytes = max_bytes
        # {path: blob id} of the files the tip tracks: a run that changed or deleted one
        # started from that blob, and is reused only where the tip has the same one.
        self.tracked = dict(tracked or {})
        self.executable = frozenset(executable)  # the tracked files of mode 100755
        self.notes: list[str] = []
        self._before: Snapshot = {}
        self._folders: set[str] = set()

    def key(self, stage: Stage) -> str | None:
        return self.keys.get(stage.name)

    def restore(self, stage: Stage, worktree: Path) -> Hit | None:
        """Restore a passing run's artifacts into the worktree; None when there is none (a
        damaged entry is removed, and anything it had restored is taken back)."""
        key = self.key(stage)
        if key is None or not self.lookup:
            return None
        entry = self.root / key
        if not (entry / _META).is_file():
            return None
        start = time.monotonic()
        placed: list[Path] = []
        try:
            meta = json.loads((entry / _META).read_text(encoding="utf-8"))
            if meta.get("format") != FORMAT:
                return None  # an older pq's entry: the stage runs, and its run replaces it
            if meta.get("key") != key:
                raise ValueError("not an entry of this pq")
            if any(item.get("base") != self.tracked.get(str(item["path"]))
                   for item in meta["files"]):
                return None  # it changed a tracked file this tip has other bytes of, or
                #              made one where this tip tracks a file: run it
            # What the stage removed goes first, deepest first: a folder it replaced by a
            # file (or a file by a folder) is out of the way before the new one comes.
            for item in sorted(meta["files"], key=lambda i: (not i.get("deleted"),
                                                             -str(i["path"]).count("/"))):
                rel, digest, mode = str(item["path"]), str(item.get("sha256")), \
                    int(item.get("mode", 0))
                if rel.startswith("/") or ".." in rel.split("/"):
                    raise ValueError(f"bad path {rel!r}")
                target = worktree / rel
                if item.get("deleted"):  # a file the stage removed
                    if not target.is_dir() or target.is_symlink():
                        target.unlink(missing_ok=True)
                    continue
                if item.get("folder"):  # an empty folder the stage made
                    target.mkdir(parents=True, exist_ok=True)
                    continue
                target.parent.mkdir(parents=True, exist_ok=True)
                if target.is_dir() and not target.is_symlink():
                    target.rmdir()  # emptied above; else an OSError: the stage runs
                placed.append(target)
                if "link" in item:  # a symbolic link the stage made (libfoo.so -> .so.1)
                    target.unlink(missing_ok=True)
                    os.symlink(str(item["link"]), target)
                    continue
                if _copy(entry / _FILES / rel, target) != digest:
                    raise ValueError(f"{rel}: content differs from its checksum")
                os.chmod(target, mode & 0o7777)
            commit = str(meta["commit"])
        except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError) as exc:
            for path in placed:
                with contextlib.suppress(OSError):
                    path.unlink(missing_ok=True)
            if isinstance(exc, OSError):  # a file this worktree has in the way, say: the
                self.notes.append(f"stage {stage.name}: cache entry {key[:12]} not restored "
                                  f"({exc}); the stage ran")  # entry stays for others
                return None
            shutil.rmtree(entry, ignore_errors=True)
            self.notes.append(f"stage {stage.name}: damaged cache entry {key[:12]} removed "
                              f"({exc}); the stage ran")
            return None
        os.utime(entry / _META)  # most recently used
        return Hit(commit, len(placed), time.monotonic() - start)

    def before(self, stage: Stage, worktree: Path) -> None:
        self._before, self._folders = _walk(worktree) if self.key(stage) else ({}, set())

    def save(self, stage: Stage, worktree: Path, commit: str) -> None:
        """Keep what a passing run of a reusable stage wrote, for the next run to restore."""
        key = self.key(stage)
        if key is None:
            return
        after, folders = _walk(worktree)
        files = written(after, self._before, stage.artifacts)
        size = sum((worktree / f).lstat().st_size for f in files)
        if size > self.max_bytes:
            self.notes.append(f"stage {stage.name}: artifacts of {_size(size)} exceed the "
                              f"gate cache size ({_size(self.max_bytes)}); not cached")
            return
        final = self.root / key
        tmp = self.root / f".tmp-{os.getpid()}-{key[:16]}"
        shutil.rmtree(tmp, ignore_errors=True)
        items: list[dict[str, Any]] = []
        for rel in files:
            src = worktree / rel
            base = self.tracked.get(rel)
            if base is not None and not src.is_symlink() and src.is_file() and \
                    bool(src.stat().st_mode & 0o100) == (rel in self.executable) and \
                    object_id("blob", src.read_bytes(), _FORMATS[len(base)]) == base:
                continue  # a tracked file as committed (touched, not changed): no artifact
            extra = {"base": base} if base is not None else {}
            if src.is_symlink():
                items.append({"path": rel, "link": os.readlink(src), **extra})
                continue
            if not src.is_file():
                continue
            dst = tmp / _FILES / rel
            dst.parent.mkdir(parents=True, exist_ok=True)
            items.append({"path": rel, "sha256": _copy(src, dst), "size": src.stat().st_size,
                          "mode": src.stat().st_mode & 0o7777, **extra})
        for rel in sorted(set(self._before) - set(after)):  # what the stage deleted
            if stage.artifacts is None or matches(rel, stage.artifacts):
                items.append({"path": rel, "deleted": True, **(
                    {"base": self.tracked[rel]} if rel in self.tracked else {})})
        for rel in sorted(folders - self._folders):
            if stage.artifacts is None or matches(rel, stage.artifacts):
                items.append({"path": rel, "folder": True})
        meta = {"format": FORMAT, "key": key, "stage": stage.name, "commit": commit,
                "time": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()), "size": size,
                "files": items}
        tmp.mkdir(parents=True, exist_ok=True)
        (tmp / _META).write_text(json.dumps(meta, indent=1, sort_keys=True) + "\n")
        shutil.rmtree(final, ignore_errors=True)
        try:
            os.rename(tmp, final)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
        prune(self.root, self.max_bytes)


def prune(root: Path, max_bytes: int) -> None:
    """Remove the least recently used entries until the cache holds at most max_bytes."""
    entries = []
    for entry in root.iterdir() if root.is_dir() else ():
        try:
            meta = entry / _META
            size = int(json.loads(meta.read_text(encoding="utf-8")).get("size", 0))
            entries.append((meta.stat().st_mtime_ns, size, entry))
        except (OSError, ValueError, AttributeError, RecursionError):
            if not entry.name.startswith(".tmp-"):
                shutil.rmtree(entry, ignore_errors=True)  # damaged: nothing to restore
    total = sum(size for _, size, _ in entries)
    for _, size, entry in sorted(entries, key=lambda e: e[0]):
        if total <= max_bytes:
            break
        shutil.rmtree(entry, ignore_errors=True)
        total -= size


def _size(n: int) -> str:
    """A byte count as a person reads it: 700 bytes, 12 KiB, 3.4 MiB, 2.0 GiB."""
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            return f"{n / (1 << shift):.1f} {unit}" if n < 10 << shift else \
                f"{n >> shift} {unit}"
    return f"{n} bytes"


def _copy(src: Path, dst: Path) -> str:
    """Copy a file, returning the SHA-256 of what was copied."""
    digest = hashlib.sha256()
    with open(src, "rb") as fin, open(dst, "wb") as fout:
        for chunk in iter(lambda: fin.read(1 << 20), b""):
            digest.update(chunk)
            fout.write(chunk)
    return digest.hexdigest()


def reused_result(stage: Stage, key: str, hit: Hit) -> R.StageResult:
    return R.StageResult(stage.name, R.REUSED, stage.requires, duration_s=round(hit.seconds, 3),
                         detail=f"reused from {hit.commit} ({hit.files} artifact files "
                         "restored)", inputs=key, reused_from=hit.commit)


def parse_size(text: str) -> int | None:
    """`2G`, `500M`, `1048576` -> bytes; None when it is not a size."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)i?[bB]?\s*", text, re.ASCII)
    if not m:
        return None
    scale = {"": 1, "k": 1 << 10, "m": 1 << 20, "g": 1 << 30, "t": 1 << 40}[m.group(2).lower()]
    try:
        return int(float(m.group(1)) * scale)
    except OverflowError:  # past float's range (hundreds of digits): no size a disk holds
        return None
