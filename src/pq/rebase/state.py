"""A rebase in progress on disk: `.git/pq/rebase/state.json` (the steps, what became of
each, the phase, what to put back on `--abort`), and the checks that none is.

The state is written atomically before pq touches HEAD, the index or the working tree, so
that `--continue`, `--skip` and `--abort` (also after pq was killed) know where they stand;
the moves that do touch them live in rebase/worktree.py and rebase/landing.py.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from pq.atomic import write_atomic
from pq.errors import ConfigError
from pq.faults import checkpoint
from pq.git.repo import Git
from pq.model import series as series_mod
from pq.model.series import PATCHES_DIR, SERIES_FILE
from pq.oplog.snapshot import REBASE_STATE
from pq.queue.files import Queue
from pq.quoting import shell_args

STATE_VERSION = 1
# Phases: `replaying` (in memory; HEAD and files untouched unless `touched`), `stopping`
# (putting a conflict into the working tree), `conflict` (waiting for the user),
# `refused` (git would not show the conflict of the patch at `index`: --continue shows it
# again, --skip drops the patch), `landing` (moving the branch to the finished stack).
PHASES = ("replaying", "stopping", "conflict", "refused", "landing")


@dataclass
class Step:
    """One patch commit to replay, and what became of it."""

    name: str
    layer: str
    commit: str  # the patch commit C on the old base
    parent: str  # its parent P
    pick: str  # C itself, or a copy whose queue files are P's (mixed commits)
    outcome: str | None = None  # clean, merged, dropped, conflict, skipped
    new_commit: str | None = None
    rerere: bool = False
    # The files resolved from recorded resolutions (rerere.Resolution.to_dict()).
    rerere_files: list[dict[str, Any]] = field(default_factory=list)
    upstream_commit: str | None = None
    applied_in: str | None = None  # kept, though upstream applied it here (same patch-id)
    reverted_in: str | None = None  # ... and reverted it here


@dataclass
class RebaseState:
    command: str
    branch: str  # refs/heads/<name>
    orig_head: str
    old_base: str
    onto: str
    onto_ref: str
    upstream_count: int
    prev_orig_head: str | None  # refs/pq/orig-head/<branch> before, restored on abort
    queue_before: dict[str, str]  # series.yaml and patches/* in the working tree, as blobs
    steps: list[Step]
    tip: str  # the replayed stack so far
    index: int = 0  # the next step to replay, or the conflicted one
    phase: str = "replaying"
    touched: bool = False  # HEAD, index or working tree may have been changed
    detached: bool = False  # HEAD was detached to show a conflict
    conflict_paths: list[str] = field(default_factory=list)
    # git's messages of a conflict that leaves no file conflicted (MergeResult.notes).
    conflict_notes: list[str] = field(default_factory=list)
    new_tip: str | None = None
    gate: bool = False
    # The index entries of series.yaml and patches/*.patch (`git ls-files -s` lines) when
    # the rebase started, put back by --abort (None in states of older versions).
    index_before: list[str] | None = None
    prev_legacy_orig_head: str | None = None  # the old all-branches refs/pq/orig-head
    rerere: bool = True  # false: `--no-rerere` (no recording, no reuse), also on --continue
    # The log entry of the `pq rebase` that started it: its stops, and those of each
    # --continue, are the entries from there on (None in states of older versions).
    log_id: int | None = None
    # The worktree it runs in (Gateway.worktree; None in states of older versions): the
    # state is shared by every worktree of the repository, its HEAD, index and files are
    # that one's.
    worktree: dict[str, str] | None = None
    # Those of queue_before with an executable bit on disk (a chmod of the user's): --abort
    # puts the bits back too (None in states of older versions: modes are left alone).
    queue_executable: list[str] | None = None
    # An abort began putting the branch and its files back (one killed half-way: the next
    # --abort finishes it, whatever the files hold).
    aborting: bool = False
    # The series' queue paths when it started (None in states of older versions: read from
    # queue_before's series.yaml): --abort, --continue and `pq status` need no series parse.
    queue_paths: list[str] | None = None
    # The other worktrees (WorkingTree.worktree_key) that had the branch checked out when it
    # started (`git worktree add --force`): not refused as added while it was stopped.
    shared_with: list[str] = field(default_factory=list)
    # {conflicted path: its rerere id} at the stop (.git/MERGE_RR then): a resolution
    # committed by hand is recorded by git's commit, which empties MERGE_RR before pq reads it.
    conflict_ids: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> bytes:
        # Shallow: asdict's deep copy was most of a save's time (every value here is a
        # str, int, bool, None, or the plain lists and dicts JSON holds).
        data: dict[str, Any] = {"version": STATE_VERSION, **_fields(self)}
        data["steps"] = [_fields(step) for step in self.steps]
        # One line: json.dumps with an indent runs in pure Python, ~5x slower.
        return (json.dumps(data, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, raw: bytes, where: str) -> RebaseState:
        try:
            data: dict[str, Any] = json.loads(raw)
            if not isinstance(data, dict) or data.pop("version", None) != STATE_VERSION:
                raise ValueError("unknown version")
            _require_shape(data)
            data["steps"] = [Step(**s) for s in data["steps"]]
            state = cls(**data)
        except (ValueError, TypeError, KeyError, RecursionError) as exc:
            raise ConfigError(f"unreadable rebase state ({exc})", path=where,
                              hint="a different pq version wrote it, or it was damaged: "
                                   "finish the rebase with that version; or delete the file, "
                                   "run `git reset --merge`, and `pq undo --force` goes back "
                                   "to before the rebase") from None
        if state.phase not in PHASES:
            raise ConfigError(f"unknown rebase phase {state.phase!r}", path=where)
        return state

    @property
    def short_branch(self) -> str:
        return self.branch.removeprefix("refs/heads/")


_SHAPE: dict[str, type | tuple[type, ...]] = {
    "command": str, "branch": str, "orig_head": str, "old_base": str, "onto": str,
    "onto_ref": str, "upstream_count": int, "tip": str, "index": int, "phase": str,
    "touched": bool, "detached": bool, "gate": bool, "rerere": bool,
    "prev_orig_head": (str, type(None)), "new_tip": (str, type(None)),
    "prev_legacy_orig_head": (str, type(None)), "log_id": (int, type(None)),
    "worktree": (dict, type(None)), "index_before": (list, type(None)),
    "conflict_paths": list, "conflict_notes": list, "queue_before": dict, "steps": list,
    "queue_executable": (list, type(None)), "aborting": bool,
    "queue_paths": (list, type(None)), "shared_with": list, "conflict_ids": dict}


_STEP_SHAPE: dict[str, type | tuple[type, ...]] = {
    "name": str, "layer": str, "commit": str, "parent": str, "pick": str, "rerere": bool,
    "rerere_files": list, **{key: (str, type(None)) for key in (
        "outcome", "new_commit", "upstream_commit", "applied_in", "reverted_in")}}


def _require_shape(data: dict[str, Any]) -> None:
    """ValueError unless each value has its type, and every file the abort writes back is a
    queue file (series.yaml, patches/*.patch): a damaged state writes nowhere else."""
    for key, kind in _SHAPE.items():
        if key in data and not isinstance(data[key], kind):
            raise ValueError(f"{key} is a {type(data[key]).__name__}")
    if "queue_before" in data and SERIES_FILE not in data["queue_before"]:
        raise ValueError(f"queue_before has no {SERIES_FILE}")
    for path, blob in data.get("queue_before", {}).items():
        if not (isinstance(blob, str) and (path == SERIES_FILE or re.fullmatch(
                rf"{PATCHES_DIR}/[^/]+\.patch", path))):
            raise ValueError(f"queue_before names {path!r}")
    for path in data.get("queue_paths") or []:  # as series.yaml's own are checked
        if not (isinstance(path, str) and path and not path.startswith("/")
                and ".." not in path.split("/") and path.split("/")[0] != ".git"):
            raise ValueError(f"queue_paths names {path!r}")
    if not set(data.get("queue_executable") or []) <= set(data.get("queue_before", {})):
        raise ValueError("queue_executable names a file queue_before does not")
    if not all(isinstance(s, dict) for s in data.get("steps", [])) or not all(
            isinstance(p, str) for p in [*data.get("conflict_paths", []),
                                         *data.get("conflict_notes", []),
                                         *data.get("shared_with", []),
                                         *data.get("conflict_ids", {}).keys(),
                                         *data.get("conflict_ids", {}).values(),
                                         *(data.get("index_before") or [])]):
        raise ValueError("a step, a conflicted path, a conflict's note, an index entry or a "
                         "worktree of another shape")
    for number, step in enumerate(data.get("steps", []), 1):
        for key, kind in _STEP_SHAPE.items():
            if key in step and not isinstance(step[key], kind):
                raise ValueError(f"step {number}'s {key} is a {type(step[key]).__name__}")
        if not series_mod.NAME_RE.match(str(step.get("name", ""))):
            raise ValueError(f"step {number} names no patch file ({step.get('name')!r})")
        if not all(isinstance(f, dict) for f in step.get("rerere_files", [])):
            raise ValueError(f"step {number}'s rerere_files hold another shape")
    if not all(isinstance(k, str) and isinstance(v, str)
               for k, v in (data.get("worktree") or {}).items()):
        raise ValueError("worktree holds a value that is no text")
    index, steps = data.get("index", 0), data.get("steps", [])
    # The step to replay next, or the stopped one; past the last only once all are done.
    last = len(steps) - (1 if data.get("phase") in ("conflict", "refused") else 0)
    if isinstance(index, bool) or not 0 <= index <= last:
        raise ValueError(f"index {index!r} is outside the {len(steps)} steps")


def _fields(obj: Step | RebaseState) -> dict[str, Any]:
    return {f.name: getattr(obj, f.name) for f in fields(obj)}


def new_upstream(old_base: str, onto: str) -> tuple[str, str, str]:
    """The upstream commits a rebase onto `onto` brings in, as `git log` arguments: those
    `old_base` lacks, less the copies of its own (the same patch id on both sides): where
    upstream rewrote its history (`--force`), a rewritten commit the series base already
    had is no change of upstream's, and a patch that matches one is not upstream's."""
    return "--cherry-pick", "--right-only", f"{old_base}...{onto}"


def state_path(git: Git) -> Path:
    return git.pq_dir() / REBASE_STATE


def load(git: Git) -> RebaseState | None:
    path = state_path(git)
    if not path.is_file():
        return None
    return RebaseState.from_json(path.read_bytes(), str(path))


def save(git: Git, state: RebaseState) -> None:
    write_atomic(state_path(git), state.to_json())


def remove(git: Git) -> None:
    """Forget the rebase: the state file, and any half-written one a killed pq left."""
    folder = state_path(git).parent
    if folder.is_dir():
        for p in folder.iterdir():
            checkpoint("unlink " + p.name)
            p.unlink()
        folder.rmdir()


def gone_worktree(git: Git, state: RebaseState) -> str | None:
    """The path of the other worktree the rebase ran in, when that worktree is gone
    (`git worktree remove`, or its folder deleted): nothing of the stop is left but the
    state and the refs, and `pq rebase --abort` ends it from any worktree."""
    return git.other_worktree(state.worktree) if git.worktree_gone(state.worktree) else None


def load_required(git: Git, gone_ok: bool = False) -> RebaseState:
    """The rebase in progress, refused unless it runs in this working tree (`gone_ok`: or
    in one that is gone)."""
    state = load(git)
    if state is None:
        raise ConfigError("no pq rebase in progress",
                          hint="start one with `pq rebase <upstream-ref>`")
    elsewhere = git.other_worktree(state.worktree)
    gone = gone_worktree(git, state)
    if gone is not None and not gone_ok:
        raise ConfigError(f"the pq rebase in progress ran in the worktree {gone}, which is "
                          "gone", hint="`pq rebase --abort` ends it from here (the branch "
                          f"goes back to {state.orig_head[:12]}; this worktree is not touched)")
    if elsewhere is not None and gone is None:
        raise ConfigError(f"the pq rebase in progress runs in the worktree {elsewhere}, not "
                          f"in this one ({git.root})",
                          hint=f"run `pq rebase --continue`, `--skip` or `--abort` there "
                               f"(`cd {shell_args([elsewhere])}`)")
    return state


def queue_before(git: Git, state: RebaseState) -> Queue:
    """The queue as the working tree held it when the rebase started."""
    files = {path: git.blob(obj) for path, obj in state.queue_before.items()}
    series = series_mod.loads(files[SERIES_FILE], SERIES_FILE, git.pq_dir())
    return Queue(series, {e.name: files.get(f"{PATCHES_DIR}/{e.name}", b"")
                          for e in series.patches})


def queue_paths_before(git: Git, state: RebaseState) -> tuple[str, ...]:
    """The series' queue paths as the working tree held them when the rebase started (as
    the state recorded them; in a state of an older version, from its series.yaml alone)."""
    if state.queue_paths is not None:
        return tuple(state.queue_paths)
    text = git.blob(state.queue_before[SERIES_FILE])
    return series_mod.loads(text, SERIES_FILE, git.pq_dir()).queue_paths


def require_none(git: Git) -> None:
    path = state_path(git)
    if path.is_file():
        state = load(git)
        elsewhere = git.other_worktree(state.worktree) if state is not None else None
        if state is not None and gone_worktree(git, state) is not None:
            raise ConfigError(f"a pq rebase is in progress in the worktree {elsewhere}, "
                              "which is gone", hint="`pq rebase --abort` ends it from here")
        raise ConfigError("a pq rebase is already in progress"
                          + (f" in the worktree {elsewhere}" if elsewhere else ""),
                          hint=(f"`cd {shell_args([elsewhere])}`, then " if elsewhere else "")
                          + "`pq rebase --continue`, `pq rebase --skip` or "
                            "`pq rebase --abort`")
    require_no_git_operation(git)


def require_no_git_operation(git: Git) -> None:
    """Refuse while git itself is in the middle of an operation: a commit pq wrote now
    would land on a half-done one."""
    if (found := git.operation_in_progress()) is not None:
        raise ConfigError(f"git has an operation in progress ({found[1]})",
                          hint="finish or abort it first (`git status` says how)")


@contextmanager
def cleanup_unless_touched(git: Git, state: RebaseState) -> Iterator[None]:
    """On an error before HEAD or the working tree changed, leave no rebase behind."""
    try:
        yield
    except BaseException:
        if not state.touched:
            remove(git)
        raise

