"""The git vocabulary: class `Git`, every git operation pq needs as a small named verb.

Built on pq.git.gateway (processes, objects), pq.git.merge (merges, private indexes) and
pq.git.history (the commit graph); outside pq.git nothing spells a git command line.
Verbs are general (a name per git operation, not per caller) and return data: ids,
paths, parsed records.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path

from pq.errors import ConfigError, GitError
from pq.git.gateway import stdin_lines, zsplit
from pq.git.history import EVERY_SUBMODULE, History
from pq.git.objects import FULL_ID, HEX_ID, Change, CommitId, Person

# Diff options pinned so that user configuration never changes a patch file's bytes.
DIFF_CONFIG = ("-c", "diff.noprefix=false", "-c", "diff.mnemonicPrefix=false",
               "-c", "diff.suppressBlankEmpty=false", "-c", "diff.relative=false",
               "-c", "core.quotePath=true", "-c", "diff.orderFile=")
# `git log -p` and `git diff` refuse an empty diff.orderFile (only diff-tree takes it); in a
# sealed directory no configuration sets one.
PORCELAIN_DIFF_CONFIG = DIFF_CONFIG[:-2]
DIFF_OPTIONS = ("--no-color", "--no-ext-diff", "--no-textconv", "--binary", "--full-index",
                "--find-renames", "--diff-algorithm=myers", "--indent-heuristic",
                "--src-prefix=a/", "--dst-prefix=b/", EVERY_SUBMODULE)


# Names cat-file resolves exactly as `rev-parse --verify` does, with no message and no
# chance of dying on the way: a full object id, HEAD, a full ref name.
_PLAIN_NAME = re.compile(rf"{FULL_ID}|HEAD|refs/[A-Za-z0-9._/-]+")  # matched whole


class Git(History):
    """One repository: the gateway, merges, and the named verbs below."""

    def __init__(self, root: Path, git_dir: Path, common_dir: Path) -> None:
        super().__init__(root, git_dir, common_dir)
        self._changes: dict[str, list[Change]] = {}  # commit_changes' answers: they never change
        self._author: Person | None = None

    # -- revisions ----------------------------------------------------------------

    def resolve(self, rev: str, what: str = "revision") -> CommitId:
        found = self.try_resolve(rev)
        if found is not None:
            return found
        kind = self.odb.object_type(rev)  # a tree or a blob, named: not "unknown"
        if kind:
            raise ConfigError(f"{what} {rev!r} names a {kind}, not a commit",
                              hint="name a commit: a branch, a tag of a commit, a commit id")
        # A shallow clone explains a commit id it lacks, or `X~N` of a name it has: not a
        # name that is no ref at all (a typo).
        cut = (self.common_dir / "shallow").is_file() and bool(HEX_ID.fullmatch(rev) or (
            (name := re.match(r"(.+?)[~^]", rev)) and self.try_resolve(name.group(1))))
        raise ConfigError(f"unknown {what} {rev!r}" + " in this shallow clone" * cut, hint=(
            "`git fetch --unshallow`, then run it again; or check the name with `git rev-parse`"
            if cut else "check the name with `git rev-parse`, or `git fetch` it first"))

    def try_resolve(self, rev: str) -> CommitId | None:
        if _PLAIN_NAME.fullmatch(rev):  # asked of the running cat-file: no process
            found = self.odb.read_many([rev + "^{commit}"])[0]
            return CommitId(found[0]) if found is not None and found[1] == "commit" else None
        # `:/<text>` (and `<rev>:<path>`) would read a `^{commit}` after it as part of
        # the text (the path): named first, then peeled.
        peel = ":" not in rev
        proc = self.run_proc("rev-parse", "--verify", "--quiet", "--end-of-options",
                             rev + "^{commit}" if peel else rev)
        named = proc.stdout.decode().strip() if proc.returncode == 0 else None
        return CommitId(named) if named and peel else self.try_resolve(named) if named else None

    def ref_exists(self, ref: str) -> bool:
        return self.run_proc("rev-parse", "--verify", "--quiet", ref).returncode == 0

    def has_refs_under(self, *prefixes: str, contains: str | None = None) -> bool:
        """Whether a ref is under `prefixes` (folders: `refs/x/`), holding `contains` if given."""
        return bool(self.text("for-each-ref", "--count=1", "--format=x", *(
            ["--contains", contains] if contains else []), *prefixes).strip())

    def current_branch(self) -> str | None:
        try:  # HEAD as git keeps it: `ref: refs/heads/<name>`, or an id when detached;
            # a name's bytes that are not UTF-8 as their `\udcXX` escapes, as git has them
            head = (self.git_dir / "HEAD").read_bytes().decode("utf-8", "surrogateescape")
        except OSError:
            head = ""
        if head.endswith("\n") and head.count("\n") == 1:
            if head.startswith("ref: refs/"):
                return head[5:-1]
            if HEX_ID.fullmatch(head[:-1]):
                return None
        proc = self.run_proc("symbolic-ref", "--quiet", "HEAD")
        return proc.stdout.decode("utf-8", "surrogateescape").strip() \
            if proc.returncode == 0 else None

    def head(self) -> CommitId:
        found = self.try_resolve("HEAD")
        if found is None:
            raise ConfigError("HEAD names no commit (a branch with no commits yet?)",
                              hint="check out the fork's branch (`git switch <branch>`), or "
                                   "commit first")
        return found

    def valid_branch_name(self, name: str) -> bool:
        """Whether `git branch NAME` would take `name` (`git check-ref-format` rules)."""
        return (not name.startswith("-") and name != "HEAD" and self.run_proc(
            "check-ref-format", f"refs/heads/{name}").returncode == 0)

    def committer_now(self) -> Person:
        return self._identity("GIT_COMMITTER_IDENT", "committer")

    def author_now(self) -> Person:
        """The author `git commit` would give now; asked of git once per repository object
        (a rebase asks it alongside the committer, not at its landing)."""
        if self._author is None:
            self._author = self._identity("GIT_AUTHOR_IDENT", "author")
        return self._author

    def _identity(self, var: str, role: str) -> Person:
        """git's `role` identity now; where git has none, what to configure."""
        proc = self.run_proc("var", var)
        if proc.returncode == 0:
            return Person.parse(proc.stdout.decode("utf-8", "surrogateescape").strip())
        said = proc.stderr.decode("utf-8", "replace").splitlines()
        why = next((ln.removeprefix("fatal: ") for ln in reversed(said)
                    if ln.startswith("fatal: ")), "`git var " + var + "` failed")
        if why.startswith("invalid date format"):  # GIT_COMMITTER_DATE, GIT_AUTHOR_DATE
            variable = f"GIT_{role.upper()}_DATE"
            raise ConfigError(f"git cannot read {variable} ({why}), the date of pq's commits",
                              hint=f"unset {variable}, or give it a date git reads (`2026-12-01 "
                                   "10:00:00 +0100`, `@1700000000 +0000`)")
        raise ConfigError(
            f"git has no {role} identity to write pq's commits with: {why}",
            hint="set it with `git config --global user.name \"Your Name\"` and "
                 "`git config --global user.email you@example.com`, then run the command "
                 "again")

    def config_matching(self, regexp: str) -> dict[str, str]:
        """{key: value} of the configuration whose keys match `regexp` (last one wins)."""
        found = {}
        for item in zsplit(self.run_proc("config", "-z", "--get-regexp", regexp).stdout):
            key, _, value = item.partition("\n")
            found[key] = value
        return found

    # -- trees and diffs ---------------------------------------------------------

    def ls_tree(self, tree: str, paths: Sequence[str] = ()) -> list[tuple[str, str, str, str]]:
        """(mode, type, object, path) entries, recursively, for paths in tree (each a path,
        never a pattern: `:(top)x` names a file of that name)."""
        entries = []
        for rec in zsplit(self.run("--literal-pathspecs", "ls-tree", "-r", "-z", "--full-tree",
                                   tree, "--", *paths)):
            meta, path = rec.split("\t", 1)
            mode, kind, obj = meta.split()
            entries.append((mode, kind, obj, path))
        return entries

    def changed_paths(self, old: str, new: str, diff_filter: str | None = None,
                      pathspec: Sequence[str] = ()) -> list[str]:
        """The paths that differ between two trees (of `diff_filter`: A, D..., `pathspec`)."""
        filt = [f"--diff-filter={diff_filter}"] if diff_filter else []
        return zsplit(self.run("diff-tree", "-r", "-z", "--name-only", "--no-renames", *filt,
                               EVERY_SUBMODULE, old, new, "--", *pathspec))

    def renamed_paths(self, *pairs: tuple[str, str]) -> dict[str, str]:
        """{old path: new path} for each file git finds renamed between the two trees of
        each pair (more than one: commit ids, in one process; a later pair's word wins)."""
        args = ("diff-tree", "-r", "-z", "--find-renames", "--name-status", EVERY_SUBMODULE)
        out = self.run(*args, *pairs[0], "--") if len(pairs) == 1 else self.run(  # (read as
            *args, "--stdin", input=stdin_lines(f"{b} {a}" for a, b in pairs))  # commit parent)
        fields = out.decode("utf-8", "surrogateescape").split("\0")
        renames: dict[str, str] = {}
        i = 0
        while i < len(fields) - 1:
            if len(fields[i]) > 4:  # (a status is a letter and a score) a pair's first id
                i += 1
                continue
            if fields[i].startswith("R"):
                renames[fields[i + 1]] = fields[i + 2]
            i += 3 if fields[i].startswith(("R", "C")) else 2
        return renames

    def commit_changes(self, commits: Sequence[str]) -> dict[str, list[Change]]:
        """What each commit changes against its first parent, path by path (one process, for
        the commits not asked about before in this process)."""
        missing = [c for c in dict.fromkeys(commits) if c not in self._changes]
        if missing:
            self._changes.update(self._read_changes(missing))
        return {c: list(self._changes[c]) for c in commits}

    def _read_changes(self, commits: list[str]) -> dict[str, list[Change]]:
        result: dict[str, list[Change]] = {c: [] for c in commits}
        fields = self.run("diff-tree", "--stdin", "-r", "-z", "--no-renames", EVERY_SUBMODULE,
                          input=stdin_lines(commits)).split(b"\0")
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

    def commit_patches(self, commits: Sequence[str], exclude: Sequence[str] = (),
                       renames: bool = True, as_git_sees: bytes | None = None) -> dict[str, bytes]:
        """{commit: its diff against its first parent} (b"" when empty), with pq's pinned
        diff options (`renames=False`: a rename as a deletion and an addition, as git's
        patch ids see it), leaving out the pathspecs `exclude` (one sealed process). With
        `as_git_sees` (attributes, see `attributes_from`): under the repository's settings
        and those attributes, which with core.bigFileThreshold say which files are binary,
        as for git's own patch ids (whatever the working tree holds)."""
        parts = dict.fromkeys(commits)
        if not parts:
            return {}
        options = DIFF_OPTIONS if renames else (*DIFF_OPTIONS, "--no-renames")
        args = (*DIFF_CONFIG, "diff-tree", "--stdin", "--always", "--root", "-p", *options,
                "--", *exclude)  # (`--root`: a root commit's diff is against no tree)
        out = self.run_sealed("diff" if as_git_sees is None else "merge", *args,
                              input=stdin_lines(parts), attributes=as_git_sees or b"")
        # Each commit's id line, in the order given (no diff line is bare hex, not even a
        # binary patch's base85 line: found at once, not line by line through megabytes)
        found: list[tuple[str, int, int]] = []  # (commit, its id line's start, its diff's)
        at = 0
        for c in parts:
            key = c.encode("utf-8", "surrogateescape") + b"\n"
            if out.startswith(key, at):
                start = at
            elif (hit := out.find(b"\n" + key, at)) >= 0:
                start = hit + 1
            else:
                continue
            found.append((c, start, start + len(key)))
            at = start + len(key)
        ends = [start for _, start, _ in found[1:]] + [len(out)]
        diffs = dict.fromkeys(parts, b"")
        diffs.update((c, out[body:end]) for (c, _, body), end in zip(found, ends))
        return diffs

    def range_diffs(self, old: str, new: str, context: int = 0
                    ) -> tuple[list[tuple[CommitId, bytes]], int]:
        """(commit, its diff, `context` lines around each change, binary files as one line)
        for each commit of old..new, oldest first (one sealed process, pq's pinned diff
        options), and how many commits old..new holds. A merge's diff is what its author
        changed beyond git's own merge of its parents (`--remerge-diff`: empty for a clean
        merge; a conflict's resolution, or an evil merge's own lines, otherwise).

        A range with a root commit in it (upstream's history rewritten, squashed, or cut
        off by a shallow fetch) is one change, `new` against `old` as trees: a root's own
        diff would count every line of every file as new."""
        options = [o for o in DIFF_OPTIONS if o != "--binary"]
        # Newest first, turned round below: git 2.39's `--reverse` spoils remerge diffs.
        out = self.run_sealed("diff", *PORCELAIN_DIFF_CONFIG, "log", "--diff-merges=remerge",
                              "--topo-order", "--format=%x01%H %P", "-p", f"-U{context}",
                              *options, f"{old}..{new}", "--")
        chunks = (b"\n" + out).split(b"\n\x01")[1:]
        found = []
        for chunk in chunks:
            head, _, body = chunk.partition(b"\n")
            commit, _, parents = head.decode().strip().partition(" ")
            if not parents:  # a root: the range is one change, as trees (above)
                whole = self.diff_commits(old, new, context=context)
                return [(self.resolve(new, "commit"), whole)], len(chunks)
            body = body.lstrip(b"\n")  # and its last line's newline, which the split took
            found.append((CommitId(commit),
                          body + b"\n" if body and not body.endswith(b"\n") else body))
        return found[::-1], len(chunks)

    def diff_commits(self, old: str, new: str, paths: Sequence[str] = (),
                     context: int | None = None) -> bytes:
        """The diff of `paths` (none: all) from commit `old` to `new`, with pq's pinned diff
        options (b"" when the same); with `context`, as `range_diffs` gives a commit's."""
        options = DIFF_OPTIONS if context is None else (
            f"-U{context}", *(o for o in DIFF_OPTIONS if o != "--binary"))
        return self.run_sealed("diff", *PORCELAIN_DIFF_CONFIG, "diff", *options, old, new,
                               "--", *paths)

    def diff_names(self, *revs: str, paths: Sequence[str] = (),
                   diff_filter: str | None = None) -> list[str]:
        """`git diff --name-only`: paths changed in the working tree against the index (or
        against `revs`)."""
        filt = [f"--diff-filter={diff_filter}"] if diff_filter else []
        return zsplit(self.run("diff", "--name-only", "-z", *filt, *revs, "--", *paths))

    def diff_name_status(self) -> list[tuple[str, str]]:
        """(status letter, path) of each change in the working tree against the index."""
        fields = zsplit(self.run("diff", "--name-status", "-z"))
        return list(zip(fields[0::2], fields[1::2], strict=True))

    def binary_diff_paths(self, *revs: str) -> list[str]:
        """Paths whose diff between `revs` git calls binary (a `-diff` attribute, say)."""
        out = zsplit(self.run("diff", "--numstat", "-z", "--no-renames", *revs, "--"))
        return [f.split("\t", 2)[2] for f in out if f.startswith("-\t-\t")]

    def diff_check(self, rev: str) -> str:
        """`git diff --cached --check rev`, unquoted: the index against `rev`."""
        return self.text("-c", "core.quotePath=false", "diff", "--check", "--no-color",
                         "--cached", rev, "--", ok_codes=(0, 1, 2))

    # -- refs and notes -------------------------------------------------------------

    def update_ref(self, ref: str, new: str, old: str | None = None, message: str = "pq") -> None:
        self.run("update-ref", "-m", message, ref, new, *([old] if old is not None else []))

    def delete_ref(self, ref: str) -> None:
        self.run("update-ref", "-d", ref)

    def list_refs(self, *prefixes: str) -> list[tuple[str, str, str, bool]]:
        """(ref name, object type, object id, whether HEAD is that branch) of every ref
        under `prefixes` (`refs/heads/`, say), in git's order."""
        out = self.text("for-each-ref",
                        "--format=%(refname)\t%(objecttype)\t%(objectname)\t%(HEAD)",
                        *prefixes)
        found = []
        for line in out.splitlines():
            name, kind, oid, head = line.rsplit("\t", 3)
            found.append((name, kind, oid, head == "*"))
        return found

    def update_refs(self, updates: Sequence[tuple[str, str | None, str]], message: str,
                    env: dict[str, str] | None = None) -> None:
        """One atomic `update-ref --stdin`: each (ref, new or None to delete, expected old
        value: the null id for "must not exist") or none of them."""
        lines = [f"delete {ref} {old}\n" if new is None else f"update {ref} {new} {old}\n"
                 for ref, new, old in updates]
        if lines:
            self.run("update-ref", "-m", message, "--stdin",
                     input="".join(lines).encode("utf-8", "surrogateescape"), env=env)

    def symbolic_ref(self, ref: str, target: str, message: str) -> None:
        self.run("symbolic-ref", "-m", message, ref, target)

    def git_path(self, name: str) -> Path:
        """Where git keeps `name` (`hooks`, say), honouring core.hooksPath and worktrees."""
        path = Path(self.text("rev-parse", "--git-path", name).strip())
        return path if path.is_absolute() else self.root / path

    def notes(self, ref: str, commit: str | None = None) -> list[tuple[str, str]]:
        """(note blob, annotated commit) of the notes in `ref` (only `commit`'s, if given);
        none when `ref` does not exist."""
        if not self.ref_exists(ref):
            return []
        proc = self.run_proc("notes", f"--ref={ref}", "list", *([commit] if commit else []))
        if proc.returncode != 0:
            if commit is not None:
                return []  # no note on that commit
            raise GitError(f"`git notes --ref={ref} list` failed: {proc.stderr.decode()}")
        found = []
        for line in proc.stdout.decode().splitlines():
            blob, _, annotated = line.partition(" ")
            found.append((blob, annotated or (commit or "")))
        return found

    def add_note(self, ref: str, commit: str, blob: str) -> None:
        """Attach `blob` as it is (no clean-up) as `commit`'s note in `ref`, replacing any."""
        self.run("notes", f"--ref={ref}", "add", "-f", "-C", blob, commit)

    # -- verbs added for rebase --
    # The tip a branch had before pq last moved it (`pq apply`, `pq rebase`):
    # refs/pq/orig-head/<branch>. Older pq kept one ref for all branches, refs/pq/orig-head:
    # removed on the next write (git cannot keep a ref and a folder of refs of one name).
    ORIG_HEAD_REF = "refs/pq/orig-head"

    def orig_head_ref(self, branch: str) -> str:
        return f"{self.ORIG_HEAD_REF}/{branch.removeprefix('refs/heads/')}"

    def set_orig_head(self, branch: str, commit: str | None, message: str) -> None:
        """Set (None: delete) refs/pq/orig-head/<branch>; the old all-branches ref goes, and
        so does the ref of a branch that is gone and whose name made a folder of this one
        (`feat` for `feat/x`, or the other way round: git keeps no ref and folder of refs of
        one name, so neither can there be such branches; the undo log keeps them)."""
        ref = self.orig_head_ref(branch)
        if commit is None:
            if self.try_resolve(ref) is not None:
                self.delete_ref(ref)
            return
        parts = ref.split("/")
        for above in ["/".join(parts[:i]) for i in range(3, len(parts))]:
            if self.try_resolve(above) is not None:  # refs/pq/orig-head itself among them
                self.delete_ref(above)
        if self.try_resolve(ref) != commit:
            try:
                self.update_ref(ref, commit, message=message)
            except GitError:
                below = [name for name, _, _, _ in self.list_refs(ref + "/")]
                if not below:
                    raise
                for name in below:
                    self.delete_ref(name)
                self.update_ref(ref, commit, message=message)
