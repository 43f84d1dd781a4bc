"""The queue commands: `init`, `export`, `apply` and the `series` listing.

Each function takes an open repository and explicit arguments, computes everything in
memory first, and only then writes files or moves refs, inside a transaction. They return
plain results for the CLI to render; they never print.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pq.errors import ConfigError
from pq.git.branchmove import require_unmoved
from pq.git.objects import CommitId
from pq.git.repo import Git
from pq.git.signing import retry_as
from pq.model import patchfile
from pq.model.series import PATCHES_DIR, SERIES_FILE, PatchEntry, Series, new_series
from pq.oplog.txn import Transaction
from pq.queue import stack as stack_mod
from pq.queue import verified
from pq.queue.bookkeeping import bookkeeping_commit, commit_queue
from pq.queue.files import (
    Queue,
    is_queue_path,
    move_branch_to_queue,
    read_tree,
    read_worktree,
    require_no_folder_at,
    require_no_untracked_in_the_way,
    require_no_upstream_files,
    require_own_queue_paths,
    stray_patch_files,
    write_worktree,
)
from pq.queue.reach import no_shared_history, upstream_name

if TYPE_CHECKING:
    from pq.queue.copies import CopyProposal

Progress = Callable[[int, int, str], None]


@dataclass
class ExportResult:
    queue: Queue
    changed: list[str] = field(default_factory=list)
    added: list[str] = field(default_factory=list)
    removed: list[str] = field(default_factory=list)
    commit: CommitId | None = None
    # Removed entries that carried more than a name, layer and summary: (name, what).
    dropped: list[tuple[str, str]] = field(default_factory=list)
    copies: list[CopyProposal] = field(default_factory=list)  # proposed `copies:` blocks
    reordered: list[str] = field(default_factory=list)  # entries the commits' order moved
    uncommitted: bool = False  # the files written differ from HEAD's (no --commit took them)
    staged_other: bool = False  # they are HEAD's, but the index holds other versions of them


def _metadata(entry: PatchEntry) -> str:
    """What an entry holds that a new entry would not get back ('' for nothing)."""
    what = ["its workaround block"] if entry.workaround is not None else []
    extra = [k for k in entry.raw if k not in ("name", "layer", "summary", "workaround")]
    if extra:
        what.append("its field(s) " + ", ".join(extra))
    return " and ".join(what)


def dirty_tracked_files(git: Git) -> list[str]:
    """Tracked files with uncommitted changes, staged or not (one `git status`); a
    submodule checked out at another commit, or with changes of its own, is not one
    unless that is staged, as `git rebase` and `git checkout` count them."""
    found = [(code, path) for code, path in git.status_porcelain() if code != "??"]
    own = git.submodules([path for code, path in found if code[0] == " "])
    return [path for code, path in found if code[0] != " " or path not in own]


def require_clean(git: Git, queue_paths: tuple[str, ...], action: str,
                  dirty: list[str] | None = None) -> None:
    """Refuse tracked files with uncommitted changes (`dirty`, if known) outside the queue."""
    dirty = [path for path in (dirty_tracked_files(git) if dirty is None else dirty)
             if not is_queue_path(path, queue_paths)]
    if dirty:
        more = f" and {len(dirty) - 1} more" if len(dirty) > 1 else ""
        raise ConfigError(f"uncommitted changes in {dirty[0]}{more}; {action} would not "
                          "touch them, and pq never overwrites them",
                          hint="commit or stash them first (`git stash`), then run it again")


def require_branch(git: Git) -> str:
    branch = git.current_branch()
    if branch is None:
        raise ConfigError("HEAD is detached; pq works on a branch",
                          hint="`git switch <branch>` first")
    return branch


# -- init ------------------------------------------------------------------------


def init(git: Git, upstream: str, *, force: bool = False, commit: bool = False) -> ExportResult:
    # The lock first: the tip read here is checked again before anything is written.
    with Transaction(git, f"pq init --upstream {upstream}", mutating=False) as t:
        upstream_id, head = git.resolve(upstream, "upstream ref"), git.head()
        upstream = upstream_name(git, upstream, "pq init")
        require_no_folder_at(git.root / SERIES_FILE)
        base = git.merge_base(head, upstream_id)
        if base is None:
            raise no_shared_history(git, "HEAD", upstream, "run `pq init` again")
        old = new_series(upstream, base)  # upstream's own series.yaml is none of pq's: first
        require_no_upstream_files(git, base, old.queue_paths, f"the fork's base on {upstream}")
        if not force and ((git.root / SERIES_FILE).exists() or git.ls_files(
                [SERIES_FILE], cached=True, literal=True)):  # (git tracks it: sparse, deleted)
            raise ConfigError("the fork already has a series", path=SERIES_FILE,
                              hint="`pq export` refreshes it; `pq init --force` starts over")
        prev_queue: Queue | None = None
        if force and (git.root / SERIES_FILE).exists():
            try:
                prev_queue = read_worktree(git)
                prev = prev_queue.series
                old = Series(upstream_ref=upstream, base=base, patches=prev.patches,
                             gate=prev.gate, queue_extra=prev.queue_extra, raw=prev.raw,
                             upstream_raw=prev.upstream_raw, doc=prev.doc)
            except ConfigError:
                pass
        # Merges are refused first; where the fork has a series, the fix is its rebase,
        # else `pq import`.
        stack = stack_mod.read_stack(git, base, head, old.queue_paths,
                                     upstream=upstream if prev_queue is not None else None)
        queue = stack_mod.export(git, stack, old, base,
                                 recorded=stack_mod.recorded_files(prev_queue))
        return _write_export(git, queue, old, t, commit, head, stack, _committed(git, head))


# -- export ----------------------------------------------------------------------


def compute_export(git: Git, tip: str, old: Series, *queues: Queue | None) -> Queue:
    """The queue `pq export` would write for base..tip; `queues` are the recorded ones
    whose patch files tell which commit is which patch (see pq.queue.identity)."""
    stack = stack_mod.read_stack(git, old.base, tip, old.queue_paths,
                                 upstream=old.upstream_ref)
    return stack_mod.export(git, stack, old, old.base,
                            recorded=stack_mod.recorded_files(*queues))


def export(git: Git, *, commit: bool = False, force: bool = False) -> ExportResult:
    with Transaction(git, "pq export", mutating=False) as t:  # the lock first
        current = read_worktree(git, missing_ok=True)  # a patch file gone: written again
        head = git.head()
        if not commit and verified.known(git, head, current):
            # Exporting this very commit gave these very bytes before: nothing to write.
            from pq.queue.copies import propose  # (an export's, not a rebase's: below too)

            return ExportResult(current, copies=propose(git, current))
        series = current.series
        require_own_queue_paths(git, series)
        committed = _committed(git, head)  # the commit `head` names, not HEAD again
        last = stack_mod.last_written(git, series.base, head, committed) if git.is_ancestor(
            series.base, head) else None
        written = last[1] if last else None
        stack = stack_mod.read_stack(git, series.base, head, series.queue_paths,
                                     upstream=series.upstream_ref)
        recorded = stack_mod.recorded_files(current, committed, written)
        queue = stack_mod.export(git, stack, series, series.base, recorded=recorded)
        if not force:
            from pq.queue import handedits

            handedits.refuse_losing_them(git, current, committed, last, queue)
        result = _write_export(git, queue, series, t, commit, head, stack, committed,
                               previous=current)
        if not force and not (result.changed or result.added or result.removed):
            verified.remember(git, head, current)  # checked in full: the next one need not
        return result


def _committed(git: Git, head: CommitId) -> Queue | None:
    try:
        return read_tree(git, head)
    except ConfigError:
        return None


def _write_export(git: Git, queue: Queue, old: Series, t: Transaction, commit: bool,
                  head: CommitId, stack: Sequence[stack_mod.StackCommit],
                  committed: Queue | None, previous: Queue | None = None) -> ExportResult:
    """Write what `t`'s command computed from `head`, under `t`'s lock, if the branch is
    still there: a commit made meanwhile is not in `queue` and must not be committed on.
    `committed`: `head`'s own queue (None: it has none), against which what is written
    is or is not still to commit."""
    before_order = [e.name for e in old.patches]
    before, after = set(before_order), {e.name for e in queue.series.patches}
    result = ExportResult(queue, added=sorted(after - before), removed=sorted(before - after))
    result.dropped = [(e.name, what) for e in old.patches
                      if e.name in result.removed and (what := _metadata(e))]
    kept = [e.name for e in queue.series.patches if e.name in before]
    result.reordered = [n for n, m in zip(kept, [n for n in before_order if n in after]) if n != m]
    from pq.queue.copies import propose

    result.copies = propose(git, queue)
    command = t.command.split()[1] if len(t.command.split()) > 1 else "export"
    branch = git.current_branch()
    if branch is not None:
        require_unmoved(git, branch, head, f"pq {command}")
    require_no_untracked_in_the_way(git, queue, result.added, f"pq {command}")
    result.removed = sorted({*result.removed,
                             *stray_patch_files(git, before | after, f"pq {command}")})
    # Who commits, asked before anything is written: git may not know.
    who = (git.author_now(), git.committer_now()) if commit else None
    t.begin()
    result.changed = write_worktree(git, queue, previous)
    if who is not None:
        # The working tree now holds `queue` (in its clean form): commit that.
        written = Queue(queue.series, queue.files, queue.series.dumps())
        try:
            result.commit = commit_queue(git, f"pq: {command} series", written,
                                         expect=head, who=who)
        except ConfigError as exc:  # git cannot sign, say: the files stay written
            raise retry_as(exc, "`pq export --commit` commits the series.yaml and patches/ "
                                "just written (`pq undo` takes them back)") from None
        if result.commit is not None:  # its queue is the export of the stack under it
            verified.remember_written(git, result.commit, written, stack)
    elif result.changed:  # whether a commit is still to make (HEAD may have them already)
        result.uncommitted = committed is None or committed.files != queue.files or \
            committed.series_bytes != queue.series.dumps()
        result.staged_other = not result.uncommitted and bool(  # (a hand edit `--force` threw
            git.diff_names("--cached", head, paths=result.changed))  # away, staged)
    t.done()
    return result


# -- apply -----------------------------------------------------------------------


@dataclass
class ApplyResult:
    onto: CommitId
    commits: list[tuple[str, CommitId]]
    tip: CommitId
    branch: str
    left: str | None = None  # with --branch: the branch HEAD was on, which keeps its tip


def apply(git: Git, onto: str | None = None, *, branch: str | None = None,
          progress: Progress | None = None) -> ApplyResult:
    # The lock first: no other pq command (an undo) runs while this one computes, and the
    # branch tip read here is checked again (compare-and-swap) when the branch moves.
    with Transaction(git, "pq apply" + (f" --onto {onto}" if onto else ""),
                     mutating=False) as t:
        queue = read_worktree(git)
        series = queue.series
        base = git.resolve(series.base, "series base (upstream.base in series.yaml)")
        onto_id = git.resolve(onto, "commit to apply onto") if onto else base
        require_clean(git, series.queue_paths, "pq apply")
        current = require_branch(git)
        head = git.head()
        require_own_queue_paths(git, series)
        if onto:
            require_no_upstream_files(git, onto_id, series.queue_paths, onto, (base, head))
        if branch is None:
            # Moving this branch must not drop commits that the series does not hold.
            if git.is_ancestor(series.base, head) and not holds_only_series(git, head, queue):
                raise ConfigError(
                    f"{current.removeprefix('refs/heads/')} has commits that differ from "
                    f"{SERIES_FILE}; applying would drop them",
                    hint="run `pq export` first, or `pq apply --branch NEW` to build a new "
                         "branch instead")
        elif not git.valid_branch_name(branch):
            raise ConfigError(f"{branch!r} is not a valid branch name",
                              hint="choose a name git accepts (no `..`, spaces, `~^:?*[\\`, "
                                   "leading `-` or trailing `.lock`; see `git "
                                   "check-ref-format`)")
        elif git.try_resolve(f"refs/heads/{branch}"):
            raise ConfigError(f"branch {branch!r} already exists",
                              hint="choose another name, or delete it first")
        committer = git.committer_now()
        commits = stack_mod.materialise(git, queue, onto_id, committer, progress, branch=True)
        last = commits[-1][1] if commits else onto_id
        new_series_ = series.with_base(onto_id)
        # Re-export from the new commits: the bookkeeping commit holds the refreshed queue.
        fresh_stack = stack_mod.read_stack(git, onto_id, last, series.queue_paths,
                                           upstream=series.upstream_ref)
        refreshed = stack_mod.export(git, fresh_stack, new_series_, onto_id)
        tip = bookkeeping_commit(git, last, None, refreshed, (git.author_now(), committer),
                                 f"pq: apply series onto {onto_id[:12]}\n")
        target = f"refs/heads/{branch}" if branch else current
        require_unmoved(git, current, head, "pq apply")
        t.begin()
        move_branch_to_queue(git, target, head, tip, series.queue_paths, "pq apply",
                             create=branch is not None)
        # Only once the branch moved: a refused move leaves no ref of pq's behind.
        git.set_orig_head(target, head, "pq apply: previous tip")
        write_worktree(git, refreshed)
        t.done()
    return ApplyResult(onto_id, [(e.name, c) for e, c in commits], tip,
                       target.removeprefix("refs/heads/"),
                       current.removeprefix("refs/heads/") if branch else None)


def holds_only_series(git: Git, head: CommitId, queue: Queue) -> bool:
    """Whether base..head holds no commit the series lacks: its commits are the series'
    patches, or exactly what pq last wrote (the patch files were edited since)."""
    series = queue.series
    last = stack_mod.last_written(git, series.base, head)
    fresh = compute_export(git, head, series, queue, last[1] if last else None)
    if _same_queue(fresh, queue):
        return True
    if last is None:
        return False
    try:
        return _same_queue(compute_export(git, head, last[1].series, last[1]), last[1])
    except ConfigError:  # pq's last series is on another base: not what the branch holds
        return False


def _same_queue(a: Queue, b: Queue) -> bool:
    return a.files == b.files and [e.name for e in a.series.patches] == [
        e.name for e in b.series.patches]


# -- series ------------------------------------------------------------------------


@dataclass
class PatchInfo:
    index: int
    name: str
    layer: str
    summary: str
    files: int
    added: int
    removed: int
    workaround: str | None


def list_series(git: Git, queue: Queue | None = None) -> tuple[Series, list[PatchInfo]]:
    """The patches of `queue` (default: the working tree's), with their sizes."""
    queue = queue or read_worktree(git)

    infos = []
    for i, entry in enumerate(queue.series.patches, start=1):
        pf = patchfile.parse(queue.files[entry.name], f"{PATCHES_DIR}/{entry.name}")
        files = len(pf.files)
        added = sum(len(f.added()) for f in pf.files)
        removed = sum(len(f.removed()) for f in pf.files)
        kind = None
        if entry.workaround is not None:
            k = entry.workaround.get("kind")
            kind = k if isinstance(k, str) else "workaround"
        infos.append(PatchInfo(i, entry.name, entry.layer, entry.summary, files, added, removed,
                               kind))
    return queue.series, infos
