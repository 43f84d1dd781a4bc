"""The working tree during a rebase: the queue files (series.yaml, patches/*.patch) pq
saves, clears and puts back, and the moves of HEAD, index and working tree that show a
conflict (`git cherry-pick --no-commit` onto the stack so far, rerere included), take a
resolution from the index, and restore everything on `--abort`. Each move saves the state
first (rebase/state.py); landing the finished stack is rebase/landing.py."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable
from contextlib import suppress

from pq.atomic import write_atomic
from pq.background import Background
from pq.errors import ConfigError, GitError, OperationFailed
from pq.git.failures import (
    LockedError,
    lock_in_the_way,
    lock_reason,
    lock_step,
    stderr_reason,
)
from pq.git.repo import Git
from pq.git.trees import Trees
from pq.model.series import PATCHES_DIR, SERIES_FILE
from pq.queue.files import index_entries, is_queue_file, is_queue_path, reset_to_head
from pq.quoting import from_here, list_paths, shell_args
from pq.rebase import rerere as rerere_mod
from pq.rebase import rrnotes
from pq.rebase.state import RebaseState, save


def require_clean_queue_dirs(dirty: list[str], queue_paths: tuple[str, ...]) -> None:
    """Refuse uncommitted changes (`dirty`: tracked files, staged or not) in the queue's
    folders other than pq's own files: the user's files in patches/, mre/ and the other
    queue folders leave the working tree during a conflict, and `--abort` puts back the
    branch's; their edits would be lost."""
    found = users_files_in_queue_dirs(dirty, queue_paths)
    if found:
        raise ConfigError(f"uncommitted changes in {found[0]}; pq rebase would not carry "
                          "them", hint="commit them first, then run it again")


def users_files_in_queue_dirs(paths: Iterable[str], queue_paths: tuple[str, ...]) -> list[str]:
    """Those of `paths` in the queue's folders that are not pq's own files (series.yaml,
    patches/*.patch): patches/NOTES.txt, mre/x/run.sh."""
    return [p for p in paths if is_queue_path(p, queue_paths) and not is_queue_file(p)]


def staged_in_queue_dirs(git: Git, queue_paths: tuple[str, ...]) -> list[str]:
    """The user's files (`users_files_in_queue_dirs`) staged, unmerged included, where the
    stack so far (HEAD) lacks them or has them otherwise."""
    paths = [f":(literal){p}" for p in queue_paths]
    return users_files_in_queue_dirs(git.diff_names("--cached", "HEAD", paths=paths,
                                                    diff_filter="d"), queue_paths)


# -- the queue files in the working tree ------------------------------------------------


def worktree_queue_files(git: Git) -> dict[str, bytes]:
    """series.yaml and patches/*.patch on disk (other files in patches/ are the user's)."""
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


def executable(git: Git, paths: Iterable[str]) -> list[str]:
    """Those of `paths` (files in the working tree, not links) with an executable bit."""
    return sorted(p for p in paths if (git.root / p).lstat().st_mode & 0o100)


def set_queue_files(git: Git, wanted: dict[str, str], executable: Iterable[str] | None = ()
                    ) -> list[str]:
    """Make series.yaml and patches/* hold exactly the blobs `wanted` ({path: blob}), the
    `executable` ones with the executable bits, the others without (None: modes left as
    they are; a link's target is never changed); the paths written, removed or changed in
    mode."""
    removed = []
    listed = set(wanted)
    for path, data in worktree_queue_files(git).items():
        if path not in wanted:
            (git.root / path).unlink()
            removed.append(path)
        elif git.hash_blob(data) == wanted[path]:
            del wanted[path]
    for path, oid in sorted(wanted.items()):
        write_atomic(git.root / path, git.blob(oid))
    chmodded = set()
    if executable is not None:
        exe = set(executable)
        for path in listed:
            if (git.root / path).is_symlink():
                continue  # a link's target is not the queue's
            mode = (git.root / path).stat().st_mode
            new = mode | (mode & 0o444) >> 2 if path in exe else mode & ~0o111
            if new != mode:
                os.chmod(git.root / path, new)
                chmodded.add(path)
    return removed + sorted(set(wanted) | chmodded)


def clear_queue_files(git: Git) -> None:
    """series.yaml and patches/*.patch, files and index entries, back to HEAD's, so that
    moving HEAD neither refuses nor leaves them behind. Their bytes and index entries are
    in the state (queue_before, index_before): --abort puts them back, and a finished
    rebase commits the working tree's series.yaml in its bookkeeping commit."""
    committed = _committed_entries(git, "HEAD")
    on_disk = worktree_queue_files(git)
    entries = index_entries(git)
    if _as_committed(git, committed, on_disk, entries):
        return  # nothing to clear; a checkout of them would rewrite the whole index
    paths = set(committed) | set(on_disk) | {e.split("\t", 1)[1] for e in entries}
    reset_to_head(git, sorted(paths))


def queue_files_back(git: Git) -> tuple[list[str], list[str]]:
    """The queue files back in the index (staged) or only in the working tree (untracked)
    while a rebase is stopped with HEAD on the stack so far, which cleared them: ([], [])
    when they are as HEAD has them (none, unless the stack carries them: `--force`)."""
    committed = _committed_entries(git, "HEAD")
    on_disk = worktree_queue_files(git)
    entries = index_entries(git)
    if _as_committed(git, committed, on_disk, entries):
        return [], []
    staged = sorted({e.split("\t", 1)[1] for e in entries})
    return staged, sorted(set(on_disk) - set(staged))


def _as_committed(git: Git, committed: dict[str, tuple[str, str]], on_disk: dict[str, bytes],
                  entries: list[str]) -> bool:
    """Whether the queue files are exactly `committed`'s regular files, in the index (stage
    0, same mode and blob) and on disk, where no file differs from its index entry, not
    even in its stat data alone (which stops `reset --keep` too)."""
    if not (committed or on_disk or entries):  # none anywhere: nothing to differ from
        return True
    staged = {}
    for entry in entries:
        info, path = entry.split("\t", 1)
        mode, oid, stage = info.split()
        if stage != "0":
            return False
        staged[path] = (mode, oid)
    return (staged == committed and set(on_disk) == set(committed)
            and all(mode in ("100644", "100755") for mode, _ in committed.values())
            and git.matches_index([SERIES_FILE, PATCHES_DIR]))


def _committed_entries(git: Git, rev: str) -> dict[str, tuple[str, str]]:
    """{path: (mode, blob)} of series.yaml and patches/*.patch as committed in `rev`."""
    trees = Trees(git)
    return {path: (mode, obj) for path, (mode, obj) in trees.files_under(
        trees.tree_of(rev), [SERIES_FILE, PATCHES_DIR]).items()
        if mode != "160000" and is_queue_file(path)}


# -- moves ------------------------------------------------------------------------------


def require_nothing_in_the_way(git: Git, state: RebaseState, target: str, *,
                               aborting: bool = False) -> None:
    """Refuse, before HEAD moves to `target`, when untracked files (ignored ones too) stand
    where `target` has files (git would refuse halfway, or overwrite an ignored one;
    `--abort`'s `reset --hard` would overwrite them, beyond `pq undo`'s reach), when a
    file git is told not to look at holds an edit the move would overwrite, or when a
    folder where files change is not writable (git's checkout would leave them, exit 0);
    pq's own queue files are dealt with apart."""
    again = ("then `pq rebase --abort`" if aborting else "then `pq rebase --continue`" if
             state.detached or state.touched else "then run `pq rebase` again")
    # (`reset --hard` keeps what --abort puts back as it was.) While git lists the index's
    # flags, the files that move are read.
    hidden = None if aborting else Background(lambda: git.flagged(()), "pq git ls-files -v")
    moved = git.moves("HEAD", target)
    # Once HEAD is detached pq has cleared the queue files: any there now are in the way,
    # except on --abort, which puts back the queue as it was (the undo log keeps these).
    paths = [p for status, p in moved if status == "A" and (
        (state.detached and not aborting) or not _pqs(p))]
    if hidden is not None:
        _refuse_hidden_edits(git, target, hidden.result(), again, [p for _, p in moved])
    if stuck := git.unwritable_folders([p for _, p in moved]):
        raise ConfigError(f"no file can be written in {list_paths(stuck)}, where the "
                          f"{'branch' if aborting else 'rebased stack'} has files to change",
                          hint=f"make {'it' if len(stuck) == 1 else 'them'} writable, {again}")
    # A file or link where `target` has a folder: a checkout refuses it (as `git rebase`
    # does before it starts), and `reset --hard` (--abort) would replace it.
    folders = {"/".join(p.split("/")[:i]) for p in paths for i in range(1, p.count("/") + 1)}
    # An ignored file too: git's checkout would overwrite it, and no log keeps it; and one
    # in a submodule's checkout where `target` has a folder (git lists none of its files).
    gone = {p for status, p in moved if status == "D"} & folders
    in_way = git.untracked(paths + sorted(f for f in folders if os.path.lexists(
        git.root / f) and ((git.root / f).is_symlink() or not (git.root / f).is_dir())),
        ignored_too=True) + [p for p in paths if gone and os.path.lexists(git.root / p)
                             and any(p.startswith(f + "/") for f in gone)]
    if in_way:
        branch = "the branch as before the rebase" if aborting else "the rebased branch"
        ignored = " (ignored, but yours)" if git.ignored(in_way) else ""
        raise ConfigError(f"untracked {list_paths(in_way)}{ignored} would be overwritten by "
                          f"files of {branch}", hint=f"move them aside, {again}")


def _pqs(path: str) -> bool:
    return path == SERIES_FILE or path.startswith(PATCHES_DIR + "/")  # (pq's own)


def _refuse_hidden_edits(git: Git, target: str, flagged_paths: set[str], again: str,
                         moved: list[str]) -> None:
    """Refuse when a file that moving HEAD to `target` changes (`moved`) is marked
    assume-unchanged or skip-worktree (`flagged_paths`: the index's) and git would not move
    over it ("not uptodate": an edit, or the file written again, even with the same bytes),
    as `git rebase` refuses before it starts; git's own dry run decides, only when such a
    file is there. The queue's files are not looked at: the landing clears them first."""
    if not flagged_paths:  # the common case
        return
    flagged = sorted(p for p in set(moved) & flagged_paths
                     if not _pqs(p) and (git.root / p).is_file()
                     and not (git.root / p).is_symlink())
    why = git.move_refused("HEAD", target) if flagged else None
    edited = [p for p in flagged if why and f"Entry '{p}' not uptodate" in why]
    if edited:
        raise ConfigError(
            f"{list_paths(edited)} changed on disk (an edit, or written again) where the "
            "rebase would overwrite it, and git is told not to look at "
            f"{'it' if len(edited) == 1 else 'them'} (assume-unchanged or skip-worktree)",
            hint="`git update-index --no-assume-unchanged --no-skip-worktree "
                 f"{shell_args(from_here(git.root, edited))}`, commit or stash the edits, "
                 f"{again}")


def show_conflict(git: Git, state: RebaseState, pick: str, noted: bool = False
                  ) -> tuple[list[str], list[rerere_mod.Resolution]]:
    """Put `pick` cherry-picked onto state.tip into the index and working tree (`noted`:
    the merge has a conflict that leaves no file unmerged), HEAD detached at state.tip:
    (unmerged paths, the files git rerere resolved from recorded resolutions)."""
    require_nothing_in_the_way(git, state, state.tip)
    state.phase = "stopping"
    state.touched = True
    first = not state.detached
    state.detached = True
    save(git, state)
    if first:
        clear_queue_files(git)
    before = git.head()
    renew = attributes_changed(git, before, state.tip)  # a file's own edit is told under
    edited = set(git.diff_names()) if renew else set()  # the attributes it was written with
    try:
        git.checkout(state.tip, detach=True, env={"GIT_REFLOG_ACTION": "pq rebase"})
        if renew:  # as the landing does (git picked each of those files)
            convert_again(git, before, state.tip, state.onto, edited)
    except GitError as exc:  # (git that stopped half-way, HEAD not moved, took files out)
        half = first and git.current_branch() == state.branch and bool(git.status_porcelain())
        raise _showing_failed(git, state, f"cannot show the conflict in the working tree: "
                                          f"{exc.message}",
                              exc.lock if isinstance(exc, LockedError) else None, half) from None
    on = rerere_mod.enabled(git, state.rerere)
    # Without autoupdate the reused files stay unmerged until staged below, so that their
    # conflicts can be written again to name the resolutions.
    returncode, stderr = git.cherry_pick_no_commit(
        pick, (f"rerere.enabled={'true' if on else 'false'}", "rerere.autoupdate=false"),
        env={"GIT_REFLOG_ACTION": "pq rebase"})
    reused = _reused_paths(stderr)
    resolutions = rerere_mod.reused_in_worktree(git, reused)
    unmerged = sorted(git.unmerged())
    if returncode not in (0, 1) or (returncode == 1 and not unmerged
                                         and not reused and not noted):
        said = stderr.encode("utf-8", "surrogateescape")  # a name's bytes back as they were
        lock = lock_in_the_way(said)
        reason = stderr_reason(said) if lock is None else lock_reason(lock)
        raise _showing_failed(git, state, f"git cherry-pick of {pick[:12]} failed: {reason}",
                              lock)
    rrnotes.remember(git, resolutions)
    return unmerged, resolutions


def _showing_failed(git: Git, state: RebaseState, message: str, lock: str | None = None,
                    half: bool = False) -> OperationFailed:
    """The error of a conflict git would not show (an untracked file where the patch adds
    one, say: git refuses before it writes anything), with the rebase saved as stopped
    outside a conflict: `--continue` shows the conflict again, as `git rebase --continue`
    runs the pick git refused again, every patch replayed so far kept. Where git stopped
    half-way (`half`: a filter failed), the rebase stays `stopping`: its abort puts back
    the branch's files."""
    fix = lock_step(lock) if lock is not None else "make the filter git names work" if \
        " filter " in message else "move aside or remove what git names (`git status` shows " \
        "the working tree)"
    if half:
        return OperationFailed(f"{message}; git stopped half-way, files of the branch taken "
                               "out", hint=f"{fix}, then `pq rebase --abort --force` puts them "
                                           "back, and run the rebase again")
    state.phase = "refused"
    save(git, state)
    return OperationFailed(message, hint=f"{fix}, then `pq rebase --continue` shows the "
                                         "conflict; or `pq rebase --skip` drops this patch; or "
                                         "`pq rebase --abort`")


# git rerere's messages name the path unquoted: a newline in it spans two lines.
_REUSED = re.compile(r"^(?:Staged|Resolved) '(.+?)' using previous resolution\.$", re.M | re.S)


def _reused_paths(stderr: str) -> list[str]:
    """The paths git rerere resolved from a recorded resolution, as its messages name them
    ("Staged 'x' using previous resolution.", "Resolved 'x' ...")."""
    return sorted({m.group(1) for m in _REUSED.finditer(stderr)})


def unstaged_paths(git: Git) -> tuple[list[str], list[str]]:
    """(unmerged paths, paths with changes not added to the index); a submodule's own
    checkout (another commit, changes in it) is not one, as `git rebase --continue`
    counts it: the index's commit of it is what the patch gets."""
    unmerged: list[str] = []
    changed: list[str] = []
    for status, path in git.diff_name_status():
        (unmerged if status == "U" else changed).append(path)
    own = git.submodules(changed)
    return sorted(set(unmerged)), sorted(set(changed) - own)


def write_index_tree(git: Git, state: RebaseState) -> str:
    """Record the resolution for git rerere (unless it is off), then the index as a tree."""
    if not rerere_mod.enabled(git, state.rerere):
        return git.write_tree()
    # At --continue, the user's resolution: the stop's ids (a hand commit left MERGE_RR
    # empty), and what else it changed; else git's, of recorded resolutions alone.
    at_stop = state.phase == "conflict"
    before = {**(state.conflict_ids if at_stop else {}), **rerere_mod.merge_rr(git)}
    state.conflict_ids = {}
    git.rerere()
    tree = git.write_tree()
    found = [r for r in (rerere_mod.recorded(git, rid, path)
                         for path, rid in sorted(before.items())) if r is not None]
    also = None
    if found and at_stop and state.index < len(state.steps):
        step = state.steps[state.index]
        own = set(git.changed_paths(step.parent, step.commit)) | set(before)
        also = [p for p in git.changed_paths(state.tip, tree) if p not in own and
                not is_queue_path(p, state.queue_paths or ())]
    rrnotes.remember(git, found, also)
    return tree


def attributes_changed(git: Git, old_tip: str, new_tip: str) -> bool:
    """Whether a `.gitattributes` differs between the two commits."""
    return bool(git.changed_paths(old_tip, new_tip, pathspec=[":(glob)**/.gitattributes"]))


def convert_again(git: Git, old_tip: str, new_tip: str, onto: str,
                  edited: set[str] | None = None) -> list[str]:
    """After a landing that changed a `.gitattributes` (`attributes_changed`): write again
    the files the patches wrote that its checkout left alone (the same blob before and
    after), as `git rebase` writes every file it picks, so that their line ends and filters
    follow the attributes now in force. Files with changes of their own (`edited`, when
    told before the checkout) are left as they are. Returns the files written."""
    written = set(git.changed_paths(old_tip, new_tip))
    picked = [p for p in git.changed_paths(onto, new_tip) if p not in written]
    if not picked:
        return []
    left = (edited if edited is not None else set(git.diff_names(
        paths=[f":(literal){p}" for p in picked]))) | git.flagged(picked)  # or not git's
    again = [p for p in picked if p not in left and (git.root / p).is_file()
             and not (git.root / p).is_symlink()]
    for path in again:  # git writes a file that matches its index entry again only when
        st = (git.root / path).lstat()  # its stat data says it changed: it says so now
        os.utime(git.root / path, ns=(st.st_atime_ns, st.st_mtime_ns - 1_000_000_000))
    if again:
        git.checkout_paths(again)
    return again


def reset_to(git: Git, commit: str) -> None:
    """Drop the conflicted state pq created: index and working tree back to `commit`."""
    git.reset("hard", commit, env={"GIT_REFLOG_ACTION": "pq rebase"})
    clear_git_merge_files(git)


def clear_git_merge_files(git: Git) -> None:
    for name in ("MERGE_MSG", "MERGE_RR"):
        with suppress(FileNotFoundError):
            (git.git_dir / name).unlink()
