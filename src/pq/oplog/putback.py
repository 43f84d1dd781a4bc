"""Putting a recorded state back: refs, HEAD, index and working tree moved by git in one
step where it can, then the queue files, pq's state and a stopped rebase's conflict
written from the snapshot (`pq.oplog.undo` decides what; this module does it)."""

from __future__ import annotations

import os
import re
from typing import TYPE_CHECKING, Any

from pq.atomic import write_atomic
from pq.errors import ConfigError, GitError
from pq.faults import checkpoint
from pq.git.branchmove import BranchMoved, follow, try_swap_branch
from pq.git.failures import lock_refusal
from pq.git.objects import CommitId
from pq.git.repo import Git
from pq.oplog.snapshot import (
    CONFLICT_WRITES,
    Snapshot,
    clear_queue,
    holds,
    in_queue,
    read_refs,
    write_file,
    write_queue,
    write_state,
)
from pq.quoting import list_paths

if TYPE_CHECKING:
    from pq.oplog.undo import Plan


def restore(git: Git, p: Plan, current: Snapshot) -> None:
    """Move refs, HEAD, index and working tree, then the queue files, to `p.target`.

    Each step is one git command or one file write, so a restore that is killed half-way
    leaves a state that the next `pq undo` (which first undoes this restore) can read.
    """
    target = p.target
    env = {"GIT_REFLOG_ACTION": f"pq {p.kind}: operation {p.record['id']}"}
    final_refs = dict(current["refs"])
    for ref, value in p.refs.items():
        if value is None:
            final_refs.pop(ref, None)
        else:
            final_refs[ref] = value
    head_now = current["head"]
    head_then = target["head"] if "HEAD" in p.changed else head_now
    commit_now = current["head_commit"]
    if head_then == "HEAD":
        commit_then = target["head_commit"] if "HEAD" in p.changed else commit_now
    else:
        commit_then = final_refs.get(head_then)
    moving = head_then != head_now or commit_then != commit_now
    elsewhere = git.branches_elsewhere()
    for ref in [*p.refs, *([head_then] if moving else [])]:
        if ref in elsewhere:  # git would move or delete it under that worktree's files
            raise ConfigError(f"{ref} is checked out in the worktree {elsewhere[ref]}; "
                              f"{_doing(p)} would move it there too",
                              hint="switch that worktree to another branch or remove it, "
                                   f"then run `{p.again}` again")
    if moving and (commit_now is None or commit_then is None):
        raise ConfigError("cannot undo: HEAD would have no commit",
                          hint="check `git status`; `pq log --json` has the recorded refs")
    queue = (target["files"], target["index"]) if "queue" in p.changed else (
        current["files"], current["index"])

    if "worktree" in p.changed:
        _require_conflict_files_free(git, p, current)
    # 1. HEAD, index and working tree together, in one git command, before anything else
    #    changes: if it refuses (it would overwrite uncommitted work) nothing has.
    if moving:
        assert commit_now is not None and commit_then is not None
        _require_no_untracked_in_the_way(git, commit_now, commit_then, p)
        # Files whose stat data changed but whose bytes did not must not count as edits.
        git.refresh_index()
        _stage_what_the_target_has(git, commit_then)
        conflict = current.get("worktree") or {}
        # Unmerged or resolved and staged, the conflict's work is in the snapshot this
        # operation logs: git moves no HEAD over it, so it is taken back first.
        took_back = bool(conflict)
        if took_back:
            _take_conflict_back(git, commit_now, p, env, conflict.get("paths") or [])
        clear_queue(git, commit_now, current)
        try:
            moved, stderr = _move_head(git, p, current, head_then, commit_then, env)
        except BranchMoved:  # since it was read: a commit made meanwhile, which is kept
            if took_back:
                write_conflict(git, conflict)
            write_queue(git, current["files"], current["index"], current["scope"])
            raise
        if not moved:
            if took_back:  # nothing changes when the move fails: the conflict goes back too
                write_conflict(git, conflict)
            write_queue(git, current["files"], current["index"], current["scope"])
            if (locked := lock_refusal(f"{_doing(p)} failed", stderr)) is not None:
                raise locked
            unmerged = sorted(git.unmerged())
            raise ConfigError(_checkout_failure(stderr, p), hint=(
                f"{list_paths(unmerged)} unmerged (no rebase of pq's is stopped on them): "
                f"resolve and `git add` {'it' if len(unmerged) == 1 else 'them'}, or `git "
                "reset --merge` to drop the merge and its changes, then run it again"
                if unmerged else "commit or stash those changes (`git stash`), then run it "
                                 "again"))
    # 2. Every other ref, in one atomic update (the branch HEAD moved with is done).
    refs_now = read_refs(git) if moving else current["refs"]
    _update_refs(git, {ref: value for ref, value in p.refs.items()
                       if not (moving and ref == head_then)}, refs_now, env)
    # 3. The queue files and their index entries, byte for byte; then pq's state files,
    #    after the stopped rebase's conflict they describe (before, a kill between the two
    #    left a rebase in progress over files that were not its own yet).
    if "queue" in p.changed or moving:
        write_queue(git, *queue, target["scope"])
    if "worktree" in p.changed:
        write_conflict(git, target.get("worktree") or {})
    if "state" in p.changed:
        write_state(git, target["state"])


def _move_head(git: Git, p: Plan, current: Snapshot, head_then: str, commit_then: CommitId,
               env: dict[str, str]) -> tuple[bool, bytes]:
    """HEAD, index and working tree to `commit_then` on `head_then` (a branch, or "HEAD":
    detached), as one checkout would; (done, git's stderr). HEAD's own branch moves by
    compare-and-swap from the commit read under the lock, then the files follow (`git
    checkout -B` would reset it over a commit made meanwhile, which git does not wait on
    pq's lock for: the move is refused instead, BranchMoved, and that commit kept)."""
    branch = None if head_then == "HEAD" else head_then.removeprefix("refs/heads/")
    now: CommitId | None = current["head_commit"]
    create = current["refs"].get(head_then) != commit_then
    if branch is None or not create or head_then != current["head"] or now is None:
        return git.try_move_head(commit_then, branch, create=create, env=env)
    done, stderr = try_swap_branch(git, head_then, now, commit_then, p.again)
    return follow(git, now, commit_then, env["GIT_REFLOG_ACTION"], env=env) if done else (
        False, stderr)


def write_conflict(git: Git, worktree: dict[str, Any]) -> None:
    """Files and index entries (all stages) of a rebase's conflict, as recorded: the files
    first, so that a kill between the two leaves what reads as the user's resolution in
    them (which the next `pq undo` carries over to the branch, where it is committed),
    not the other side's lines beside a staged resolution."""
    paths = worktree.get("paths", [])
    if not paths:
        return
    # The files beside which a temporary file may be left, for the next lock holder to
    # sweep (pq.oplog.txn): their folders are the user's, not pq's own.
    writing = git.pq_dir() / CONFLICT_WRITES
    writing.parent.mkdir(parents=True, exist_ok=True)
    write_atomic(writing, "\0".join(sorted(paths)).encode("utf-8", "surrogateescape"),
                 durable=False)
    for p in paths:
        path = git.root / p
        if p in worktree["files"]:
            mode, blob = worktree["files"][p].split()
            write_file(git, path, mode, blob)
        elif path.is_symlink() or path.is_file():
            checkpoint("unlink " + p)
            path.unlink()
    writing.unlink()
    removed = [f"0 {git.null_id()}\t{p}" for p in paths]
    git.update_index_info(removed + sorted(worktree["index"]))
    git.refresh_index()  # the entries' stat data: the files are written already


def _stage_what_the_target_has(git: Git, commit: str) -> None:
    """Stage each changed file whose bytes are already `commit`'s (an undo killed after it
    wrote a conflict's files, before their index entries): git's move of HEAD to `commit`
    then takes it as it is, where it called it an uncommitted change in its way."""
    changed = git.diff_names()
    if not changed:
        return
    files = [e for e in git.ls_tree(commit, changed) if e[0] in ("100644", "100755")]
    blobs = git.odb.read_many([blob for _, _, blob, _ in files])
    same = [f"{mode} {blob}\t{path}" for (mode, _, blob, path), got in zip(files, blobs,
                                                                          strict=True)
            if got is not None and holds(git.root / path, got[2], mode)]
    if same:
        git.update_index_info(same)


def _take_conflict_back(git: Git, head: str, p: Plan, env: dict[str, str],
                        paths: list[str]) -> None:
    """A stopped rebase's conflict (in the snapshot this operation logs) out of the index
    and its files, as `git cherry-pick --abort` takes one back: git moves no HEAD over
    unmerged entries. Forced, a file with changes both staged and not (which `reset
    --merge` refuses) is put back as HEAD has it first; its bytes are in the log."""
    try:
        git.reset("merge", head, env=env)
        return
    except GitError as exc:
        if not (p.forced and paths):
            raise ConfigError(f"{_doing(p)} failed: the stopped rebase's conflict cannot be "
                              f"taken back: {exc.message}",
                              hint="`git add` the file git names (or `git checkout -- <file>` "
                                   "to drop its unstaged change), then run it again; or `pq "
                                   "rebase --continue` or `pq rebase --abort` ends the "
                                   "rebase") from None
    git.reset_paths(head, paths)
    tracked = git.ls_files(paths, literal=True)
    if tracked:  # and their files as HEAD has them: the conflict's bytes are in the log
        git.checkout_paths(tracked)
    git.reset("merge", head, env=env)


def _update_refs(git: Git, refs: dict[str, str | None], now: dict[str, str],
                 env: dict[str, str]) -> None:
    """One atomic `update-ref --stdin`, each update checked against the value we saw (two,
    deletions first, for `feat` going and `feat/x` coming: git refuses that in one)."""
    updates = [(ref, value, now.get(ref) or git.null_id())
               for ref, value in sorted(refs.items())
               if ((ref in now) if value is None else value != now.get(ref))]
    gone, come = [u for u in updates if u[1] is None], [u for u in updates if u[1]]
    if any(a.startswith(b + "/") or b.startswith(a + "/") for a, _, _ in gone for b, _, _ in come):
        git.update_refs(gone, env["GIT_REFLOG_ACTION"])
        updates = come
    git.update_refs(updates, env["GIT_REFLOG_ACTION"])


def _require_no_untracked_in_the_way(git: Git, now: str, then: str, p: Plan) -> None:
    """Untracked files where the restored commit has files: git's reset would refuse
    halfway with a bare `Could not reset index file`; say which, as `git checkout` does.
    An ignored one too, which git would overwrite: undo keeps every file of the user's.
    And a folder where files change that is not writable: git's move leaves them as they
    were, says so and goes on."""
    moved = git.moves(now, then)
    if stuck := git.unwritable_folders([path for _, path in moved]):
        raise ConfigError(f"no file can be written in {list_paths(stuck)}, where {_doing(p)} "
                          "changes files", hint=f"make {'it' if len(stuck) == 1 else 'them'} "
                                                f"writable, then run `{p.again}` again")
    in_way = git.untracked([path for status, path in moved if status == "A"
                            and not in_queue(path)], ignored_too=True)
    if in_way:  # all of them to move: moving aside only the one named refused again
        ignored = git.ignored(in_way[:5])
        named = list_paths(in_way, lambda path: " (ignored, but yours)" * (path in ignored))
        every = " (`git status --short --ignored` lists them all)" if len(in_way) > 5 else ""
        raise ConfigError(f"untracked {named} would be overwritten by {_doing(p)}",
                          hint=f"move {'it' if len(in_way) == 1 else 'them'} aside{every}, "
                               f"then run `{p.again}` again")


def _require_conflict_files_free(git: Git, p: Plan, current: Snapshot) -> None:
    """The files of a stopped rebase's conflict that step 3 writes back (undoing the
    `--skip`, `--continue` or `--abort` that ended it) must hold nothing of the user's that
    the snapshot taken now lacks: an edit made since, an untracked file. Git's move checks
    only the files it moves, and a path the two commits share is not one of them."""
    logged = set((current.get("worktree") or {}).get("paths") or [])  # in this undo's record
    conflict = p.target.get("worktree") or {}
    paths = [path for path in conflict.get("paths") or []
             if path not in logged and not in_queue(path)]
    if not paths:
        return
    have = git.ls_files(paths, stage=True, literal=True)
    paths = [path for path in paths if not _holds_already(git, conflict, path, have)]
    if not paths:  # (no paths: git would list every one)
        return
    loose = git.untracked(paths, ignored_too=True)
    if loose:
        raise ConfigError(f"untracked {list_paths(loose)} would be overwritten by {_doing(p)} "
                          "(the stopped rebase's conflict is written there)",
                          hint=f"move {'it' if len(loose) == 1 else 'them'} aside, then run "
                               f"`{p.again}` again")
    edited = sorted({path for _, path in git.status_porcelain(paths=paths, renames=False)})
    if edited:
        raise ConfigError(f"uncommitted changes in {list_paths(edited)} would be overwritten "
                          f"by {_doing(p)} (the stopped rebase's conflict is written there)",
                          hint="commit or stash those changes (`git stash`), then run "
                               f"`{p.again}` again")


def _holds_already(git: Git, conflict: dict[str, Any], path: str, index: list[str]) -> bool:
    """Whether `path` has what `write_conflict` would write there: its index entries
    (`index`: `ls-files -s` of the paths) and its file, or no file (a stop recorded in
    another worktree's snapshot took the user's edit there for part of its conflict)."""
    def entries(listing: list[str]) -> list[str]:
        return sorted(e for e in listing if e.split("\t", 1)[-1] == path)

    if entries(index) != entries(conflict.get("index") or []):
        return False
    full = git.root / path
    spec = (conflict.get("files") or {}).get(path)
    if spec is None:
        return not os.path.lexists(full)
    mode, blob = spec.split()
    if mode == "120000":
        return full.is_symlink() and os.fsencode(os.readlink(full)) == git.read_object(blob)[2]
    if mode not in ("100644", "100755") or full.is_symlink() or not full.is_file():
        return False
    return (mode == "100755") == bool(full.stat().st_mode & 0o100) and \
        full.read_bytes() == git.read_object(blob)[2]


def _checkout_failure(stderr: bytes, p: Plan) -> str:
    text = stderr.decode("utf-8", "replace")
    paths = [ln.strip() for ln in text.splitlines() if ln.startswith("\t")]
    paths += re.findall(r"^error: Entry '(.+)' not uptodate", text, re.MULTILINE)
    if paths:
        more = f" and {len(paths) - 1} more" if len(paths) > 1 else ""
        return f"uncommitted changes in {paths[0]}{more} would be overwritten by {_doing(p)}"
    last = [ln for ln in text.splitlines() if ln.strip()]
    return f"{_doing(p)} failed: {last[-1] if last else 'git checkout failed'}"


def _doing(p: Plan) -> str:
    """`undoing operation 3 (`pq rebase upstream/main`)`: what the plan does, for errors."""
    verb = {"undo": "undoing", "redo": "redoing", "restore": "restoring"}[p.kind]
    return f"{verb} operation {p.record['id']} (`{p.record.get('command')}`)"
