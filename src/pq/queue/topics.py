"""How `pq import` cuts a fork's whole migration (its tree against the base) into patches.

Every hunk gets its layer from pq.model.layers; files get a topic: files that the fork's
non-merge commits changed together are one topic (a union-find over co-changed paths), a
file no such commit changed is a topic of its own. A part is (layer, topic): parts never mix
layers. Documentation hunks go with the layer of the rest of their topic (python-glue when
the topic is only documentation). Parts come in layer order (build, cpp-compat, kernel,
python-glue), then by name; a part is named `NNNN-<layer>-<name>.patch`, its name the
folder its files share, else its first file's stem. A part
keeps the message and author of a fork commit when that commit is the only one touching
the part's files and all its files' hunks are in that part.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pq.git.objects import CommitId
from pq.model import diff as diffs
from pq.model import layers
from pq.queue.stack import slugify

ORDER = ("build", "cpp-compat", "kernel", "python-glue")


@dataclass(frozen=True)
class PartPlan:
    key: str  # "<layer> <topic's first path>"
    layer: str
    topic: str
    name: str
    files: tuple[str, ...]
    kept_from: CommitId | None  # the fork commit whose message and author it keeps
    commits: tuple[CommitId, ...]  # the fork commits that touched its files, oldest first


@dataclass(frozen=True)
class Grouping:
    parts: tuple[PartPlan, ...]
    where: dict[tuple[str, int | None], str]  # (path, hunk) -> part key


def _topics(files: Sequence[diffs.FileDiff],
            log: Sequence[tuple[CommitId, frozenset[str]]]) -> dict[str, str]:
    """{path: its topic's representative} over the paths of `files`."""
    alias = {p: f.path for f in files for p in (f.old, f.new) if p is not None}
    parent = {f.path: f.path for f in files}

    def find(p: str) -> str:
        while parent[p] != p:
            parent[p] = parent[parent[p]]
            p = parent[p]
        return p

    # A file that replaces another (layers.replacements) shares its topic, as if one
    # commit made both changes: no part can hold one without the other.
    for _commit, paths in [*log, *((None, frozenset(pair))
                                   for pair in layers.replacements(files))]:
        mine = sorted({alias[p] for p in paths if p in alias})
        for other in mine[1:]:
            a, b = find(mine[0]), find(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    return {p: find(p) for p in parent}


def topic_name(paths: Sequence[str]) -> str:
    """A topic's name: the folder its files share, else the first file's stem."""
    if len(paths) > 1:
        common = os.path.commonpath(list(paths))
        if common and common not in paths:
            return common
    first = sorted(paths)[0]
    return first.rsplit("/", 1)[-1].split(".", 1)[0] or first


def group(files: Sequence[diffs.FileDiff], decisions: Sequence[layers.HunkDecision],
          log: Sequence[tuple[CommitId, frozenset[str]]]) -> Grouping:
    """The parts of a migration whose parsed diff is `files` and hunk layers `decisions`;
    `log` is the fork's non-merge commits with the paths each changed, oldest first."""
    topic = _topics(files, log)
    members: dict[str, list[str]] = {}
    for path, root in topic.items():
        members.setdefault(root, []).append(path)
    topic_layer = {root: layers.patch_layer(d for d in decisions
                                            if topic[d.path] == root and d.layer != layers.DOCS
                                            ).layer for root in members}
    where: dict[tuple[str, int | None], str] = {}
    part_files: dict[str, dict[str, None]] = {}
    for d in decisions:
        root = topic[d.path]
        layer = topic_layer[root] if d.layer == layers.DOCS else d.layer
        key = f"{layer} {root}"
        where[(d.path, d.hunk)] = key
        part_files.setdefault(key, {})[d.path] = None
    names = {key: topic_name(sorted(paths)) for key, paths in part_files.items()}
    keys = sorted(part_files, key=lambda k: (ORDER.index(k.split(" ", 1)[0]), names[k], k))
    parts_of_path: dict[str, set[str]] = {}
    for (path, _h), key in where.items():
        parts_of_path.setdefault(path, set()).add(key)
    alias = {p: f.path for f in files for p in (f.old, f.new) if p is not None}
    keys_of_path: dict[str, set[str]] = {}
    for key, in_part in part_files.items():
        for path in in_part:
            keys_of_path.setdefault(path, set()).add(key)
    touching_of: dict[str, list[tuple[CommitId, set[str] | None]]] = {key: [] for key in keys}
    for c, ps in log:  # one pass over the log, whatever the number of parts
        hit: set[str] = set()
        for p in ps:
            hit |= keys_of_path.get(alias.get(p, ""), set())
        # None: the commit changed a file the migration no longer changes (a merge undid
        # it): its message tells of more than any part, so no part keeps it.
        aliased = {alias[p] for p in ps if p in alias} if all(p in alias for p in ps) \
            else None
        for key in hit:
            touching_of[key].append((c, aliased))
    parts = []
    for i, key in enumerate(keys, 1):
        layer = key.split(" ", 1)[0]
        paths = tuple(part_files[key])
        touching = touching_of[key]
        kept = None
        only = touching[0][1] if len(touching) == 1 else None
        if only is not None and all(parts_of_path[p] == {key} for p in only):
            kept = touching[0][0]
        name = f"{i:04d}-{layer}-{slugify(names[key])}.patch"
        parts.append(PartPlan(key, layer, names[key], name, paths, kept,
                              tuple(c for c, _ in touching)))
    return Grouping(tuple(parts), where)


def part_message(part: PartPlan, branch: str, subject: Callable[[CommitId], str]) -> str:
    """The message of a part that keeps no fork commit's: what it is, and where from."""
    lines = [f"{part.layer}: {part.topic}", "",
             f"Imported by `pq import` from {branch}: the {part.layer} changes of "
             f"{', '.join(part.files[:5])}"
             + (f" and {len(part.files) - 5} more" if len(part.files) > 5 else "") + "."]
    if part.commits:
        lines += ["", "Fork commits:"]
        lines += [f"  {c[:12]} {subject(c)}" for c in part.commits[:20]]
        if len(part.commits) > 20:
            lines.append(f"  and {len(part.commits) - 20} more")
    return "\n".join(lines) + "\n"
