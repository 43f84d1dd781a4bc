"""A rebase in progress on disk: `.git/pq/rebase/state.json`, and the moves of HEAD.

The state is written atomically before pq touches HEAD, the index or the working tree, so
that `--continue`, `--skip` and `--abort` (also after pq was killed) know where they stand;
the few moves that do touch them (conflict, landing, abort) live here, in that order.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from pq.atomic import write_atomic
from pq.errors import ConfigError, GitError, OperationFailed
from pq.faults import checkpoint
from pq.git.repo import Git
from pq.model import series as series_mod
from pq.model.series import PATCHES_DIR, SERIES_FILE
from pq.queue.files import Queue, index_entries, reset_to_head
from pq.rebase import rerere as rerere_mod

STATE_VERSION = 1
# The tip a branch had before pq last moved it: refs/pq/orig-head/<branch>. Older pq kept
# one ref for all branches, refs/pq/orig-head: still read, and removed on the next write
# (git cannot keep a ref and a folder of refs under the same name).
ORIG_HEAD_REF = "refs/pq/orig-head"

# Phases: `replaying` (in memory; HEAD and files untouched unless `touched`), `stopping`
# (putting a conflict into the working tree), `conflict` (waiting for the user),
# `landing` (moving the branch to the finished stack).
PHASES = ("replaying", "stopping", "conflict", "landing")


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
    new_tip: str | None = None
    gate: bool = False
    # The index entries of series.yaml and patches/*.patch (`git ls-files -s` lines) when
    # the rebase started, put back by --abort (None in states of older versions).
    index_before: list[str] | None = None
    prev_legacy_orig_head: str | None = None  # the old all-branches refs/pq/orig-head
    rerere: bool = True  # false: `--no-rerere` (no recording, no reuse), also on --continue

    def to_json(self) -> bytes:
        data = {"version": STATE_VERSION, **asdict(self)}
        return (json.dumps(data, indent=1, sort_keys=True) + "\n").encode()

    @classmethod
    def from_json(cls, raw: bytes, where: str) -> RebaseState:
        try:
            data: dict[str, Any] = json.loads(raw)
            if data.pop("version", None) != STATE_VERSION:
                raise ValueError("unknown version")
            data["steps"] = [Step(**s) for s in data["steps"]]
            state = cls(**data)
        except (ValueError, TypeError, KeyError) as exc:
            raise ConfigError(f"unreadable rebase state ({exc})", path=where,
                              hint="a different pq version wrote it; finish the rebase with "
                                   "that version, or delete the file and restore the branch "
                                   "by hand") from None
        if state.phase not in PHASES:
            raise ConfigError(f"unknown rebase phase {state.phase!r}", path=where)
        return state

    @property
    def short_branch(self) -> str:
        return self.branch.removeprefix("refs/heads/")


def orig_head_ref(branch: str) -> str:
    return f"{ORIG_HEAD_REF}/{branch.removeprefix('refs/heads/')}"


def read_orig_head(git: Git, branch: str) -> str | None:
    """The branch's previous tip: its own ref, or the old all-branches one."""
    return git.try_resolve(orig_head_ref(branch)) or git.try_resolve(ORIG_HEAD_REF)


def set_orig_head(git: Git, branch: str, commit: str | None, message: str) -> None:
    """Set (None: delete) refs/pq/orig-head/<branch>; the old all-branches ref goes."""
    ref = orig_head_ref(branch)
    if commit is None:
        if git.try_resolve(ref) is not None:
            git.delete_ref(ref)
        return
    if git.try_resolve(ORIG_HEAD_REF) is not None:
        git.delete_ref(ORIG_HEAD_REF)
    if git.try_resolve(ref) != commit:
        git.update_ref(ref, commit, message=message)


def state_path(git: Git) -> Path:
    return git.pq_dir() / "rebase" / "state.json"


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


def load_required(git: Git) -> RebaseState:
    state = load(git)
    if state is None:
        raise ConfigError("no pq rebase in progress",
                          hint="start one with `pq rebase <upstream-ref>`")
    return state


def queue_before(git: Git, state: RebaseState) -> Queue:
    """The queue as the working tree held it when the rebase started."""
    files = {path: git.blob(obj) for path, obj in state.queue_before.items()}
    series = series_mod.loads(files[SERIES_FILE], SERIES_FILE)
    return Queue(series, {e.name: files.get(f"{PATCHES_DIR}/{e.name}", b"")
                          for e in series.patches})


def list_paths(paths: list[str]) -> str:
    return ", ".join(paths[:5]) + (f" and {len(paths) - 5} more" if len(paths) > 5 else "")


def require_none(git: Git) -> None:
    state = state_path(git)
    if state.is_file():
        raise ConfigError("a pq rebase is already in progress",
                          hint="`pq rebase --continue`, `pq rebase --skip` or "
                               "`pq rebase --abort`")
    for name in ("rebase-merge", "rebase-apply", "MERGE_HEAD", "CHERRY_PICK_HEAD"):
        if (git.git_dir / name).exists():
            raise ConfigError(f"git has an operation in progress ({name})",
                              hint="finish or abort it first (`git status` says how)")


def require_clean_queue_dirs(git: Git, folders: list[str]) -> None:
    """Tracked files in mre/ and the other queue folders leave the working tree during a
    conflict; uncommitted edits there would stop that, so refuse them up front."""
    if not folders:
        return
    dirty = git.diff_names("HEAD", paths=folders)
    if dirty:
        raise ConfigError(f"uncommitted changes in {dirty[0]}; pq rebase would not carry "
                          "them", hint="commit them first, then run it again")


# -- the queue files in the working tree ------------------------------------------------


def worktree_queue_files(git: Git) -> dict[str, bytes]:
    """series.yaml and the patch files (patches/*.patch), as they are on disk; other files
    in patches/ are the user's, and pq leaves them alone."""
    files: dict[str, bytes] = {}
    sp = git.root / SERIES_FILE
    if sp.is_file():
        files[SERIES_FILE] = sp.read_bytes()
    pdir = git.root / PATCHES_DIR
    if pdir.is_dir():
        for p in sorted(pdir.iterdir()):
            if p.name.endswith(".patch") and p.is_file() and not p.is_symlink():
                files[f"{PATCHES_DIR}/{p.name}"] = p.read_bytes()
    return files


def save_queue_files(git: Git, committed: dict[str, str]) -> dict[str, str]:
    """The queue files on disk as {path: blob}; only blobs git lacks are written."""
    known = set(committed.values())
    saved = {}
    for path, data in worktree_queue_files(git).items():
        oid = git.hash_blob(data)
        saved[path] = oid if oid in known else git.write_blob(data)
    return saved


def set_queue_files(git: Git, wanted: dict[str, str]) -> None:
    """Make series.yaml and patches/* hold exactly the blobs `wanted` ({path: blob})."""
    for path, data in worktree_queue_files(git).items():
        if path not in wanted:
            (git.root / path).unlink()
        elif git.hash_blob(data) == wanted[path]:
            del wanted[path]
    for path, oid in sorted(wanted.items()):
        write_atomic(git.root / path, git.blob(oid))


def clear_queue_files(git: Git) -> None:
    """series.yaml and patches/*.patch, files and index entries, back to HEAD's, so that
    moving HEAD neither refuses nor leaves them behind. Their bytes and index entries are
    in the state (queue_before, index_before): --abort puts them back, and a finished
    rebase commits the working tree's series.yaml in its bookkeeping commit."""
    paths = set(committed_queue_files(git, "HEAD")) | set(worktree_queue_files(git))
    paths |= {e.split("\t", 1)[1] for e in index_entries(git)}
    reset_to_head(git, sorted(paths))


def committed_queue_files(git: Git, rev: str) -> dict[str, str]:
    """{path: blob} of series.yaml and patches/*.patch as committed in `rev`."""
    return {path: obj for _, kind, obj, path in git.ls_tree(rev, [SERIES_FILE, PATCHES_DIR])
            if kind == "blob" and (path == SERIES_FILE or path.endswith(".patch"))
            and "/" not in path.removeprefix(PATCHES_DIR + "/")}


@contextmanager
def cleanup_unless_touched(git: Git, state: RebaseState) -> Iterator[None]:
    """On an error before HEAD or the working tree changed, leave no rebase behind."""
    try:
        yield
    except BaseException:
        if not state.touched:
            remove(git)
        raise


# -- moves ------------------------------------------------------------------------------


def require_nothing_in_the_way(git: Git, state: RebaseState, target: str) -> None:
    """Refuse, before HEAD moves to `target`, when untracked files stand where `target`
    has files (git would refuse halfway); pq's own queue files are dealt with apart."""
    added = git.changed_paths("HEAD", target, diff_filter="A")
    # Once HEAD is detached pq has cleared the queue files: any there now are in the way.
    present = [p for p in added if os.path.lexists(git.root / p) and (
        state.detached or (p != SERIES_FILE and not p.startswith(PATCHES_DIR + "/")))]
    if not present:
        return
    in_way = sorted(set(git.ls_files(present, others=True, literal=True)))
    if in_way:
        again = ("then `pq rebase --continue`" if state.detached
                 else "then run `pq rebase` again")
        raise ConfigError(f"untracked {list_paths(in_way)} would be overwritten by files of "
                          "the rebased branch", hint=f"move them aside, {again}")


def show_conflict(git: Git, state: RebaseState, pick: str
                  ) -> tuple[list[str], list[rerere_mod.Resolution]]:
    """Put `pick` cherry-picked onto state.tip into the index and working tree.

    Returns (unmerged paths, the files git rerere resolved from recorded resolutions).
    HEAD is left detached at state.tip.
    """
    require_nothing_in_the_way(git, state, state.tip)
    state.phase = "stopping"
    state.touched = True
    first = not state.detached
    state.detached = True
    save(git, state)
    if first:
        clear_queue_files(git)
    try:
        git.checkout(state.tip, detach=True, env={"GIT_REFLOG_ACTION": "pq rebase"})
    except GitError as exc:
        raise OperationFailed(f"cannot show the conflict in the working tree: {exc.message}",
                              hint="move the files in the way aside, then `pq rebase --abort` "
                                   "and run the rebase again") from None
    on = rerere_mod.enabled(git, state.rerere)
    # Without autoupdate the reused files stay unmerged until staged below, so that their
    # conflicts can be written again to name the resolutions.
    returncode, stderr = git.cherry_pick_no_commit(
        pick, (f"rerere.enabled={'true' if on else 'false'}", "rerere.autoupdate=false"),
        env={"GIT_REFLOG_ACTION": "pq rebase"})
    reused = _reused_paths(stderr)
    resolutions = rerere_mod.reused_in_worktree(git, reused)
    unmerged = unmerged_paths(git)
    if returncode not in (0, 1) or (returncode == 1 and not unmerged
                                         and not reused):
        last = stderr.strip().splitlines()[-1:] or ["(no message)"]
        raise OperationFailed(f"git cherry-pick of {pick[:12]} failed: {last[0]}",
                              hint="`pq rebase --abort` restores the branch")
    rerere_mod.remember(git, resolutions)
    return unmerged, resolutions


def _reused_paths(stderr: str) -> list[str]:
    """The paths git rerere resolved from a recorded resolution, as its messages name them
    ("Staged 'x' using previous resolution.", "Resolved 'x' ...")."""
    found = []
    for line in stderr.splitlines():
        if line.endswith("' using previous resolution.") and "'" in line:
            found.append(line[line.index("'") + 1:-len("' using previous resolution.")])
    return sorted(set(found))


def unmerged_paths(git: Git) -> list[str]:
    return sorted(set(git.diff_names(diff_filter="U")))


def unstaged_paths(git: Git) -> tuple[list[str], list[str]]:
    """(unmerged paths, paths with changes not added to the index)."""
    unmerged: list[str] = []
    changed: list[str] = []
    for status, path in git.diff_name_status():
        (unmerged if status == "U" else changed).append(path)
    return sorted(set(unmerged)), sorted(set(changed))


def write_index_tree(git: Git, state: RebaseState) -> str:
    """Record the resolution for git rerere (unless it is off), then the index as a tree."""
    if rerere_mod.enabled(git, state.rerere):
        before = rerere_mod.merge_rr(git)
        git.rerere()
        rerere_mod.remember(git, [r for r in (rerere_mod.recorded(git, rid, path)
                                              for path, rid in sorted(before.items()))
                                  if r is not None])
    return git.write_tree()


def reset_to(git: Git, commit: str) -> None:
    """Drop the conflicted state pq created: index and working tree back to `commit`."""
    git.reset("hard", commit, env={"GIT_REFLOG_ACTION": "pq rebase"})
    clear_git_merge_files(git)


def clear_git_merge_files(git: Git) -> None:
    for name in ("MERGE_MSG", "MERGE_RR"):
        with suppress(FileNotFoundError):
            (git.git_dir / name).unlink()


def land(git: Git, state: RebaseState, previous: str | None = None) -> None:
    """Move the branch to state.new_tip, with index and working tree; the old tip is kept.

    When git refuses (files in the way), the state stays in `landing` with the replayed
    stack, every resolution included, and `pq rebase --continue` lands again; `previous`
    is the new tip an earlier landing may already have moved the branch to.
    """
    assert state.new_tip is not None
    require_nothing_in_the_way(git, state, state.new_tip)
    state.phase = "landing"
    state.touched = True
    save(git, state)
    set_orig_head(git, state.branch, state.orig_head, "pq rebase: previous tip")
    env = {"GIT_REFLOG_ACTION": f"pq rebase onto {state.onto[:12]}"}
    expected = state.orig_head
    if previous is not None and git.try_resolve(state.branch) == previous:
        expected = previous
    try:
        if state.detached:
            git.checkout(state.new_tip, detach=True, env=env)
            git.update_ref(state.branch, state.new_tip, expected, env["GIT_REFLOG_ACTION"])
            git.symbolic_ref("HEAD", state.branch, env["GIT_REFLOG_ACTION"])
            clear_git_merge_files(git)
        else:
            # Uncommitted queue files (kept in the state) would stop `reset --keep`.
            clear_queue_files(git)
            git.reset("keep", state.new_tip, env=env)
    except GitError as exc:
        raise ConfigError(f"cannot move {state.short_branch} to the rebased stack: "
                          f"{exc.message}",
                          hint="deal with what git names (move the files aside), then "
                               "`pq rebase --continue` lands it, resolutions included; or "
                               "`pq rebase --abort`") from None


def restore(git: Git, state: RebaseState) -> None:
    """Everything as it was before the rebase: branch, HEAD, index, working tree, queue."""
    if git.try_resolve(state.branch) != state.orig_head:
        git.update_ref(state.branch, state.orig_head, message="pq rebase --abort")
    if git.current_branch() != state.branch:
        git.symbolic_ref("HEAD", state.branch, "pq rebase --abort")
    if state.touched:
        git.reset("hard", state.orig_head, env={"GIT_REFLOG_ACTION": "pq rebase --abort"})
        clear_git_merge_files(git)
    set_queue_files(git, dict(state.queue_before))
    if state.index_before is not None:
        git.set_index_entries(index_entries(git), state.index_before, refresh=False)
        git.refresh_index()
    set_orig_head(git, state.branch, state.prev_orig_head, "pq rebase --abort")
    legacy = state.prev_legacy_orig_head
    if legacy and git.try_resolve(ORIG_HEAD_REF) is None and not git.has_refs_under(
            ORIG_HEAD_REF + "/"):
        git.update_ref(ORIG_HEAD_REF, legacy, message="pq rebase --abort")
