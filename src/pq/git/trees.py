"""Trees in memory: read a commit's tree once, edit paths, write only the changed subtrees.

The rebase applies patches whose files upstream left alone without any git process: it
replaces blob entries in cached trees and writes the new tree objects in-process.
"""

from __future__ import annotations

from pq.git.repo import Commit, CommitId, Git, Person, parse_commit
from pq.model.series import PATCHES_DIR, SERIES_FILE
from pq.queue.files import Queue
from pq.rebase.state import Change, Entry


class TreeCollision(Exception):
    """A path needs a folder where there is a file, or the other way round."""


class Trees:
    """Commits and trees read through gitio (cached), trees edited and written in-process."""

    def __init__(self, git: Git) -> None:
        self.git = git
        self.commit_trees: dict[str, str] = {}
        self._commits: dict[str, Commit] = {}
        self._entries: dict[str, dict[bytes, tuple[bytes, str]]] = {}

    def read_commits(self, ids: list[str]) -> None:
        """Read many commits with one process instead of one round trip each."""
        if not ids:
            return
        out = self.git.run("cat-file", "--batch", input="".join(c + "\n" for c in ids).encode())
        pos = 0
        while pos < len(out):
            end = out.index(b"\n", pos)
            sha, kind, size = out[pos:end].decode().split()
            data = out[end + 1:end + 1 + int(size)]
            pos = end + 2 + int(size)
            if kind == "commit":
                self._commits[sha] = parse_commit(CommitId(sha), data)

    def commit(self, rev: str) -> Commit:
        info = self._commits.get(rev)
        if info is None:
            info = self._commits[rev] = self.git.commit(rev)
        return info

    def load_changes(self, commits: list[str]) -> dict[str, list[Change]]:
        """What each commit changes against its first parent, path by path (one process)."""
        result: dict[str, list[Change]] = {c: [] for c in commits}
        if not commits:
            return result
        out = self.git.run("diff-tree", "--stdin", "-r", "-z", "--no-renames",
                           input="".join(c + "\n" for c in commits).encode())
        fields = out.split(b"\0")
        current = ""
        i = 0
        while i < len(fields):
            f = fields[i]
            if f.startswith(b":"):
                old_mode, new_mode, old, new, _ = f[1:].decode().split()
                path = fields[i + 1].decode("utf-8", "surrogateescape")
                result[current].append((path, None if old_mode == "000000" else (old_mode, old),
                                        None if new_mode == "000000" else (new_mode, new)))
                i += 2
                continue
            if f:
                current = f.decode().strip()
            i += 1
        return result

    def tree_of(self, commit: str) -> str:
        tree = self.commit_trees.get(commit)
        if tree is None:
            tree = self.commit_trees[commit] = self.commit(commit).tree
        return tree

    def entries(self, tree: str) -> dict[bytes, tuple[bytes, str]]:
        cached = self._entries.get(tree)
        if cached is None:
            data = self.git.read_object(tree)[2]
            size = len(tree) // 2
            cached = {}
            i = 0
            while i < len(data):
                sp = data.index(b" ", i)
                nul = data.index(b"\0", sp)
                cached[data[sp + 1:nul]] = (data[i:sp], data[nul + 1:nul + 1 + size].hex())
                i = nul + 1 + size
            self._entries[tree] = cached
        return cached

    def lookup(self, tree: str, path: str) -> Entry | None:
        parts = path.encode("utf-8", "surrogateescape").split(b"/")
        entries = self.entries(tree)
        for part in parts[:-1]:
            entry = entries.get(part)
            if entry is None or not _is_tree(entry[0]):
                return None
            entries = self.entries(entry[1])
        found = entries.get(parts[-1])
        return None if found is None else (found[0].decode(), found[1])

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
            if current is not None and not _is_tree(current[0]):
                raise TreeCollision(name.decode("utf-8", "replace"))
            subtree = self._edit(current[1] if current else None, sub)
            if subtree is None:
                entries.pop(name, None)
            else:
                entries[name] = (b"40000", subtree)
        for name, value in direct.items():
            if value is not None:
                current = entries.get(name)
                if current is not None and _is_tree(current[0]) and value[0] != "40000":
                    raise TreeCollision(name.decode("utf-8", "replace"))
                entries[name] = (value[0].encode(), value[1])
        return self.write_tree(entries) if entries else None

    def write_tree(self, entries: dict[bytes, tuple[bytes, str]]) -> str:
        ordered = sorted(entries.items(),
                         key=lambda kv: kv[0] + b"/" if _is_tree(kv[1][0]) else kv[0])
        data = b"".join(mode + b" " + name + b"\0" + bytes.fromhex(obj)
                        for name, (mode, obj) in ordered)
        new = self.git.write_object("tree", data)
        self._entries[new] = entries
        return new

    # -- the queue files -------------------------------------------------------------

    def queue_blobs(self, commit: str) -> dict[str, str]:
        """{path: blob} of series.yaml and patches/* as committed in `commit`."""
        tree = self.tree_of(commit)
        blobs: dict[str, str] = {}
        series = self.lookup(tree, SERIES_FILE)
        if series is not None and not _is_tree(series[0].encode()):
            blobs[SERIES_FILE] = series[1]
        patches = self.lookup(tree, PATCHES_DIR)
        if patches is not None and _is_tree(patches[0].encode()):
            for name, (mode, obj) in self.entries(patches[1]).items():
                if not _is_tree(mode) and name.endswith(b".patch"):
                    blobs[f"{PATCHES_DIR}/{name.decode('utf-8', 'surrogateescape')}"] = obj
        return blobs

    def bookkeeping_commit(self, last: str, source: str, queue: Queue, committer: Person,
                           message: str) -> str:
        """What `queueops.bookkeeping_commit` makes, built in memory: `last` plus the queue's
        files, with the other queue folders (mre/) as they are in `source`."""
        qp = queue.series.queue_paths
        last_tree = self.tree_of(last)
        source_tree = self.tree_of(source)
        known = set(self.queue_blobs(source).values())
        changes: dict[str, Entry | None] = {p: None for p in qp
                                            if self.lookup(last_tree, p) is not None}
        for p in qp:
            if p not in (SERIES_FILE, PATCHES_DIR):
                entry = self.lookup(source_tree, p)
                if entry is not None:
                    changes[p] = entry
        patches = {name.encode("utf-8", "surrogateescape"): (b"100644", self._blob(data, known))
                   for name, data in queue.files.items()}
        # The user's own files in patches/ (not *.patch) stay as `source` has them.
        kept = self.lookup(source_tree, PATCHES_DIR)
        if kept is not None and _is_tree(kept[0].encode()):
            for name, item in self.entries(kept[1]).items():
                if _is_tree(item[0]) or not name.endswith(b".patch"):
                    patches.setdefault(name, item)
        if patches:
            changes[PATCHES_DIR] = ("40000", self.write_tree(patches))
        changes[SERIES_FILE] = ("100644", self._blob(queue.series.dumps(), known))
        tree = self.edit(last_tree, changes)
        if tree == last_tree:
            return last
        return self.git.write_commit(tree, [last], committer, committer, message)

    def _blob(self, data: bytes, known: set[str]) -> str:
        oid = self.git.hash_blob(data)
        return oid if oid in known else self.git.write_blob(data)


def _is_tree(mode: bytes) -> bool:
    return mode in (b"40000", b"040000")
