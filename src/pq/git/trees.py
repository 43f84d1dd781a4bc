"""Trees in memory: read a commit's tree once, edit paths, write only the changed subtrees.

The rebase applies patches whose files upstream left alone without any git process: it
replaces blob entries in cached trees and writes the new tree objects in-process.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from pq.git.objects import Change, Commit, CommitId, Entry, parse_commit
from pq.git.odb import is_tree_mode, tree_data, tree_entries
from pq.git.repo import Git


class TreeCollision(Exception):
    """A path needs a folder where there is a file, or the other way round."""


class Trees:
    """Commits and trees read through the object layer, trees edited and written in-process."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.commit_trees: dict[str, str] = {}
        self._commits: dict[str, Commit] = {}
        self._entries: dict[str, dict[bytes, tuple[bytes, str]]] = {}

    def read_commits(self, ids: list[str]) -> None:
        """Read many commits with one process instead of one round trip each."""
        for found in self.git.odb.read_many(ids):
            if found is not None and found[1] == "commit":
                self._commits[found[0]] = parse_commit(CommitId(found[0]), found[2])

    def commit(self, rev: str) -> Commit:
        info = self._commits.get(rev)
        if info is None:
            info = self._commits[rev] = self.git.commit(rev)
        return info

    def load_changes(self, commits: list[str]) -> dict[str, list[Change]]:
        """What each commit changes against its first parent, path by path (one process)."""
        return self.git.commit_changes(commits)

    def tree_of(self, commit: str) -> str:
        tree = self.commit_trees.get(commit)
        if tree is None:
            tree = self.commit_trees[commit] = self.commit(commit).tree
        return tree

    def entries(self, tree: str) -> dict[bytes, tuple[bytes, str]]:
        cached = self._entries.get(tree)
        if cached is None:
            cached = self._entries[tree] = tree_entries(self.git.odb.read(tree)[2], len(tree))
        return cached

    def attributes(self, tree: str, paths: Iterable[str]) -> bytes:
        """The attributes git's merge reads with `tree` checked out, from its
        `.gitattributes` files among `paths` (see `Git.attributes_from`)."""
        return self.git.attributes_from({
            path: entry[1] for path in paths if (entry := self.lookup(tree, path)) is not None
            and entry[0] in ("100644", "100755")})

    def lookup(self, tree: str, path: str) -> Entry | None:
        parts = path.encode("utf-8", "surrogateescape").split(b"/")
        entries = self.entries(tree)
        for part in parts[:-1]:
            entry = entries.get(part)
            if entry is None or not is_tree_mode(entry[0]):
                return None
            entries = self.entries(entry[1])
        found = entries.get(parts[-1])
        return None if found is None else (found[0].decode(), found[1])

    def files_under(self, tree: str, paths: Sequence[str]) -> dict[str, Entry]:
        """{path: (mode, object)} of every non-tree entry at or under `paths` in `tree`."""
        found: dict[str, Entry] = {}
        pending = [(p, e) for p in paths if (e := self.lookup(tree, p)) is not None]
        while pending:
            path, (mode, oid) = pending.pop()
            if is_tree_mode(mode.encode()):
                pending += [(f"{path}/{name.decode('utf-8', 'surrogateescape')}",
                             (m.decode(), o)) for name, (m, o) in self.entries(oid).items()]
            else:
                found[path] = (mode, oid)
        return found

    def edit(self, tree: str, changes: dict[str, Entry | None]) -> str:
        """`tree` with each path set to (mode, object) or removed (None)."""
        encoded = {p.encode("utf-8", "surrogateescape"): v for p, v in changes.items()}
        return self._edit(tree, encoded) or self.git.empty_tree()

    def edit_new(self, files: dict[str, Entry | None]) -> str:
        """A new tree holding just `files`."""
        encoded = {p.encode("utf-8", "surrogateescape"): v for p, v in files.items()}
        return self._edit(None, encoded) or self.git.empty_tree()

    def without(self, tree: str, paths: tuple[str, ...]) -> str:
        """`tree` without `paths` (files or folders)."""
        present: dict[str, Entry | None] = {p: None for p in paths
                                            if self.lookup(tree, p) is not None}
        return self.edit(tree, present) if present else tree

    def _edit(self, tree: str | None, changes: dict[bytes, Entry | None]) -> str | None:
        entries = dict(self.entries(tree)) if tree else {}
        direct: dict[bytes, Entry | None] = {}
        nested: dict[bytes, dict[bytes, Entry | None]] = {}
        for path, value in changes.items():
            head, sep, rest = path.partition(b"/")
            if sep:
                nested.setdefault(head, {})[rest] = value
            else:
                direct[head] = value
        for name, value in direct.items():
            if value is None:
                entries.pop(name, None)
        for name, sub in nested.items():
            current = entries.get(name)
            if current is not None and not is_tree_mode(current[0]):
                raise TreeCollision(name.decode("utf-8", "replace"))
            subtree = self._edit(current[1] if current else None, sub)
            if subtree is None:
                entries.pop(name, None)
            else:
                entries[name] = (b"40000", subtree)
        for name, value in direct.items():
            if value is not None:
                current = entries.get(name)
                if current is not None and is_tree_mode(current[0]) and value[0] != "40000":
                    raise TreeCollision(name.decode("utf-8", "replace"))
                entries[name] = (value[0].encode(), value[1])
        return self.write_tree(entries) if entries else None

    def write_tree(self, entries: dict[bytes, tuple[bytes, str]]) -> str:
        new = self.git.write_object("tree", tree_data(entries))
        self._entries[new] = entries
        return new
