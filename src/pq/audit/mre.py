"""Reproducers: find them in the queue (working tree or a commit) and run them in isolation.

A reproducer is a folder with `run.sh` (exit 0: the API works now, the gap is closed;
non-zero: the gap is still there) or a single `.sh`/`.py` script. Each run copies it to a
temporary folder and runs it there with `PYTHON` set, a timeout and its output captured
(pq.git.process: its own process group, stopped as one on timeout).
"""

from __future__ import annotations

import os
import posixpath
import shutil
import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from pq.git import process
from pq.git.repo import Git
from pq.model.conditions import MreOutcome

ENTRY = "run.sh"
OUTPUT_LIMIT = 8000
_SKIP = ("__pycache__", ".git", "build", "*.egg-info", "*.so")


@dataclass(frozen=True)
class MreRun:
    path: str
    command: str
    exit_code: int | None
    timed_out: bool
    seconds: float
    output: str  # the last OUTPUT_LIMIT characters of stdout and stderr, interleaved
    error: str = ""  # why it could not start

    def outcome(self) -> MreOutcome:
        return MreOutcome(self.exit_code, self.timed_out, self.error)

    def to_data(self) -> dict[str, object]:
        return {"command": self.command, "exit_code": self.exit_code,
                "timed_out": self.timed_out, "seconds": round(self.seconds, 2),
                "output": self.output, "error": self.error or None}


class Source(Protocol):
    """Where the queue's reproducers are read from."""

    def problem(self, path: str) -> str | None: ...
    def files(self, path: str) -> dict[str, bytes]: ...
    def copy(self, path: str, dest: Path) -> None: ...


def _entry_problem(path: str, is_dir: bool, names: Sequence[str]) -> str | None:
    if is_dir:
        return None if ENTRY in names else f"reproducer {path}/ has no {ENTRY}"
    if path.endswith((".sh", ".py")):
        return None
    return f"reproducer {path} is neither a folder with {ENTRY} nor a .sh/.py script"


class WorktreeSource:
    """Reproducers as they are in the working tree: a build's leftovers there (`build/`, a
    `.so`, `__pycache__`; `_SKIP`) stay behind unless git tracks them, as a commit's tree
    (`TreeSource`) has only what was committed."""

    def __init__(self, root: Path, git: Git) -> None:
        self.root = root
        self.git = git

    def _left_out(self, path: str) -> Callable[[str], bool]:
        """Whether a file or folder under reproducer `path` (its path from there) stays
        behind: a name in `_SKIP`, with no file git tracks at or under it."""
        tracked = [t[len(path) + 1:] for t in self.git.ls_files([path], literal=True)]
        return lambda rel: _skipped(tuple(rel.split("/"))) and not any(
            t == rel or t.startswith(rel + "/") for t in tracked)

    def problem(self, path: str) -> str | None:
        p = self.root / path
        top = os.path.realpath(self.root)
        if any(os.path.commonpath([top, os.path.realpath(f)]) != top
               for f in [p, *(p.rglob("*") if p.is_dir() else [])]):
            # a symbolic link on the way or inside (mre/x -> /elsewhere, run.sh -> /x.sh):
            # not the repository's to run
            return (f"reproducer {path} leads outside the repository (a symbolic link "
                    "on its path or in it): keep the reproducer's files in the repository")
        if (p / ENTRY).is_file():
            return None
        if p.is_dir():
            return _entry_problem(path, True, [])
        if p.is_file():
            return _entry_problem(path, False, [])
        return f"reproducer {path} does not exist"

    def files(self, path: str) -> dict[str, bytes]:
        p = self.root / path
        if p.is_file():
            return {p.name: p.read_bytes()}
        out, left_out = {}, self._left_out(path)
        for f in sorted(p.rglob("*")):
            rel = f.relative_to(p).as_posix()
            if f.is_file() and not f.is_symlink() and not left_out(rel):
                out[rel] = f.read_bytes()
        return out

    def copy(self, path: str, dest: Path) -> None:
        p = self.root / path
        if p.is_file():
            dest.mkdir(parents=True, exist_ok=True)
            shutil.copy2(p, dest / p.name)
            return
        left_out = self._left_out(path)

        def ignore(folder: str, names: list[str]) -> set[str]:
            at = Path(folder).relative_to(p).as_posix()
            return {n for n in names if left_out(n if at == "." else f"{at}/{n}")}

        shutil.copytree(p, dest, symlinks=True, ignore=ignore)


class TreeSource:
    """Reproducers as committed in one commit: what was pushed is what runs."""

    def __init__(self, git: Git, rev: str, paths: Sequence[str]) -> None:
        self.git = git
        self.rev = rev
        self.entries: list[tuple[str, str, str, str]] = []
        if paths:
            self.entries = git.ls_tree(rev, sorted(set(paths)))

    def _under(self, path: str) -> list[tuple[str, str, str]]:
        return [(mode, obj, p[len(path) + 1:]) for mode, kind, obj, p in self.entries
                if kind == "blob" and p.startswith(path + "/")]

    def problem(self, path: str) -> str | None:
        links = [(p, self.git.blob(obj)) for mode, kind, obj, p in self.entries
                 if mode == "120000" and (p == path or p.startswith(path + "/"))]
        if any(_leaves(p, os.fsdecode(target)) for p, target in links):
            return (f"reproducer {path} leads outside the repository (a symbolic link "
                    "in it): keep the reproducer's files in the repository")
        if any(p == path and kind == "blob" for _, kind, _, p in self.entries):
            return _entry_problem(path, False, [])
        under = self._under(path)
        if under:
            return _entry_problem(path, True, [rel for _, _, rel in under])
        return f"reproducer {path} is not in {self.rev[:12]}"

    def files(self, path: str) -> dict[str, bytes]:
        for _mode, kind, obj, p in self.entries:
            if p == path and kind == "blob":
                return {p.rsplit("/", 1)[-1]: self.git.blob(obj)}
        return {rel: self.git.blob(obj) for mode, obj, rel in self._under(path)
                if mode != "120000" and not _skipped(tuple(rel.split("/")))}

    def copy(self, path: str, dest: Path) -> None:
        dest.mkdir(parents=True, exist_ok=True)
        single = [(m, o, p.rsplit("/", 1)[-1]) for m, k, o, p in self.entries
                  if p == path and k == "blob"]
        for mode, obj, rel in single or self._under(path):
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            data = self.git.blob(obj)
            if mode == "120000":
                os.symlink(data.decode("utf-8", "surrogateescape"), target)
                continue
            target.write_bytes(data)
            os.chmod(target, 0o755 if mode == "100755" else 0o644)


def _leaves(link: str, target: str) -> bool:
    """Whether a committed symbolic link at `link` names a path outside the repository."""
    where = posixpath.normpath(posixpath.join(posixpath.dirname(link), target))
    return target.startswith("/") or where == ".." or where.startswith("../")


def _skipped(parts: Sequence[str]) -> bool:
    import fnmatch

    return any(fnmatch.fnmatch(part, pat) for part in parts for pat in _SKIP)


def command_for(path: str, python: str) -> list[str]:
    if path.endswith(".py"):
        return [python, path.rsplit("/", 1)[-1]]
    if path.endswith(".sh"):
        return ["bash", path.rsplit("/", 1)[-1]]
    return ["bash", ENTRY]


def run(source: Source, path: str, *, python: str, timeout: float,
        extra_env: dict[str, str] | None = None) -> MreRun:
    """Copy the reproducer to a temporary folder and run it there."""
    problem = source.problem(path)
    argv = command_for(path, python)
    shown = " ".join(argv) if argv[0] != python else "$PYTHON " + argv[1]
    if extra_env:
        shown = " ".join(f"{k}={v}" for k, v in sorted(extra_env.items())) + " " + shown
    if problem:
        return MreRun(path, shown, None, False, 0.0, "", problem)
    with tempfile.TemporaryDirectory(prefix="pq-mre-") as tmp:
        work = Path(tmp) / path.rstrip("/").rsplit("/", 1)[-1]
        if path.endswith((".py", ".sh")):
            work = Path(tmp) / "mre"
        source.copy(path, work)
        env = process.scrubbed_env({"PYTHON": python, "PQ_MRE": path, **(extra_env or {})})
        env.pop("LC_ALL", None)  # git's C locale is pq's, not the reproducer's
        try:
            done = process.run(argv, timeout=timeout, cwd=str(work), env=env)
        except OSError as exc:
            return MreRun(path, shown, None, False, 0.0, "", f"cannot start: {exc.strerror}")
    text = done.stdout.decode("utf-8", "replace")
    if len(text) > OUTPUT_LIMIT:
        text = "...\n" + text[-OUTPUT_LIMIT:]
    return MreRun(path, shown, done.code, done.timed_out, done.seconds, text)
