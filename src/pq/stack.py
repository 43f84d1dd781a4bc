"""The stack: the fork's commits on top of the base, and their one-to-one map to patches.

`read_stack` turns `base..tip` into the patch commits (bookkeeping commits that touch only
the queue's own files are skipped), `export` turns those into a series and patch files,
and `materialise` turns a series back into commits, all without touching a working tree.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from pq import dep3, layers, patchfile
from pq.errors import ConfigError, GitError, OperationFailed
from pq.gitio import DIFF_CONFIG, DIFF_OPTIONS, CommitId, Git, Person, TreeId
from pq.patchfile import PatchFile
from pq.queuefiles import Queue
from pq.series import NAME_RE, PATCHES_DIR, PatchEntry, Series

_SHA_LINE = re.compile(rb"^[0-9a-f]{40}(?:[0-9a-f]{24})?$")


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


def is_queue_path(path: str, queue_paths: Sequence[str]) -> bool:
    return any(path == q or path.startswith(q + "/") for q in queue_paths)


def read_stack(git: Git, base: str, tip: str, queue_paths: Sequence[str]) -> list[StackCommit]:
    """The patch commits of base..tip, oldest first; merges are refused, not guessed at."""
    if not git.is_ancestor(base, tip):
        raise ConfigError(
            f"the series base {base[:12]} is not an ancestor of {tip[:12]}",
            path="series.yaml",
            hint="the branch was rebased outside pq: use `pq rebase`, or `pq init --force` "
                 "to start the series again from the new base")
    revs = git.rev_list_with_parents(f"{base}..{tip}")
    for commit, parents in revs:
        if len(parents) != 1:
            raise ConfigError(
                f"commit {commit[:12]} in {base[:12]}..{tip[:12]} is a merge; pq will not "
                "guess how to split merged history into patches",
                hint="linearise the branch first (`git rebase`), or use `pq import` when "
                     "available; nothing was written")
    if not revs:
        return []
    stdin = "".join(f"{c}\n" for c, _ in revs).encode()
    out = git.run_sealed("diff", *DIFF_CONFIG, "diff-tree", "--stdin", "--always", "-p",
                  *DIFF_OPTIONS, "--", *exclude_pathspec(queue_paths), input=stdin)
    diffs = _split_by_commit(out)
    result = []
    for commit, parents in revs:
        diff = diffs.get(commit, b"")
        info = git.commit(commit)
        if not diff.strip():
            if info.tree != git.tree_of(parents[0]):
                continue  # bookkeeping: touches only the queue's own files
            diff = b""  # an empty commit (as `git commit --allow-empty` makes): a patch
        message, name = patchfile.strip_trailer(info.message)
        result.append(StackCommit(commit, parents[0], patchfile.strip_index_lines(diff), name,
                                  message, info.author, info.encoding))
    return result


def _split_by_commit(out: bytes) -> dict[str, bytes]:
    diffs: dict[str, bytes] = {}
    current: str | None = None
    chunks: list[bytes] = []
    for line in out.splitlines(keepends=True):
        stripped = line.rstrip(b"\n")
        if _SHA_LINE.match(stripped):
            if current is not None:
                diffs[current] = b"".join(chunks)
            current = stripped.decode()
            chunks = []
        else:
            chunks.append(line)
    if current is not None:
        diffs[current] = b"".join(chunks)
    return diffs


# -- commits to patches ---------------------------------------------------------


def slugify(subject: str) -> str:
    slug = re.sub(r"[^A-Za-z0-9]+", "-", subject).strip("-").lower()
    return (slug[:52].rstrip("-") or "patch")


def _slug_of(name: str) -> str:
    return re.sub(r"^\d+-", "", name[: -len(".patch")])


def assign_names(stack: Sequence[StackCommit], old: Series | None) -> list[str]:
    """Stable names: a commit keeps the name its trailer (or its subject's slug) had."""
    existing = list(old.patches) if old else []
    taken: set[str] = set()
    names: list[str | None] = []
    for sc in stack:
        if sc.trailer_name and sc.trailer_name not in taken and _valid(sc.trailer_name):
            names.append(sc.trailer_name)
            taken.add(sc.trailer_name)
        else:
            names.append(None)
    for i, sc in enumerate(stack):
        if names[i] is not None:
            continue
        slug = slugify(sc.message.split("\n", 1)[0])
        for e in existing:
            if e.name not in taken and _slug_of(e.name) == slug and not any(
                    s.trailer_name == e.name for s in stack):
                names[i] = e.name
                taken.add(e.name)
                break
    numbers = [int(m.group(1)) for n in list(taken) + [e.name for e in existing]
               if (m := re.match(r"^(\d+)-", n))]
    nxt = max(numbers, default=0) + 1
    for i, sc in enumerate(stack):
        if names[i] is None:
            name = f"{nxt:04d}-{slugify(sc.message.split(chr(10), 1)[0])}.patch"
            while name in taken:
                nxt += 1
                name = f"{nxt:04d}-{slugify(sc.message.split(chr(10), 1)[0])}.patch"
            names[i] = name
            taken.add(name)
            nxt += 1
    return [n for n in names if n is not None]


def _valid(name: str) -> bool:
    return bool(NAME_RE.match(name))


def export(git: Git, stack: Sequence[StackCommit], old: Series, base: str) -> Queue:
    """The series and patch files for `stack`, keeping what the user set in `old`."""
    names = assign_names(stack, old)
    entries = []
    files = {}
    for name, sc in zip(names, stack):
        prev = old.entry(name)
        if prev is None:
            entry = PatchEntry(name=name, layer=guess_layer(git, sc),
                               summary=summary_of(sc.message))
        else:
            entry = prev
        entries.append(entry)
        pf = PatchFile(sc.author, sc.message, sc.diff, tuple(dep3.headers(entry)), sc.encoding)
        files[name] = patchfile.render(pf)
    series = replace(old, patches=tuple(entries), base=base)
    return Queue(series, files)


def summary_of(message: str) -> str:
    """series.yaml's summary of a message: its subject, as text (bytes that are not UTF-8
    become U+FFFD, whitespace runs one space)."""
    subject = message.split("\n", 1)[0].encode("utf-8", "surrogateescape")
    return " ".join(subject.decode("utf-8", "replace").split())


def guess_layer(git: Git, sc: StackCommit) -> str:
    """The layer pq guesses for a new commit (rules in pq.layers): paths, the post-image of
    C++ sources, and the lines the commit adds to kernel sources."""
    from pq.audit import patchdiff

    files: list[tuple[str, bytes, list[str] | None]] = []
    for f in patchdiff.parse(sc.diff):
        content = b""
        if f.path.endswith(layers.CPP_SUFFIXES):
            for rev in (sc.commit, sc.parent):  # the post-image, or a deleted file's pre-image
                try:
                    content = git.blob(f"{rev}:{f.path}")
                    break
                except GitError:
                    continue
        files.append((f.path, content, [ln.text for ln in f.added()]))
    return layers.explain(files)[0]


# -- patches to commits ---------------------------------------------------------


def materialise(
    git: Git,
    queue: Queue,
    onto: CommitId,
    committer: Person,
    progress: Callable[[int, int, str], None] | None = None,
) -> list[tuple[PatchEntry, CommitId]]:
    """Commit every patch of the queue, in order, on top of `onto`; nothing else changes."""
    parsed = []
    for entry in queue.series.patches:
        parsed.append((entry, patchfile.parse(queue.files[entry.name],
                                              f"{PATCHES_DIR}/{entry.name}")))
    result: list[tuple[PatchEntry, CommitId]] = []
    parent = onto
    with git.temp_index(git.tree_of(onto)) as env:
        for i, (entry, pf) in enumerate(parsed):
            if progress:
                progress(i, len(parsed), entry.name)
            proc = git.run_proc("apply", "--cached", "--binary", "--whitespace=nowarn", "-",
                                input=pf.diff, env=env) if pf.diff else None
            if proc is not None and proc.returncode != 0:
                reason = proc.stderr.decode(errors="replace").strip().splitlines()
                raise OperationFailed(
                    f"{PATCHES_DIR}/{entry.name} (patch {i + 1}) does not apply onto "
                    f"{onto[:12]}: {reason[-1] if reason else 'git apply failed'}",
                    hint=f"`pq rebase {onto[:12]}` replays the series with three-way merges")
            tree = TreeId(git.text("write-tree", env=env).strip())
            message = patchfile.add_trailer(pf.message, entry.name)
            parent = git.write_commit(tree, [parent], pf.author, committer, message,
                                      pf.encoding)
            result.append((entry, parent))
    return result
