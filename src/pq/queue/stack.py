"""The stack: the fork's commits on top of the base, and their one-to-one map to patches.

`read_stack` turns `base..tip` into the patch commits (bookkeeping commits that touch only
the queue's own files are skipped), `export` turns those into a series and patch files,
and `materialise` turns a series back into commits, all without touching a working tree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace

from pq.errors import ConfigError, GitError
from pq.git.objects import CommitId, Person, subject_of, summary_of
from pq.git.repo import Git
from pq.git.trees import TreeCollision, Trees
from pq.model import dep3, hunkapply, patchfile
from pq.model import diff as diffs
from pq.model.patchfile import PatchFile
from pq.model.series import PATCHES_DIR, PatchEntry, Series
from pq.queue import identity
from pq.queue.bookkeeping import only_queue_files, written_by_pq
from pq.queue.files import Queue, is_queue_path, read_tree
from pq.queue.reach import linear_range, upstream_past_base


@dataclass(frozen=True)
class StackCommit:
    commit: CommitId
    parent: CommitId
    diff: bytes  # the upstream part of the change, index lines stripped
    trailer_name: str | None
    message: str  # without pq's trailer
    author: Person
    encoding: str | None = None  # the commit's `encoding` header


def exclude_pathspec(queue_paths: Sequence[str]) -> list[str]:
    return [":/"] + [f":(top,exclude){p}" for p in queue_paths]


def read_stack(git: Git, base: str, tip: str, queue_paths: Sequence[str], *,
               known: Sequence[bytes] | None = None,
               upstream: str | None = None) -> list[StackCommit]:
    """The patch commits of base..tip, oldest first; merges are refused, not guessed at.

    `known`: the patch commits' diffs, oldest first, when the caller has them already (the
    patch files of a queue known to be this very stack's export, see pq.queue.verified).
    They are taken, and the stack is not diffed, when the paths each commit changes match
    them one for one; else the stack is diffed as without them. `upstream`: the series'
    upstream ref, which the refusals' fixes name (None: no series yet, `pq import`)."""
    revs = linear_range(git, base, tip, upstream)
    if not revs:
        return []
    commits = [c for c, _ in revs]
    diffs = None if known is None else _known_diffs(git, commits, queue_paths, known)
    if diffs is None:
        diffs = git.commit_patches(commits, exclude_pathspec(queue_paths))
    git.odb.read_many(commits)  # every commit in one stream, then cached
    result = []
    for commit, parents in revs:
        diff = diffs.get(commit, b"")
        info = git.commit(commit)
        if only_queue_files(git, commit, parents[0], diff):
            continue  # bookkeeping: touches only the queue's own files
        diff = diff if diff.strip() else b""  # an empty commit (`--allow-empty`): a patch
        message, name = patchfile.strip_trailer(info.message)
        result.append(StackCommit(commit, parents[0], patchfile.strip_index_lines(diff), name,
                                  message, info.author, info.encoding))
    return result


def _known_diffs(git: Git, commits: list[CommitId], queue_paths: Sequence[str],
                 known: Sequence[bytes]) -> dict[str, bytes] | None:
    """{patch commit: its diff from `known`} (what `commit_patches` would give, index lines
    aside), or None where the commits' changed paths do not match `known` one for one (or
    a queue path is a pattern git would match itself)."""
    if patterns(queue_paths):
        return None
    changed = git.commit_changes(commits)  # the rebase asks for them next anyway
    # Changes only to the queue's files: bookkeeping; no change at all: an empty patch.
    own = {c: {path for path, _, _ in changed[c] if not is_queue_path(path, queue_paths)}
           for c in commits}
    patches = [c for c in commits if own[c] or not changed[c]]
    if len(patches) != len(known):
        return None
    for commit, diff in zip(patches, known):
        try:
            named = {p for pair in diffs.paths(diff) for p in pair if p is not None}
        except ConfigError:
            return None
        if named != own[commit]:
            return None
    return dict(zip(patches, known))


# Characters a pathspec reads as wildcards: queue paths holding one are matched by git.
_PATHSPEC_MAGIC = frozenset("*?[\\")


def patterns(queue_paths: Sequence[str]) -> bool:
    """Whether a queue path is a pattern (git matches those itself, as pathspecs)."""
    return any(set(q) & _PATHSPEC_MAGIC for q in queue_paths)


# -- commits to patches ---------------------------------------------------------


def slugify(subject: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", subject).strip("-").lower()
    return (slug[:52].rstrip("-") or "patch")


Recorded = Mapping[str, Sequence[bytes]]


def recorded_files(*queues: Queue | None) -> dict[str, list[bytes]]:
    """{name: the distinct recorded bytes of its patch file} over `queues` (the series'
    own files, the ones pq last committed, ...): the evidence `identity.match` reads."""
    out: dict[str, list[bytes]] = {}
    for q in queues:
        if q is None:
            continue
        for name, data in q.files.items():
            if data not in out.setdefault(name, []):
                out[name].append(data)
    return out


def last_written(git: Git, base: str, tip: str, at_tip: Queue | None = None
                 ) -> tuple[CommitId, Queue] | None:
    """The newest bookkeeping commit pq wrote in base..tip (`pq: ...` subject: export
    --commit, init --commit, apply, rebase) and the queue it holds: what pq last wrote.
    `at_tip`: the queue committed in `tip`, where the caller read it (a tip pq wrote, as
    a rebase or `pq export --commit` leaves it, is not read again)."""
    for commit, _parents in reversed(git.rev_list_with_parents(f"{base}..{tip}")):
        if not written_by_pq(git, commit):
            continue
        if at_tip is not None and commit == tip:
            return commit, at_tip
        try:
            queue = read_tree(git, commit)
        except ConfigError:
            return None
        return (commit, queue) if queue is not None else None
    return None


def hand_edits(git: Git, base: str, tip: str, committed: Queue,
               last: tuple[CommitId, Queue]) -> list[str]:
    """The patch files committed in `tip` as edits by hand: they differ from what pq last
    wrote (`last`, see `last_written`), and the commit that last changed each of them did
    not commit an export (`pq export`, committed with plain `git commit`, is not an edit)."""
    result = []
    exported: dict[str, Queue | None] = {}
    for name, data in sorted(committed.files.items()):
        if last[1].files.get(name, data) == data:
            continue
        changed = next(iter(git.rev_list(f"{last[0]}..{tip}", [f"{PATCHES_DIR}/{name}"],
                                         max_count=1)), "")
        if changed and changed not in exported:
            exported[changed] = export_at(git, base, changed)
        fresh = exported.get(changed)
        if fresh is None or fresh.files.get(name) != data:
            result.append(name)
    return result


def export_at(git: Git, base: str, commit: str) -> Queue | None:
    """What `pq export` gives for base..commit with commit's own series, or None."""
    try:
        queue = read_tree(git, commit)
        if queue is None or not git.is_ancestor(base, commit):
            return None
        stack = read_stack(git, base, commit, queue.series.queue_paths)
        return export(git, stack, queue.series, base, recorded=recorded_files(queue))
    except ConfigError:
        return None


def assign_names(stack: Sequence[StackCommit], old: Series | None,
                 recorded: Recorded | None = None) -> list[str]:
    """Stable names: a commit keeps the name the evidence gives it (see pq.queue.identity); a
    commit no evidence names gets a new one, numbered after every name in use."""
    existing = list(old.patches) if old else []
    found = identity.match(stack, existing, recorded or {})
    taken = {n for n in found if n is not None}
    numbers = [int(m.group(1)) for n in list(taken) + [e.name for e in existing]
               if (m := re.match(r"^([0-9]+)-", n))]
    nxt = max(numbers, default=0) + 1
    names: list[str] = []
    for sc, name in zip(stack, found):
        if name is None:
            name = f"{nxt:04d}-{slugify(subject_of(sc.message))}.patch"
            while name in taken:
                nxt += 1
                name = f"{nxt:04d}-{slugify(subject_of(sc.message))}.patch"
            taken.add(name)
            nxt += 1
        names.append(name)
    return names


def same_commits(a: Mapping[str, bytes], b: Mapping[str, bytes]) -> bool:
    """Whether two sets of patch files stand for the same commits: the same names, each
    with the same author, message, diff and headers, whatever the headers series.yaml
    writes (Description, X-Pq-Layer, the workaround fields) say. An edit of series.yaml's
    metadata makes those stale until the next export; it changes no commit."""
    if a.keys() != b.keys():
        return False
    for name, data in a.items():
        if data == b[name]:
            continue
        try:
            x, y = (patchfile.parse(d, f"{PATCHES_DIR}/{name}") for d in (data, b[name]))
        except ConfigError:
            return False
        own = [h for h in x.headers if h[0] not in dep3.KEYS]
        if (x.author, x.message, x.diff, x.encoding, own) != (
                y.author, y.message, y.diff, y.encoding,
                [h for h in y.headers if h[0] not in dep3.KEYS]):
            return False
    return True


def export(git: Git, stack: Sequence[StackCommit], old: Series, base: str, *,
           recorded: Recorded | None = None, names: Sequence[str] | None = None) -> Queue:
    """The series and patch files for `stack`, keeping what the user set in `old`.

    `names` (one per commit) when the caller knows them (a rebase replays named steps);
    else they come from the evidence: trailers and the `recorded` patch files."""
    rendered: dict[int, bytes] = {}  # commit i as entry i of `old`, by identity.positional

    def render(i: int, entry: PatchEntry) -> bytes:
        sc = stack[i]
        data = patchfile.render(PatchFile(sc.author, sc.message, sc.diff,
                                          tuple(dep3.headers(entry)), sc.encoding))
        if (why := patchfile.unreadable(sc.message, sc.author, data)) is not None:
            raise ConfigError(f"commit {sc.commit[:12]} ({subject_of(sc.message)!r}) holds "
                              f"{why[0]}: its patch file could not be applied again",
                              hint=why[1])
        return data

    if names is None:
        names = identity.positional(stack, old.patches, recorded or {}, lambda i, e: (
            rendered.setdefault(i, render(i, e)))) or assign_names(stack, old, recorded)
    past = upstream_past_base(git, old.upstream_ref, base, stack[-1].commit) if any(
        old.entry(n) is None for n in names) else None  # new patches: upstream's commits?
    if past is not None:
        raise ConfigError(
            f"the branch holds {past[0]} {old.upstream_ref} commit(s) newer than the series "
            f"base {base[:12]}, up to {past[1][:12]}: it was rebased onto (or merged) "
            f"{old.upstream_ref} outside pq, and they are not the fork's patches",
            hint=f"`pq init --force --upstream {old.upstream_ref} --commit` re-records the "
                 f"base from the branch; or undo that and run `pq rebase {old.upstream_ref}`")
    entries = []
    files = {}
    for i, (name, sc) in enumerate(zip(names, stack, strict=True)):
        entry = old.entry(name) or PatchEntry(name=name, layer=guess_layer(git, sc),
                                              summary=summary_of(sc.message, sc.encoding))
        entries.append(entry)
        files[name] = rendered[i] if i in rendered and old.patches[i] is entry else (
            render(i, entry))
    series = replace(old, patches=tuple(entries), base=base)
    return Queue(series, files)


def guess_layer(git: Git, sc: StackCommit) -> str:
    """The layer pq guesses for a new commit: pq.model.layers decides each hunk (by path, the
    post-image of C/C++ sources and the hunk's changed lines) and the patch takes the most
    specific."""
    from pq.model import layers  # (only for commits new to the series)

    return layers.patch_layer(
        layers.classify_hunks(diffs.parse(sc.diff), post_image(git, sc))).layer


def post_image(git: Git, sc: StackCommit) -> Callable[[diffs.FileDiff], bytes]:
    """A file's content after `sc` (before it, for a deleted file; b'' when neither is a
    blob): what the classifier reads of C/C++ sources."""
    def content(f: diffs.FileDiff) -> bytes:
        for rev in (sc.commit, sc.parent):
            try:
                return git.blob(f"{rev}:{f.path}")
            except GitError:
                continue
        return b""
    return content


# -- patches to commits ---------------------------------------------------------


def materialise(
    git: Git,
    queue: Queue,
    onto: CommitId,
    committer: Person,
    progress: Callable[[int, int, str], None] | None = None,
    *,
    branch: bool,
) -> list[tuple[PatchEntry, CommitId]]:
    """Commit every patch of the queue, in order, on top of `onto`; nothing else changes.
    `branch`: the commits go on a branch (signed where commits are; see write_commit)."""
    parsed = [(entry, patchfile.parse_committable(queue.files[entry.name],
                                                  f"{PATCHES_DIR}/{entry.name}"))
              for entry in queue.series.patches]
    result: list[tuple[PatchEntry, CommitId]] = []
    parent = onto
    trees = Trees(git)
    tree = trees.tree_of(onto)
    for i, (entry, pf) in enumerate(parsed):
        if progress:
            progress(i, len(parsed), entry.name)
        _require_outside_queue(pf, i, queue.series.queue_paths)
        applied = _apply_in_memory(git, trees, tree, pf) if pf.diff else tree
        if applied is None:  # what only git apply reads exactly: ask it
            applied, error = git.apply_to_tree(tree, pf.diff)
            if applied is None:
                _ = pf.files  # malformed: ConfigError naming its line, exit 2, the fix
                raise patchfile.apply_failure(pf, queue.files[entry.name], i, onto, error,
                                              on_base=onto == queue.series.base)
        tree = applied
        message = patchfile.add_trailer(pf.message, entry.name)
        parent = git.write_commit(tree, [parent], pf.author, committer, message,
                                  pf.encoding, branch=branch)
        result.append((entry, parent))
    return result


def _require_outside_queue(pf: PatchFile, index: int, queue_paths: Sequence[str]) -> None:
    """Refuse a patch that changes a file where pq keeps the queue: the branch's queue files
    are pq's own, so the change would leave the patch without a word at the re-export."""
    if all(q.isascii() and q.encode() not in pf.diff for q in queue_paths):
        return  # no name there (git quotes a name with other bytes in octal escapes)
    inside = sorted({p for f in pf.files for p in (f.old, f.new)
                     if p is not None and is_queue_path(p, queue_paths)})
    if inside:
        more = f" and {len(inside) - 1} more" if len(inside) > 1 else ""
        raise ConfigError(
            f"patch {index + 1} changes {inside[0]}{more}, where pq keeps the queue "
            f"({', '.join(queue_paths)}): pq would drop that change from the patch",
            path=pf.source, hint="edit the patch file to leave those files out: files there "
                                 "are pq's, not the project's")


def _apply_in_memory(git: Git, trees: Trees, tree: str, pf: PatchFile) -> str | None:
    """`tree` with `pf`'s diff applied without a process: text files modified in place or
    added, every hunk exactly where it says (pq.model.hunkapply); None for anything else
    (renames, deletions, modes, binary, symlinks, a hunk that moved), which git applies."""
    if any(odd in pf.diff for odd in (b"\n\\ ", b"\0")) or not pf.diff.endswith(b"\n") or (
            not hunkapply.plain(pf.diff)):
        return None  # `\ No newline`, NUL, a diff cut mid-line, an unusual header: git judges
    changes: dict[str, tuple[str, str] | None] = {}
    try:
        files = pf.files
    except ConfigError:
        return None
    for f in files:
        if f.binary or f.path in changes or f.status not in ("modified", "added") or (
                f.status == "modified" and not f.hunks):
            return None
        current = trees.lookup(tree, f.path)
        if f.status == "added":
            if current is not None or f.new_mode not in ("100644", "100755"):
                return None
            mode, data = f.new_mode, b""
        else:
            if current is None or current[0] not in ("100644", "100755") or (
                    f.new_mode is not None and f.new_mode != f.old_mode):
                return None
            mode, data = current[0], git.blob(current[1])
        new = hunkapply.apply_hunks(data, f.hunks)
        if new is None:
            return None
        changes[f.path] = (mode, git.write_blob(new))
    try:
        return trees.edit(tree, changes)
    except TreeCollision:
        return None
