"""Git access: the one module that runs git.

Each git operation pq needs is a small named method on `Git`; every failure raises
`GitError` with the command, exit code and stderr. Objects are read through one
persistent `cat-file --batch` and commits are written in-process, so a rebase of a
hundred patches costs a hundred merges, not a thousand processes.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO

from pq.errors import ConfigError, GitError
from pq.faults import checkpoint
from pq.git.objects import MERGER as MERGER
from pq.git.objects import BlobId as BlobId
from pq.git.objects import Commit as Commit
from pq.git.objects import CommitId as CommitId
from pq.git.objects import Person as Person
from pq.git.objects import TreeId as TreeId
from pq.git.objects import as_git_commits as as_git_commits
from pq.git.objects import parse_commit as parse_commit

# Variables git exports to hooks and aliases; pq always names its repository explicitly.
_SCRUBBED = {
    "GIT_DIR",
    "GIT_WORK_TREE",
    "GIT_INDEX_FILE",
    "GIT_PREFIX",
    "GIT_COMMON_DIR",
    "GIT_NAMESPACE",
    "GIT_CEILING_DIRECTORIES",
    "GIT_DISCOVERY_ACROSS_FILESYSTEM",
}

# Diff options pinned so that user configuration never changes a patch file's bytes.
DIFF_CONFIG = (
    "-c", "diff.noprefix=false",
    "-c", "diff.mnemonicPrefix=false",
    "-c", "diff.suppressBlankEmpty=false",
    "-c", "diff.relative=false",
    "-c", "core.quotePath=true",
    "-c", "diff.orderFile=",
)
DIFF_OPTIONS = (
    "--no-color",
    "--no-ext-diff",
    "--no-textconv",
    "--binary",
    "--full-index",
    "--find-renames",
    "--diff-algorithm=myers",
    "--indent-heuristic",
    "--src-prefix=a/",
    "--dst-prefix=b/",
    "--ignore-submodules=none",
)


STDERR_REASON_CHARS = 600  # how much of git's stderr a GitError message keeps


def stderr_reason(stderr: bytes) -> str:
    """git's whole stderr as one line, up to a bound: the reason (`error: ... would be
    overwritten`, the paths) comes first and `Aborting` last, so no line is dropped;
    git's `hint:` lines are advice for git commands and are left out."""
    lines = [ln.strip() for ln in stderr.decode("utf-8", "replace").splitlines()]
    text = "; ".join(ln for ln in lines if ln and not ln.startswith("hint:"))
    text = text.replace(":; ", ": ")
    if not text:
        return "(no message)"
    return text if len(text) <= STDERR_REASON_CHARS else text[:STDERR_REASON_CHARS] + " ..."


def clean_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _SCRUBBED}
    env["LC_ALL"] = "C"
    env["GIT_TERMINAL_PROMPT"] = "0"
    if extra:
        env.update(extra)
    return env


@dataclass(frozen=True)
class MergeResult:
    tree: TreeId
    clean: bool
    conflicted_paths: tuple[str, ...]


class _CatFile:
    """A persistent `git cat-file --batch` reader."""

    def __init__(self, git: Git) -> None:
        self._proc = subprocess.Popen(
            ["git", "-C", str(git.root), "cat-file", "--batch"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=git.env,
        )

    def read(self, rev: str) -> tuple[str, str, bytes]:
        assert self._proc.stdin is not None and self._proc.stdout is not None
        self._proc.stdin.write(rev.encode() + b"\n")
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().decode().split()
        if len(header) != 3:
            raise GitError(f"object {rev} not found")
        sha, kind, size = header
        data = self._read_exact(self._proc.stdout, int(size) + 1)[:-1]
        return sha, kind, data

    @staticmethod
    def _read_exact(stream: IO[bytes], n: int) -> bytes:
        chunks = []
        while n:
            chunk = stream.read(n)
            if not chunk:
                raise GitError("git cat-file ended early")
            chunks.append(chunk)
            n -= len(chunk)
        return b"".join(chunks)

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        self._proc.wait()


class Git:
    """One repository, addressed by its top-level working directory."""

    def __init__(self, root: Path, git_dir: Path, common_dir: Path) -> None:
        self.root = root
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.env = clean_env()
        self._cat: _CatFile | None = None
        self._odb: object | None = None
        self._version: tuple[int, int] | None = None
        self._format: str | None = None
        self._sealed: dict[str, tuple[Path, dict[str, str]]] = {}
        self._attributes: dict[str, bytes] = {}
        tmp = common_dir / "pq" / "tmp"
        if tmp.is_dir():  # temp indexes of a pq that was killed
            _remove_stale_temp(tmp)

    # -- opening and closing -------------------------------------------------

    @classmethod
    def open(cls, path: str | Path = ".") -> Git:
        path = Path(path)
        if not path.is_dir():
            raise ConfigError(f"{path}: not a directory", hint="run pq inside a git repository")
        proc = subprocess.run(
            ["git", "-C", str(path), "rev-parse", "--show-toplevel", "--absolute-git-dir",
             "--git-common-dir"],
            capture_output=True,
            env=clean_env(),
        )
        if proc.returncode != 0:
            raise ConfigError(
                f"{path.resolve()}: not a git repository",
                hint="run pq inside a git repository's working tree, or `git init` one",
            )
        lines = proc.stdout.decode().splitlines()
        if len(lines) != 3:
            raise ConfigError(f"{path.resolve()}: a bare repository has no working tree for pq")
        root, git_dir, common = lines
        common_path = Path(common)
        if not common_path.is_absolute():
            common_path = (path / common_path).resolve()
        return cls(Path(root), Path(git_dir), common_path)

    def close(self) -> None:
        if self._cat is not None:
            self._cat.close()
            self._cat = None

    def __enter__(self) -> Git:
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
    ) -> bytes:
        """Run git in this repository; raise GitError unless the exit code is in ok_codes."""
        proc = self.run_proc(*args, input=input, env=env, cwd=cwd)
        if proc.returncode not in ok_codes:
            raise GitError(f"`git {' '.join(args)}` failed with exit {proc.returncode}: "
                           f"{stderr_reason(proc.stderr)}")
        return proc.stdout

    def run_proc(
        self,
        *args: str,
        input: bytes | None = None,
        env: dict[str, str] | None = None,
        cwd: Path | None = None,
    ) -> subprocess.CompletedProcess[bytes]:
        checkpoint("git " + (args[0] if args[0] != "-c" else next(
            (a for a in args if not a.startswith("-") and "=" not in a), "?")))
        full_env = dict(self.env)
        if env:
            full_env.update(env)
        return subprocess.run(
            ["git", *args],
            input=input,
            capture_output=True,
            env=full_env,
            cwd=str(cwd or self.root),
        )

    def text(self, *args: str, **kw: object) -> str:
        return self.run(*args, **kw).decode("utf-8", "surrogateescape")  # type: ignore[arg-type]

    def run_sealed(self, kind: str, *args: str, input: bytes | None = None,
                   attributes: bytes = b"", ok_codes: Sequence[int] = (0,)) -> bytes:
        """Run git on this repository's objects in a sealed git directory (pq.git.sealed):
        `diff` sees no configuration and no attributes, so its output is the same for
        everyone; `merge` sees the repository's configuration and exactly `attributes`."""
        from pq.git import sealed

        if kind not in self._sealed:
            root = sealed.prepare(self.common_dir, self.git_dir, kind, self.object_format())
            self._sealed[kind] = (root, sealed.env(root, self.common_dir, kind))
        root, env = self._sealed[kind]
        if kind == "merge":
            sealed.set_attributes(root, attributes)
        return self.run(*args, input=input, env=env, ok_codes=ok_codes, cwd=root)

    def attribute_paths(self, tree: str) -> frozenset[str]:
        """The paths of the `.gitattributes` files in `tree` (one process)."""
        out = self.run_sealed("diff", "diff-tree", "-r", "-z", "--name-only", "--no-renames",
                              self.empty_tree(), tree, "--", ":(glob)**/.gitattributes")
        return frozenset(p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p)

    def attributes_from(self, files: dict[str, str]) -> bytes:
        """What git's attribute lookup sees in a checkout whose `.gitattributes` files are
        `files` ({path: blob id}), with this repository's info/attributes, as one file."""
        key = "\0".join(f"{p}\0{b}" for p, b in sorted(files.items()))
        found = self._attributes.get(key)
        if found is None:
            from pq.git import sealed

            info = self.common_dir / "info" / "attributes"
            found = sealed.flatten_attributes({p: self.blob(b) for p, b in files.items()},
                                              info.read_bytes() if info.is_file() else b"")
            self._attributes[key] = found
        return found

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

    def hash_blob(self, data: bytes) -> str:
        """The id git gives a blob holding `data`, computed without git."""
        algo = hashlib.sha256 if self.object_format() == "sha256" else hashlib.sha1
        return algo(b"blob %d\0" % len(data) + data).hexdigest()

    def pq_dir(self) -> Path:
        """pq's private state, shared by all worktrees of the repository."""
        return self.common_dir / "pq"

    def resolve(self, rev: str, what: str = "revision") -> CommitId:
        proc = self.run_proc("rev-parse", "--verify", "--quiet", "--end-of-options",
                             rev + "^{commit}")
        if proc.returncode != 0:
            raise ConfigError(f"unknown {what} {rev!r}",
                              hint="check the name with `git rev-parse`, or `git fetch` it first")
        return CommitId(proc.stdout.decode().strip())

    def try_resolve(self, rev: str) -> CommitId | None:
        proc = self.run_proc("rev-parse", "--verify", "--quiet", "--end-of-options",
                             rev + "^{commit}")
        return CommitId(proc.stdout.decode().strip()) if proc.returncode == 0 else None

    def current_branch(self) -> str | None:
        proc = self.run_proc("symbolic-ref", "--quiet", "HEAD")
        return proc.stdout.decode().strip() if proc.returncode == 0 else None

    def head(self) -> CommitId:
        return self.resolve("HEAD", "HEAD (is the branch empty?)")

    def merge_base(self, a: str, b: str) -> CommitId | None:
        proc = self.run_proc("merge-base", a, b)
        return CommitId(proc.stdout.decode().strip()) if proc.returncode == 0 else None

    def is_ancestor(self, a: str, b: str) -> bool:
        return self.run_proc("merge-base", "--is-ancestor", a, b).returncode == 0

    def rev_list_with_parents(self, range_: str) -> list[tuple[CommitId, tuple[CommitId, ...]]]:
        out = self.text("rev-list", "--reverse", "--topo-order", "--parents", range_)
        result = []
        for line in out.splitlines():
            ids = [CommitId(x) for x in line.split()]
            result.append((ids[0], tuple(ids[1:])))
        return result

    def count(self, range_: str) -> int:
        return int(self.text("rev-list", "--count", range_).strip())

    def status_porcelain(self, untracked: bool = False) -> list[tuple[str, str]]:
        """(two-letter status code, path) of every changed path, as `git status` sees it."""
        args = ["status", "--porcelain=v1", "-z"]
        args.append("--untracked-files=normal" if untracked else "--untracked-files=no")
        fields = [e for e in self.text(*args).split("\0") if e]
        entries = []
        i = 0
        while i < len(fields):
            code, path = fields[i][:2], fields[i][3:]
            i += 2 if code[0] in "RC" else 1  # a rename's source follows as its own field
            entries.append((code, path))
        return entries

    # -- objects -----------------------------------------------------------------

    def read_object(self, rev: str) -> tuple[str, str, bytes]:
        if self._cat is None:
            self._cat = _CatFile(self)
        return self._cat.read(rev)

    def commit(self, rev: str) -> Commit:
        sha, kind, data = self.read_object(rev)
        if kind != "commit":
            raise GitError(f"{rev} is a {kind}, not a commit")
        return parse_commit(CommitId(sha), data)

    def blob(self, rev: str) -> bytes:
        _, kind, data = self.read_object(rev)
        if kind != "blob":
            raise GitError(f"{rev} is a {kind}, not a blob")
        return data

    def tree_of(self, rev: str) -> TreeId:
        return self.commit(rev).tree

    def write_object(self, kind: str, data: bytes) -> str:
        """Write one object; in-process through GitPython's loose object store."""
        checkpoint("write " + kind)
        if self._odb is None:
            if self.object_format() != "sha1" or os.environ.get("GIT_OBJECT_DIRECTORY"):
                self._odb = False
            else:
                from gitdb import LooseObjectDB  # GitPython's object database

                self._odb = LooseObjectDB(str(self.common_dir / "objects"))
        if self._odb is False:
            return self.text("hash-object", "-w", "-t", kind, "--stdin", input=data).strip()
        from io import BytesIO

        from gitdb.base import IStream

        istream = IStream(kind.encode(), len(data), BytesIO(data))
        self._odb.store(istream)  # type: ignore[union-attr]
        return istream.hexsha.decode() if isinstance(istream.hexsha, bytes) else istream.hexsha

    def write_blob(self, data: bytes) -> BlobId:
        return BlobId(self.write_object("blob", data))

    def write_commit(
        self,
        tree: str,
        parents: Sequence[str],
        author: Person,
        committer: Person,
        message: str,
        encoding: str | None = None,
    ) -> CommitId:
        """A commit object of exactly these fields (text is surrogateescaped bytes)."""
        lines = [f"tree {tree}"]
        lines += [f"parent {p}" for p in parents]
        lines.append(f"author {author.ident()}")
        lines.append(f"committer {committer.ident()}")
        if encoding is not None:
            lines.append(f"encoding {encoding}")
        body = "\n".join(lines) + "\n\n" + message
        return CommitId(self.write_object("commit", body.encode("utf-8", "surrogateescape")))

    def committer_now(self) -> Person:
        ident = self.text("var", "GIT_COMMITTER_IDENT").strip()
        return Person.parse(ident)

    def empty_tree(self) -> TreeId:
        return TreeId(self.write_object("tree", b""))

    # -- trees and diffs ---------------------------------------------------------

    def changed_paths(self, old: str, new: str) -> list[str]:
        out = self.run("diff-tree", "-r", "-z", "--name-only", "--no-renames", old, new)
        return [p.decode("utf-8", "surrogateescape") for p in out.split(b"\0") if p]

    def ls_tree(self, tree: str, paths: Sequence[str] = ()) -> list[tuple[str, str, str, str]]:
        """(mode, type, object, path) entries, recursively, for paths in tree."""
        out = self.run("ls-tree", "-r", "-z", "--full-tree", tree, "--", *paths)
        entries = []
        for rec in out.split(b"\0"):
            if not rec:
                continue
            meta, path = rec.split(b"\t", 1)
            mode, kind, obj = meta.decode().split()
            entries.append((mode, kind, obj, path.decode("utf-8", "surrogateescape")))
        return entries

    def build_tree(
        self,
        base_tree: str,
        remove: Sequence[str] = (),
        add: Sequence[tuple[str, str, str]] = (),
    ) -> TreeId:
        """base_tree with every path under `remove` dropped and (mode, blob, path) added."""
        with self.temp_index(base_tree) as env:
            if remove:
                # -f: a private index of another tree; its entries need not match HEAD's
                self.run("rm", "-r", "-q", "--cached", "-f", "--ignore-unmatch", "--",
                         *remove, env=env)
            if add:
                info = "".join(f"{mode} {obj}\t{path}\0" for mode, obj, path in add)
                self.run("update-index", "-z", "--index-info",
                         input=info.encode("utf-8", "surrogateescape"), env=env)
            return TreeId(self.text("write-tree", env=env).strip())

    def apply_to_tree(self, tree: str, patch: bytes) -> tuple[TreeId | None, str]:
        """Apply a patch to a tree in a private index; (new tree, '') or (None, git's error)."""
        with self.temp_index(tree) as env:
            proc = self.run_proc("apply", "--cached", "--binary", "--whitespace=nowarn", "-",
                                 input=patch, env=env)
            if proc.returncode != 0:
                return None, proc.stderr.decode(errors="replace").strip()
            return TreeId(self.text("write-tree", env=env).strip()), ""

    class _TempIndex:
        """A private index in `.git/pq/tmp/index-<pid>-*`, removed on exit (also when
        `read-tree` fails); folders left by a pq that was killed are removed by the next
        one. Inside `.git`, none can outlive the repository."""

        def __init__(self, git: Git, tree: str) -> None:
            self.git = git
            self.tree = tree
            self.dir: tempfile.TemporaryDirectory[str] | None = None

        def __enter__(self) -> dict[str, str]:
            parent = self.git.pq_dir() / "tmp"
            parent.mkdir(parents=True, exist_ok=True)
            self.dir = tempfile.TemporaryDirectory(prefix=f"index-{os.getpid()}-",
                                                   dir=parent)
            env = {"GIT_INDEX_FILE": os.path.join(self.dir.name, "index")}
            try:
                self.git.run("read-tree", self.tree, env=env)
            except BaseException:
                self.dir.cleanup()
                raise
            return env

        def __exit__(self, *exc: object) -> None:
            if self.dir is not None:
                self.dir.cleanup()
                with contextlib.suppress(OSError):
                    Path(self.dir.name).parent.rmdir()  # only when empty

    def temp_index(self, tree: str) -> Git._TempIndex:
        return Git._TempIndex(self, tree)

    def merge_trees(self, pre: str, ours: str, theirs: str, ours_tree: str | None = None,
                    attributes: bytes = b"") -> MergeResult:
        """Cherry-pick `theirs` (a commit whose parent is `pre`) onto `ours`, in memory, with
        `attributes` (see `attributes_from`) as the only attributes git sees.

        git >= 2.40 takes the merge base directly. Older git gets one synthetic commit:
        `ours`'s tree with `pre` as its only parent, so that `pre` is the merge base.
        """
        if self.version() >= (2, 40):
            return self.merge_commits(ours, theirs, attributes, merge_base=pre)
        tree = ours_tree or self.commit(ours).tree
        ours = self.write_commit(tree, [pre], MERGER, MERGER, "pq merge\n")
        return self.merge_commits(ours, theirs, attributes)

    def merge_commits(self, ours: str, theirs: str, attributes: bytes = b"",
                      merge_base: str | None = None) -> MergeResult:
        """git's merge of two commits (their merge base, or `merge_base`), in memory."""
        base = [f"--merge-base={merge_base}"] if merge_base else []
        out = self.run_sealed("merge", "merge-tree", "--write-tree", "-z", "--name-only",
                              *base, ours, theirs, attributes=attributes,
                              ok_codes=(0, 1))  # 1: conflicts
        parts = out.split(b"\0")
        conflicted: list[str] = []
        for p in parts[1:]:
            if not p:
                break  # the informational messages follow an empty field
            conflicted.append(p.decode("utf-8", "surrogateescape"))
        return MergeResult(TreeId(parts[0].decode().strip()), not conflicted,
                           tuple(dict.fromkeys(conflicted)))

    # -- refs --------------------------------------------------------------------

    def update_ref(self, ref: str, new: str, old: str | None = None, message: str = "pq") -> None:
        args = ["update-ref", "-m", message, ref, new]
        if old is not None:
            args.append(old)
        self.run(*args)

    def delete_ref(self, ref: str) -> None:
        self.run("update-ref", "-d", ref)

    # -- verbs added for push --

    def git_path(self, name: str) -> Path:
        """Where git keeps `name` (`hooks`, say), honouring core.hooksPath and worktrees."""
        path = Path(self.text("rev-parse", "--git-path", name).strip())
        return path if path.is_absolute() else self.root / path


def run_in(cwd: Path, *args: str, env: dict[str, str] | None = None,
           input: bytes | None = None) -> bytes:
    """Run git in a folder that need not be a repository yet (init, clone)."""
    checkpoint("git " + args[0])
    proc = subprocess.run(["git", *args], cwd=str(cwd), input=input, capture_output=True,
                          env=clean_env(env))
    if proc.returncode != 0:
        raise GitError(f"`git {' '.join(args)}` failed with exit {proc.returncode}: "
                       f"{stderr_reason(proc.stderr)}")
    return proc.stdout


def _remove_stale_temp(parent: Path) -> None:
    """Remove `index-<pid>-*` folders under `parent` whose process no longer runs."""
    for entry in parent.iterdir():
        parts = entry.name.split("-")
        if len(parts) < 3 or parts[0] != "index" or not parts[1].isdigit():
            continue
        pid = int(parts[1])
        if pid == os.getpid() or pid_alive(pid):
            continue
        shutil.rmtree(entry, ignore_errors=True)
    with contextlib.suppress(OSError):
        parent.rmdir()  # only when empty


def pid_alive(pid: object) -> bool:
    """Whether a process with this id runs on this machine (another user's counts)."""
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
