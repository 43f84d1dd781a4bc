"""Verbs on the index and the working tree: listing, staging, checking out, moving HEAD
with the files, cherry-picks and rerere, and the throwaway worktrees of the gate.

A mixin of `pq.git.repo.Git`; every verb here changes or reads what a user sees in
`git status`, so each is one git command that refuses rather than overwrite their work.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Collection, Iterator, Sequence
from pathlib import Path

from pq.git.gateway import NO_HOOKS, stdin_lines, zsplit
from pq.git.merge import Merging

# The status code of an unmerged path by which of stages 1 (base), 2 (ours), 3 (theirs) it
# has, as bits 1, 2, 4.
_GIT_OPERATIONS = (("rebase-merge", "rebase"), ("rebase-apply", "rebase or am"),
                   ("MERGE_HEAD", "merge"), ("CHERRY_PICK_HEAD", "cherry-pick"),
                   ("REVERT_HEAD", "revert"))
_UNMERGED = {1: "DD", 2: "AU", 3: "UD", 4: "UA", 5: "DU", 6: "AA", 7: "UU"}


def _many(paths: Sequence[str], limit: int = 128) -> Callable[[str], bool] | None:
    """For more than `limit` literal pathspecs, each a plain relative path: whether a path
    is one of them or under one. git matches each index entry against each pathspec (5,000
    of them in an index of 5,000 files: 140 ms; the whole index listed: 5 ms), so pq lists
    it all and keeps those itself. None: fewer, or odd ones (git matches them)."""
    if len(paths) <= limit or not all(
            all(c not in ("", ".", "..") for c in p.split("/")) for p in paths):
        return None
    wanted = set(paths)

    def kept(path: str) -> bool:
        while path not in wanted:
            if (cut := path.rfind("/")) < 0:
                return False
            path = path[:cut]
        return True
    return kept


# For git commands pq runs on the user's behalf that would run the user's hooks
# (post-checkout): what pq does is not what the hooks are for.


class WorkingTree(Merging):
    def status_porcelain(self, untracked: bool = False, paths: Sequence[str] = (),
                         all_untracked: bool = False, renames: bool = True
                         ) -> list[tuple[str, str]]:
        """(two-letter status code, path) of every changed path, as `git status` sees it."""
        args = ["--literal-pathspecs", "status", "--porcelain=v1", "-z"]
        args.append("--untracked-files=all" if all_untracked else
                    "--untracked-files=normal" if untracked else "--untracked-files=no")
        if not renames:
            args.append("--no-renames")
        fields = zsplit(self.run(*args, "--", *paths))
        entries = []
        i = 0
        while i < len(fields):
            code, path = fields[i][:2], fields[i][3:]
            i += 2 if code[0] in "RC" else 1  # a rename's source follows as its own field
            entries.append((code, path))
        return entries

    def unmerged(self) -> dict[str, str]:
        """{path: `git status` code (UU, AA, DU, UD, AU, UA, DD)} of every unmerged path."""
        return {path: code for path, (code, _) in self.unmerged_kinds().items()}

    def unmerged_kinds(self) -> dict[str, tuple[str, bool]]:
        """{path: (its `git status` code, whether a stage is a submodule)} of every unmerged
        path, read from the index's stages alone (`ls-files -u`; no file is looked at): the
        code is git's own for the set of stages present (wt-status.c)."""
        stages: dict[str, tuple[int, bool]] = {}
        for record in zsplit(self.run("ls-files", "-u", "-z")):
            info, _, path = record.partition("\t")
            mask, gitlink = stages.get(path, (0, False))
            stages[path] = (mask | 1 << (int(info.rsplit(" ", 1)[1]) - 1),
                            gitlink or info.startswith("160000 "))
        return {path: (_UNMERGED[mask], gitlink) for path, (mask, gitlink) in stages.items()}

    def ls_files(self, paths: Sequence[str] = (), *, stage: bool = False,
                 cached: bool = False, others: bool = False, literal: bool = False,
                 ignored_too: bool = False, env: dict[str, str] | None = None) -> list[str]:
        """`git ls-files` records (`-s`: "mode id stage\\tpath"); `others`: untracked
        files, ignored ones left out unless `ignored_too`."""
        args = ["--literal-pathspecs"] if literal else []
        args += ["ls-files", "-z"]
        args += ["-s"] if stage else []
        args += ["--cached"] if cached else []
        args += ["--others"] if others else []
        args += ["--exclude-standard"] if others and not ignored_too else []
        literal = literal or (env or {}).get("GIT_LITERAL_PATHSPECS") == "1"
        keep = _many(paths) if literal and not others else None
        listed = zsplit(self.run(*args, "--", *(() if keep else paths), env=env))
        return listed if keep is None else [
            r for r in listed if keep(r.split("\t", 1)[1] if stage else r)]

    def operation_in_progress(self) -> tuple[str, str] | None:
        """(the operation, the file in the git folder that tells) while git itself is in
        the middle of a rebase, `git am`, merge, cherry-pick or revert; None otherwise."""
        for name, operation in _GIT_OPERATIONS:
            if (self.git_dir / name).exists():
                return operation, name
        return None

    def submodules(self, paths: Sequence[str]) -> set[str]:
        """Those of `paths` the index holds as a submodule (a gitlink): a change git lists
        there, not staged, is the submodule's own checkout, which `git rebase` does not
        count as the working tree's (nor does a move of HEAD touch it)."""
        if not paths:
            return set()
        return {rec.partition("\t")[2] for rec in self.ls_files(paths, stage=True, literal=True)
                if rec.startswith("160000 ")}

    def outside_sparse_checkout(self, paths: Sequence[str]) -> list[str]:
        """Those of `paths` (or under them) the index holds but a sparse checkout leaves
        out of the working tree (skip-worktree), sorted."""
        if not self.sparse_checkout():
            return []
        return sorted(p for p, tag in self._tags(paths) if tag in "Ss")

    def sparse_checkout(self) -> bool:
        """Whether this worktree has a sparse checkout's patterns (`git add` then refuses a
        path outside them without `--sparse`)."""
        return any((d / "info" / "sparse-checkout").is_file()
                   for d in (self.git_dir, self.common_dir))

    def flagged(self, paths: Sequence[str]) -> set[str]:
        """Those of `paths` (none: the whole index) whose index entry is marked
        assume-unchanged or skip-worktree: git does not look at their files."""
        return {p for p, tag in self._tags(paths) if tag.islower() or tag == "S"}

    def _tags(self, paths: Sequence[str]) -> Iterator[tuple[str, str]]:
        """(path, its `git ls-files -v` tag) of the index entries of `paths` (or under
        them): S skip-worktree, lower case assume-unchanged (s both)."""
        keep = _many(paths)
        listed = zsplit(self.run("--literal-pathspecs", "ls-files", "-v", "-z", "--",
                                 *(() if keep else paths)))
        return ((rec[2:], rec[:1]) for rec in listed if keep is None or keep(rec[2:]))

    def worktree(self) -> dict[str, str]:
        """This worktree as pq records it (a rebase's state, a snapshot): `id`, its git
        folder under the common one ("." for the main worktree; the same when the
        repository moves), and `root`, its path."""
        return {"id": os.path.relpath(os.path.realpath(self.git_dir),
                                      os.path.realpath(self.common_dir)),
                "root": str(self.root)}

    def other_worktree(self, recorded: dict[str, str] | None) -> str | None:
        """The path of the worktree `recorded` names, when it is not this one (None also
        for a record that names none, as older versions wrote them)."""
        if not recorded or recorded.get("id") == self.worktree()["id"]:
            return None
        return self._moved_to(recorded.get("id", "")) or recorded.get("root") or \
            recorded.get("id")

    def _moved_to(self, worktree_id: str) -> str | None:
        """Where the linked worktree `worktree_id` (`worktrees/NAME`) is now, as git keeps
        it (`git worktree move` rewrites its `gitdir` file); None when git keeps none."""
        try:
            gitfile = (self.common_dir / worktree_id / "gitdir").read_text().strip()
        except (OSError, UnicodeDecodeError):
            return None
        return os.path.dirname(gitfile) if worktree_id.startswith("worktrees") else None

    def worktree_gone(self, recorded: dict[str, str] | None) -> bool:
        """Whether `recorded` (Gateway.worktree's record) names another worktree that is
        gone: removed (`git worktree remove`), or its folder deleted (not moved: `git
        worktree move` tells git where it went)."""
        if (root := self.other_worktree(recorded)) is None or not recorded:
            return False
        return not (self.common_dir / recorded.get("id", "")).is_dir() or not os.path.isdir(
            root)

    def untracked(self, paths: Sequence[str], ignored_too: bool = False) -> list[str]:
        """Those of `paths` that stand in the working tree untracked (not ignored, unless
        `ignored_too`), sorted: what a checkout of a commit that has them would refuse to
        overwrite (an ignored file git overwrites)."""
        present = [p for p in paths if os.path.lexists(self.root / p)]
        return sorted(set(self.ls_files(present, others=True, literal=True,
                                        ignored_too=ignored_too))) if present else []

    def add(self, paths: Sequence[str], *, all: bool = False, tracked: bool = False) -> None:
        """Stage `paths` (literal paths; `all`: removals too; `tracked`: only the files
        git tracks there, as `add -u`); none: nothing (git would take every path)."""
        if paths:
            how = ["-u"] if tracked else ["-A"] if all else []
            self.run("--literal-pathspecs", "add", *how, "--", *paths)

    def ignored(self, paths: Sequence[str]) -> set[str]:
        """Those of `paths` that a rule of .gitignore, info/exclude or core.excludesFile
        names, tracked or not (`git add` refuses such a path, even a folder git tracks
        files in)."""
        if not paths:
            return set()
        out = self.run("check-ignore", "--no-index", "-z", "--stdin",  # paths, not pathspecs
                       input=b"".join(os.fsencode(p) + b"\0" for p in paths), ok_codes=(0, 1))
        return set(zsplit(out))

    def refresh_index(self) -> None:
        self.run("update-index", "-q", "--refresh", ok_codes=(0, 1))

    def hash_files(self, paths: Sequence[str]) -> list[str]:
        """The blob id `git add` would give each working-tree file (filters applied); a
        name git's `--stdin-paths` reads otherwise (a leading `"`, a line break) is the
        caller's to keep out, as `queue.cleanform.clean_forms` does."""
        return self.text("-c", "core.safecrlf=false", "hash-object", "--stdin-paths",
                         input=stdin_lines(paths)).split()

    def moves(self, old: str, new: str) -> list[tuple[str, str]]:
        """(status letter, path) of each file a checkout from `old` to `new` changes."""
        fields = zsplit(self.run("diff-tree", "-r", "-z", "--name-status", "--no-renames",
                                 "--ignore-submodules=none", old, new, "--"))
        return list(zip(fields[::2], fields[1::2], strict=True))

    def unwritable_folders(self, paths: Sequence[str]) -> list[str]:
        """The folders of `paths` (or their nearest existing folder above) in which this
        user may not create or remove a file: git's checkouts leave a file there as it was,
        say so, and exit 0 all the same."""
        found = set()
        for folder in {os.path.dirname(p) for p in paths}:
            while folder and not os.path.isdir(self.root / folder):
                folder = os.path.dirname(folder)
            if not os.access(self.root / folder, os.W_OK | os.X_OK):
                found.add(folder or ".")
        return sorted(found)

    def move_refused(self, old: str, new: str) -> str | None:
        """Why git would refuse to move the index and files from `old` to `new` (as `reset
        --keep` does), in a dry run that writes nothing; None when it would not."""
        proc = self.run_proc("read-tree", "-m", "-u", "-n", old, new)
        return None if proc.returncode == 0 else proc.stderr.decode("utf-8", "surrogateescape")

    def store_file(self, path: str) -> None:
        """Write the blob `git add` would make of a working-tree file."""
        self.run("-c", "core.safecrlf=false", "hash-object", "-w", "--", path)

    def checkout(self, rev: str, detach: bool = False, env: dict[str, str] | None = None
                 ) -> None:
        """Switch HEAD to `rev` (a branch name; `detach`: any commit), updating the files;
        the user's post-checkout hook is not run."""
        self.run(*NO_HOOKS, "checkout", "-q", *(["--detach"] if detach else []), rev, env=env,
                 moves_files=True)

    def checkout_paths(self, paths: Sequence[str], rev: str | None = None,
                       merge: bool = False) -> None:
        """Write `paths` from `rev` (or the index) into the working tree (`merge`: the
        conflict again, from the index's stages); the user's post-checkout hook is not run
        (a checkout of paths runs it, and fails with it)."""
        self.run(*NO_HOOKS, "--literal-pathspecs", "checkout", *(["-m"] if merge else ["-q"]),
                 *([rev] if rev else []), "--", *paths)

    def reset_paths(self, rev: str, paths: Sequence[str]) -> None:
        """`git reset <rev> -- paths`: their index entries as `rev` has them (files left)."""
        self.run("--literal-pathspecs", "reset", "-q", rev, "--", *paths)

    def reset(self, mode: str, rev: str, env: dict[str, str] | None = None) -> None:
        """`git reset --<mode>` (hard, keep) of the current branch to `rev`."""
        self.run("reset", f"--{mode}", "-q", rev, env=env, moves_files=True)

    def cherry_pick_no_commit(self, pick: str, config: Sequence[str] = (),
                              env: dict[str, str] | None = None) -> tuple[int, str]:
        """`git cherry-pick --no-commit` with `-c` settings: (exit code, git's stderr, the
        paths it names as they are: a name that is not UTF-8 keeps its bytes)."""
        settings = [a for c in config for a in ("-c", c)]
        proc = self.run_proc(*settings, "cherry-pick", "--no-commit", pick, env=env)
        return proc.returncode, proc.stderr.decode("utf-8", "surrogateescape")

    def rerere(self) -> None:
        """Record the resolutions of the conflicts git rerere follows."""
        self.run("-c", "rerere.enabled=true", "rerere")

    def set_index_entries(self, now: list[str], entries: list[str], refresh: bool = True,
                          rewritten: Collection[str] = ()) -> bool:
        """Replace the index entries `now` (`git ls-files -s` lines) with `entries`; with
        `refresh`, stat data is refreshed, so that unchanged files do not look modified.
        The entries of `rewritten` paths (files just written) are set again even when they
        are unchanged: without stat data, the refresh compares their content, where a
        checkout's stat data (a CRLF checkout's size) would keep bytes that git stores as
        the same blob looking modified. Whether the index was written."""
        if sorted(now) == sorted(entries):
            stale = sorted(e for e in entries if e.split("\t", 1)[1] in rewritten)
            if not stale:
                return False
            self.update_index_info(stale)
        else:
            gone = sorted({e.split("\t", 1)[1] for e in now})
            self.update_index_info([f"0 {self.null_id()}\t{path}" for path in gone]
                                   + sorted(entries))
        if refresh:
            self.refresh_index()
        return True

    def matches_index(self, paths: Sequence[str]) -> bool:
        """Whether every file under `paths` is as its index entry says, stat data included
        (`diff-files`, no refresh: a file rewritten with the same bytes differs until the
        index is refreshed, and `reset --keep` refuses it too), and no entry there is marked
        assume-unchanged or skip-worktree (`diff-files` trusts those marks; a checkout or
        `reset --keep` does not)."""
        env = {"GIT_LITERAL_PATHSPECS": "1"}
        tags = zsplit(self.run_proc("ls-files", "-v", "-z", "--", *paths, env=env).stdout)
        if any(not t.startswith("H ") for t in tags):
            return False
        return self.run_proc("diff-files", "--quiet", "--", *paths, env=env).returncode == 0

    def changed_from(self, commit: str = "HEAD", paths: Sequence[str] = (),
                     env: dict[str, str] | None = None) -> set[str]:
        """Paths (of `paths`, if any) whose index entry differs from `commit`'s or whose
        file differs from the index's: for HEAD, what `git status` lists as staged or not
        staged."""
        changed: set[str] = set()
        if paths:  # file names, not patterns
            env = {**(env or {}), "GIT_LITERAL_PATHSPECS": "1"}
        for args in (("diff-index", "--cached", "--name-only", "-z", commit),
                     ("diff-files", "--name-only", "-z")):
            changed.update(zsplit(self.run_proc(*args, "--", *paths, env=env).stdout))
        return changed

    def index_is(self, commit: str) -> bool:
        """Whether the index holds `commit`'s tree (unmerged entries: it does not)."""
        return self.run_proc("diff-index", "--cached", "--quiet", commit, "--").returncode == 0

    def try_move_head(self, commit: str, branch: str | None, *, create: bool = False,
                      env: dict[str, str] | None = None) -> tuple[bool, bytes]:
        """Move HEAD, the index and the working tree to `commit` in one git command, which
        refuses rather than overwrite uncommitted work and carries the rest, staged or not,
        as a checkout does: `branch` (None: detached) is checked out, made to point at
        `commit` first when `create` (the current branch too). (done, git's stderr)."""
        if branch is None:
            args = [*NO_HOOKS, "checkout", "-q", "--detach", commit]
        elif create:
            args = [*NO_HOOKS, "checkout", "-q", "-B", branch, commit]
        else:
            args = [*NO_HOOKS, "checkout", "-q", branch]
        proc = self.run_proc(*args, env=env, moves_files=True)
        return proc.returncode == 0, proc.stderr

    def add_worktree(self, path: Path, commit: str) -> None:
        """A detached worktree of `commit` at `path`, with no hook of the user's run."""
        self.run(*NO_HOOKS, "worktree", "add", "--detach", "--force",
                 str(path), commit)

    def remove_worktree(self, path: Path) -> None:
        """Remove a worktree (dirty or locked alike), its folder even where git could not,
        and what git keeps about it: about it alone (a `git worktree prune` would also drop
        the user's worktrees whose folders are away just now)."""
        self.run_proc("worktree", "remove", "--force", "--force", str(path))
        import shutil  # a cleanup needs it; most commands never get here

        shutil.rmtree(path, ignore_errors=True)
        try:
            entries = list((self.common_dir / "worktrees").iterdir())
        except OSError:  # none; or another `git worktree remove` took the emptied folder
            entries = []
        for entry in entries:
            try:
                points = (entry / "gitdir").read_text().strip()
            except OSError:
                continue
            if os.path.normpath(points) == os.path.normpath(str(path / ".git")):
                shutil.rmtree(entry, ignore_errors=True)

    def worktrees(self) -> list[tuple[Path, str | None]]:
        """(folder, checked-out branch ref or None) of every worktree git knows, the main
        one first."""
        out = self.run_proc("worktree", "list", "--porcelain").stdout
        found = []
        for block in out.decode("utf-8", "surrogateescape").split("\n\n"):
            fields = dict(line.partition(" ")[::2] for line in block.splitlines())
            if "worktree" in fields:
                found.append((Path(fields["worktree"]), fields.get("branch")))
        return found

    def worktree_paths(self) -> list[Path]:
        """The folders of every worktree git knows, the main one first."""
        return [where for where, _ in self.worktrees()]

    def branches_elsewhere(self) -> dict[str, Path]:
        """{branch ref: worktree folder} of the branches other worktrees have checked out."""
        if not (self.common_dir / "worktrees").is_dir():
            return {}  # no linked worktree: this one, the main one, is the only one
        here = self.root.resolve()
        return {branch: where for where, branch in self.worktrees()
                if branch is not None and where.resolve() != here}

    @staticmethod
    def worktree_key(where: Path) -> str:
        """What names the worktree at `where` wherever `git worktree move` takes it: its
        folder in the git dir's `worktrees/` (the main worktree: "")."""
        try:
            named = (where / ".git").read_bytes().decode("utf-8", "surrogateescape")
        except OSError:  # a folder (the main worktree's), or gone
            return ""
        return Path(named.removeprefix("gitdir:").strip()).name
