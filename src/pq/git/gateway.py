"""The process gateway: how pq runs git, and the repository's objects through `ObjectDB`.

`Gateway` opens a repository and runs git in it (`run`, `run_proc`, `text`, `run_sealed`);
every failure raises `GitError` with the command, exit code and stderr. `zsplit` is the one
reader of git's NUL-separated output. Named verbs are built on this in pq.git.merge and
pq.git.repo; nothing outside pq.git spells a git command line.
"""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import threading
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Self

from pq.errors import ConfigError, GitError
from pq.faults import checkpoint
from pq.git.failures import failure
from pq.git.hold import held
from pq.git.objects import BlobId, Commit, CommitId, Person, TreeId, commit_object, parse_commit
from pq.git.odb import ObjectDB
from pq.git.process import pid_alive, usable_cores

# Variables git exports to hooks and aliases (pq always names its repository explicitly)
_SCRUBBED = {
    "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_COMMON_DIR",
    "GIT_NAMESPACE", "GIT_CEILING_DIRECTORIES", "GIT_DISCOVERY_ACROSS_FILESYSTEM",
    # ...and the caller's settings that change what git prints, which pq parses and
    # writes (a patch file's bytes must not depend on who runs pq).
    "GIT_DIFF_OPTS", "GIT_EXTERNAL_DIFF",
    # ...and the pathspec modes: pq writes its pathspecs with their magic spelled out
    # (`:(top,exclude)patches`), and passes a user's paths with --literal-pathspecs.
    "GIT_LITERAL_PATHSPECS", "GIT_GLOB_PATHSPECS", "GIT_NOGLOB_PATHSPECS", "GIT_ICASE_PATHSPECS",
}

def zsplit(out: bytes | str) -> list[str]:
    """The non-empty fields of git's `-z` output, as text (surrogateescaped bytes)."""
    text = out.decode("utf-8", "surrogateescape") if isinstance(out, bytes) else out
    return [f for f in text.split("\0") if f]


_UNWRITTEN = re.compile(rb"(?m)^error: ")
# No hook of the user's runs for what pq does in git's stead (a checkout, a private index).
NO_HOOKS = ("-c", "core.hooksPath=/dev/null")


def stdin_lines(items: Iterable[str]) -> bytes:
    """`items` one per line, as git's `--stdin` options read them."""
    return "".join(i + "\n" for i in items).encode("utf-8", "surrogateescape")


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env.update(LC_ALL="C", GIT_TERMINAL_PROMPT="0")
    if extra:
        env.update(extra)
    return env


def _folder_below(root: Path) -> Path | None:
    try:
        here = Path.cwd()
    except OSError:  # removed under pq's feet: nothing of it left to keep
        return None
    return here if here != root and here.is_relative_to(root) else None


class Gateway:
    """One repository, addressed by its top-level working directory."""

    def __init__(self, root: Path, git_dir: Path, common_dir: Path) -> None:
        self.root = root
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.env = clean_env()
        # The folder pq was started in, when it lies below the top of the working tree:
        # the git commands that move the working tree run there, and git then keeps that
        # folder even where it empties it (git >= 2.35 never removes its starting folder),
        # so a shell in patches/ still has a folder after a rebase stops.
        self.here = _folder_below(root)
        self._odb: ObjectDB | None = None
        self._version: tuple[int, int] | None = None
        self._format: str | None = None
        self._signing: bool | None = None
        self._workers_unset: bool | None = None
        self._sealed: dict[str, tuple[Path, dict[str, str]]] = {}
        self._sealing = threading.Lock()  # a scan in a thread may run sealed diffs too
        # Set while a command that changes the repository runs (pq.oplog.txn): see pq.git.hold.
        self.holding_interrupts = False
        # Set while pq's own work runs beside git (the drift scan beside a rebase's landing).
        self.working_beside = False
        tmp = common_dir / "pq" / "tmp"
        if tmp.is_dir():  # temp indexes of a pq that was killed
            _remove_stale_temp(tmp)

    # -- opening and closing -------------------------------------------------

    @classmethod
    def open(cls, path: str | Path = ".", *, environment: bool = False,
             bare: bool = False) -> Self:
        """The repository at `path`; `environment`: the one GIT_DIR and GIT_WORK_TREE
        name when they are set, as git takes it (the command line's repository)."""
        from pq.git.discover import locate

        root, git_dir, common, object_format = locate(Path(path), environment, bare)
        opened = cls(root, git_dir, common)
        opened._format = object_format
        return opened

    def close(self) -> None:
        if self._odb is not None:
            self._odb.close()
            self._odb = None

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the process gateway ---------------------------------------------------

    def run(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        ok_codes: Sequence[int] = (0,),
        cwd: Path | None = None,
        moves_files: bool = False,
    ) -> bytes:
        """Run git in this repository; raise GitError unless the exit code is in ok_codes."""
        proc = self.run_proc(*args, input=input, env=env, cwd=cwd, moves_files=moves_files)
        if proc.returncode not in ok_codes:
            raise failure(args, proc, self.git_dir / "index.lock")
        return proc.stdout

    def run_proc(self, *args: str, input: bytes | None = None,
                 env: dict[str, str] | None = None, cwd: Path | None = None,
                 interruptible: bool = False, moves_files: bool = False,
                 ) -> subprocess.CompletedProcess[bytes]:
        """`interruptible`: git only writes objects, so it runs in pq's process group even
        while a command holds Ctrl-C (see pq.git.hold), and may ask on the terminal.
        `moves_files`: a command without paths that checks files out (reset, checkout,
        read-tree -u): it runs in the folder pq started in (see `here`); where the new
        tree has a file in that folder's place, git refuses there, changing nothing, and
        the command runs again from the top (as before: the folder goes)."""
        if moves_files:
            args = (*self.checkout_settings(), *args)
        if moves_files and self.here is not None and cwd is None:
            there = self.run_proc(*args, input=input, env={
                **(env or {}), "GIT_DIR": str(self.git_dir), "GIT_WORK_TREE": str(self.root)},
                cwd=self.here, interruptible=interruptible)
            if there.returncode == 0 or b"since it is the current working directory" not in \
                    there.stderr:
                return there
        checkpoint("git " + (args[0] if args[0] != "-c" else next(
            (a for a in args if not a.startswith("-") and "=" not in a), "?")))
        full_env = dict(self.env)
        if env:
            full_env.update(env)
        with held(self.holding_interrupts and not interruptible, moves_files) as hold:
            with subprocess.Popen(["git", *args], stdin=None if input is None else subprocess.PIPE,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=full_env,
                                  cwd=str(cwd or self.root),
                                  # Beside the main thread too: a kill of pq's group
                                  # cannot stop it holding index.lock (`git status`).
                                  process_group=0 if self.holding_interrupts and not
                                  interruptible else None) as proc:
                hold.child = proc
                try:
                    out, err = hold.communicate(proc, input)
                except BaseException:
                    proc.kill()
                    raise
            # git's checkouts (of a branch, `reset --keep`, `read-tree -u`) say so of a file
            # they could not write (a folder not writable) and exit 0 all the same.
            failed = moves_files and proc.returncode == 0 and _UNWRITTEN.search(err)
            return subprocess.CompletedProcess(proc.args, 1 if failed else proc.returncode,
                                               out, err)

    def checkout_settings(self) -> list[str]:
        """`-c checkout.workers=N` for a command that checks files out, where the
        configuration leaves checkout.workers unset: git writes a big checkout's files in
        parallel (from 100 files on), as where a user sets it. N: the cores pq may use (at
        most 8), less one while `working_beside`; no setting where that leaves one."""
        workers = min(usable_cores() - (1 if self.working_beside else 0), 8)
        if workers > 1 and self._workers_unset is None:
            self._workers_unset = self.run_proc("config", "--get", "checkout.workers"
                                                ).returncode == 1
        return ["-c", f"checkout.workers={workers}"] if workers > 1 and self._workers_unset \
            else []

    def text(self, *args: str, input: bytes | None = None, env: dict[str, str] | None = None,
             ok_codes: Sequence[int] = (0,)) -> str:
        return self.run(*args, input=input, env=env, ok_codes=ok_codes).decode(
            "utf-8", "surrogateescape")

    def run_sealed(self, kind: str, *args: str, input: bytes | None = None,
                   attributes: bytes = b"") -> bytes:
        """`run_sealed_proc`'s output; GitError when the command fails."""
        proc = self.run_sealed_proc(kind, *args, input=input, attributes=attributes)
        if proc.returncode:
            raise failure(args, proc)
        return proc.stdout

    def run_sealed_proc(self, kind: str, *args: str, input: bytes | None = None,
                        attributes: bytes = b"") -> subprocess.CompletedProcess[bytes]:
        """Run git on this repository's objects in a sealed git directory (pq.git.sealed):
        `diff` sees no configuration and no attributes, so its output is the same for
        everyone; `merge` sees the repository's configuration (where it includes files, as
        the repository reads it: a conditional include) and exactly `attributes`."""
        from pq.git import sealed

        with self._sealing:
            if kind not in self._sealed:
                settings = self._promisor() if kind == "diff" else sealed.listed_settings(
                    self.run("config", "-z", "--list")) if sealed.includes_config(
                    self.common_dir, self.git_dir, self.env) else []
                partial = next((v for k, v in settings if k == "extensions.partialclone"), None)
                root = sealed.prepare(self.common_dir, self.git_dir, kind, self.object_format(),
                                      partial)
                self._sealed[kind] = (root, sealed.env(root, self.common_dir, kind, [
                    (k, v) for k, v in settings if k != "extensions.partialclone"]))
            root, env = self._sealed[kind]
        if kind == "merge":  # in its empty working tree: a custom merge driver runs there
            sealed.set_attributes(root, attributes)
            return self.run_proc(*args, input=input, env=env, cwd=root / "worktree")
        return self.run_proc(*args, input=input, env=env, cwd=root)

    def _promisor(self) -> list[tuple[str, str]]:
        """A partial clone's fetch settings (sealed.PROMISOR_KEYS); [] for another clone."""
        from pq.git import sealed

        try:
            if b"partialclone" not in (self.common_dir / "config").read_bytes().lower():
                return []
        except OSError:
            return []
        out = self.run("config", "-z", "--get-regexp", sealed.PROMISOR_KEYS, ok_codes=(0, 1))
        items = [item.split("\n", 1) for item in
                 out.decode("utf-8", "surrogateescape").split("\0") if item]
        return [(kv[0], kv[1] if len(kv) > 1 else "true") for kv in items]

    # -- facts about the repository -------------------------------------------

    def version(self) -> tuple[int, int]:
        if self._version is None:
            out = self.text("version")
            m = re.search(r"(\d+)\.(\d+)", out)
            self._version = (int(m.group(1)), int(m.group(2))) if m else (0, 0)
        return self._version

    def object_format(self) -> str:
        """`sha1` or `sha256`."""
        if self._format is None:
            self._format = self.text("rev-parse", "--show-object-format").strip() or "sha1"
        return self._format

    def null_id(self) -> str:
        """The all-zero id ("no object") of this repository's object format."""
        return "0" * (64 if self.object_format() == "sha256" else 40)

    def pq_dir(self) -> Path:
        """pq's private state, shared by all worktrees of the repository."""
        return self.common_dir / "pq"

    # -- objects (pq.git.odb) -----------------------------------------------------

    @property
    def odb(self) -> ObjectDB:
        if self._odb is None:
            self._odb = ObjectDB(self.root, self.common_dir, self.env, self.object_format(),
                                 self._hash_object_w)
        return self._odb

    def _hash_object_w(self, kind: str, data: bytes) -> str:
        # git >= 2.40 checks what hash-object writes: a commit copied as it is (no space
        # before an author's `<`, say) is written as a rebase writes it, unchecked.
        how = ("--literally",) if kind in ("commit", "tag") else ()
        return self.text("hash-object", *how, "-w", "-t", kind, "--stdin", input=data).strip()

    def read_object(self, rev: str) -> tuple[str, str, bytes]:
        return self.odb.read(rev)

    def commit(self, rev: str) -> Commit:
        sha, kind, data = self.odb.read(rev)
        if kind != "commit":
            raise GitError(f"{rev} is a {kind}, not a commit")
        return parse_commit(CommitId(sha), data)

    def blob(self, rev: str) -> bytes:
        _, kind, data = self.odb.read(rev)
        if kind != "blob":
            raise GitError(f"{rev} is a {kind}, not a blob")
        return data

    def tree_of(self, rev: str) -> TreeId:
        return self.commit(rev).tree

    def hash_blob(self, data: bytes) -> str:
        """The id git gives a blob holding `data`, computed without git."""
        return self.odb.hash_object("blob", data)

    def write_object(self, kind: str, data: bytes) -> str:
        return self.odb.write(kind, data)

    def write_blob(self, data: bytes) -> BlobId:
        return BlobId(self.odb.write("blob", data))

    def write_commit(self, tree: str, parents: Sequence[str], author: Person,
                     committer: Person, message: str, encoding: str | None = None, *,
                     branch: bool) -> CommitId:
        """A commit object of exactly these fields (text is surrogateescaped bytes).

        `branch`: the commit goes on a branch, so it is signed where the configuration
        asks for signed commits (pq.git.signing); scratch commits never are."""
        if branch and self.signing():
            from pq.git import signing

            return signing.write_signed(self, tree, parents, author, committer, message,
                                        encoding)
        return CommitId(self.odb.write("commit", commit_object(tree, parents, author,
                                                               committer, message, encoding)))

    def config_bool(self, key: str) -> bool | None:
        """`key` read as git reads a boolean (`git config --type=bool`: `yes`, `on`, `1`, a
        key with no value; `""`, `00`, `0x0` are false); None when it is unset, ConfigError
        naming the key when it is no boolean."""
        proc = self.run_proc("config", "--type=bool", "--get", key)
        if proc.returncode == 1:  # not set
            return None
        if proc.returncode != 0:
            raise ConfigError(f"{key} is not a boolean: "
                              f"{proc.stderr.decode('utf-8', 'replace').strip()}",
                              hint=f"set it to true or false with `git config {key}`")
        return proc.stdout.strip() == b"true"

    def signing(self) -> bool:
        """Whether commits that go on a branch are signed (`commit.gpgSign`, read once)."""
        if self._signing is None:
            from pq.git import signing

            self._signing = signing.wanted(self)
        return self._signing

    def empty_tree(self) -> TreeId:
        return TreeId(self.odb.write("tree", b""))


def worktree_of(git_dir: Path) -> Path:
    """The working tree whose git dir is `git_dir`: a linked worktree's (its `gitdir` file
    names the worktree's `.git`), the one `core.worktree` names (a separate git dir, a
    submodule's), else the folder holding a `.git` dir; else here."""
    link = git_dir / "gitdir"
    if link.is_file():
        return Path(link.read_text(encoding="utf-8", errors="surrogateescape").strip()).parent
    try:
        configured = run_in(Path("."), f"--git-dir={git_dir}", "config", "core.worktree"
                            ).decode("utf-8", "surrogateescape").strip()
    except GitError:  # not set
        configured = ""
    if configured:
        return git_dir / configured  # relative to the git dir, as git reads it
    return git_dir.parent if git_dir.name == ".git" else Path(".")


def run_in(cwd: Path, *args: str, env: dict[str, str] | None = None,
           input: bytes | None = None) -> bytes:
    """Run git in a folder that need not be a repository yet (init, clone)."""
    checkpoint("git " + args[0])
    proc = subprocess.run(["git", *args], cwd=str(cwd), input=input, capture_output=True,
                          env=clean_env(env))
    if proc.returncode != 0:
        raise failure(args, proc)
    return proc.stdout


def _remove_stale_temp(parent: Path) -> None:
    """Remove `index-<pid>-*` folders under `parent` whose process no longer runs."""
    for entry in parent.iterdir():
        kind, _, rest = entry.name.partition("-")
        pid, _, _ = rest.partition("-")
        if kind != "index" or "-" not in rest or not (pid.isascii() and pid.isdigit()):
            continue
        if int(pid) == os.getpid() or pid_alive(int(pid)):
            continue
        import shutil  # a cleanup needs it; most commands never get here

        shutil.rmtree(entry, ignore_errors=True)
    with contextlib.suppress(OSError):
        parent.rmdir()  # only when empty
