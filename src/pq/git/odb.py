"""The object layer: every object pq reads or writes goes through one `ObjectDB`.

Reads: ONE persistent `git cat-file --batch` per repository, with a cache of the objects
read by id (objects never change); `read_many` reads many through it.
Writes: in-process as loose objects (zlib at git's `core.looseCompression` default, written
to a temporary file and renamed into place) on SHA-1 repositories; `git hash-object -w`
otherwise (SHA-256, an object directory set by the environment). Ids are computed without
git (`hash_object`), so writing an object that exists costs nothing.
git-revise's odb.py is the model.
"""

from __future__ import annotations

import contextlib
import hashlib
import itertools
import os
import subprocess
import threading
import zlib
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import IO

from pq.errors import GitError
from pq.faults import checkpoint
from pq.git.failures import PROMISOR_HINT

# (id, kind, data): one object as cat-file gives it.
RawObject = tuple[str, str, bytes]


def overlaid(common_dir: Path, env: dict[str, str]) -> bool | None:
    """Whether reads through `env` show some commits otherwise than stored (a `git
    replace` ref, a graft), from the repository's files; None where its refs are not in
    files pq reads (a reftable: ask git)."""
    if env.get("GIT_NO_REPLACE_OBJECTS") == "1" and env.get("GIT_GRAFT_FILE") == os.devnull:
        return False
    if (common_dir / "info" / "grafts").is_file() or env.get("GIT_GRAFT_FILE"):
        return True
    if (common_dir / "reftable").is_dir():
        return None
    if any(files for _, _, files in os.walk(common_dir / "refs" / "replace")):
        return True
    try:
        with open(common_dir / "packed-refs", "rb") as f:
            return any(b" refs/replace/" in line for line in f)
    except OSError:
        return False


class ObjectDB:
    """The objects of one repository: read through one cat-file, cached, written lazily."""

    def __init__(self, root: Path, common_dir: Path, env: dict[str, str],
                 object_format: str,
                 hash_object_w: Callable[[str, bytes], str]) -> None:
        self.root = root
        self.common_dir = common_dir
        self.env = env
        self.object_format = object_format
        self._hash_object_w = hash_object_w  # git's own writer (the gateway's verb)
        self._proc: subprocess.Popen[bytes] | None = None
        self._inherited: subprocess.Popen[bytes] | None = None  # a forked child's parent's
        self._cache: dict[str, RawObject] = {}
        self._reading = threading.Lock()  # one request and its answer at a time on cat-file
        self._err: int | None = None  # the file cat-file's stderr goes to
        self._loose: str | bool | None = None  # the objects folder, or False: use git

    # -- reading ---------------------------------------------------------------------

    def read(self, rev: str) -> RawObject:
        """(id, kind, data) of `rev` (an id, or any name cat-file takes)."""
        found = self.read_many([rev])[0]
        if found is None:
            raise GitError(f"object {rev} not found")
        return found

    def read_many(self, revs: Sequence[str]) -> list[RawObject | None]:
        """Each of `revs` (None: missing or ambiguous), through the one cat-file process
        (threads that share this reader take turns)."""
        with self._reading:
            return self._read_many(revs)

    def _read_many(self, revs: Sequence[str]) -> list[RawObject | None]:
        if any("\n" in r for r in revs):  # cat-file reads names line by line
            named = {r: self._resolve(r) for r in revs if "\n" in r}
            by_id = iter(self._read_many([named.get(r) or r for r in revs if named.get(r, r)]))
            return [next(by_id) if named.get(r, r) else None for r in revs]
        result: list[RawObject | None] = []
        missing = [r for r in dict.fromkeys(revs) if r not in self._cache]
        fetched = self._pipelined(missing) if len(missing) > 1 else {}
        for rev in revs:
            found = self._cache.get(rev)
            if found is None and rev in fetched:
                found = fetched[rev]
            elif found is None:
                # One request at a time: writing them all first could fill both pipes
                # (cat-file waiting for us to read, we for it to read) on a large batch.
                proc = self._batch()
                assert proc.stdin is not None and proc.stdout is not None
                try:
                    proc.stdin.write(rev.encode("utf-8", "surrogateescape") + b"\n")
                    proc.stdin.flush()
                    found = self._read_one(proc.stdout, rev)
                except BaseException:  # Ctrl-C, say: its answer may be half read
                    self._discard()
                    raise
                if found is not None:
                    self._remember(found)
            result.append(found)
        return result

    def object_type(self, rev: str) -> str | None:
        """The type of the object `rev` names (a tag: the tag's own), or None for none."""
        oid = self._resolve(rev)
        found = self.read_many([oid])[0] if oid else None
        return found[1] if found is not None else None

    def _resolve(self, rev: str) -> str | None:
        """The id of a name cat-file cannot be asked (a path with a newline in it)."""
        proc = subprocess.run(["git", "-C", str(self.root), "rev-parse", "--verify", "--quiet",
                               "--end-of-options", rev], capture_output=True, env=self.env)
        return proc.stdout.decode().strip() or None if proc.returncode == 0 else None

    def _pipelined(self, revs: list[str]) -> dict[str, RawObject | None]:
        """Many requests in one stream: a thread writes them while this one reads the
        answers (writing them all first could fill both pipes on a large batch)."""
        proc = self._batch()
        assert proc.stdin is not None and proc.stdout is not None
        stdin = proc.stdin
        data = b"".join(r.encode("utf-8", "surrogateescape") + b"\n" for r in revs)

        def write() -> None:
            with contextlib.suppress(OSError):  # cat-file died: the reader says so
                stdin.write(data)
                stdin.flush()

        writer = threading.Thread(target=write, daemon=True)
        writer.start()
        out: dict[str, RawObject | None] = {}
        read = False
        try:
            for rev in revs:
                found = self._read_one(proc.stdout, rev)
                if found is not None:
                    self._remember(found)
                out[rev] = found
            read = True
        finally:
            if not read:  # Ctrl-C, say: answers are left unread, cat-file blocks on them
                proc.kill()  # and the writer on it; a later read starts a new one
            writer.join()
            if not read:
                self.close()
        return out

    def kind(self, oid: str) -> str | None:
        """The kind of object `oid` ('blob', 'tree', ...), or None when it is missing."""
        found = self.read_many([oid])[0]
        return None if found is None else found[1]

    def _remember(self, obj: RawObject) -> None:
        """Kept under its id only: a name (HEAD, a ref, `<id>^{commit}`) may name another
        object next time; an id, read again, gives the same object."""
        self._cache[obj[0]] = obj

    def _batch(self) -> subprocess.Popen[bytes]:
        if self._proc is None:
            checkpoint("git cat-file")
            # stderr: git's words on a name it cannot peel ("expected commit type, but
            # the object dereferences to tree type") would reach the user's terminal; the
            # answer on stdout ("<name> missing") is what pq acts on.
            # They are kept in a file of no name, though: where cat-file dies (a partial
            # clone's promisor remote out of reach), its last words say why.
            self._err = _error_file()
            self._proc = subprocess.Popen(
                ["git", "-C", str(self.root), "cat-file", "--batch"],
                stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL if self._err is None else self._err,
                env=self.env, process_group=0)  # a Ctrl-C is pq's to handle, not its
        return self._proc

    def _read_one(self, stream: IO[bytes], rev: str) -> RawObject | None:
        header = stream.readline()
        if not header:
            raise self._ended_early(rev)
        parts = header.decode("utf-8", "surrogateescape").split()
        if len(parts) != 3:  # "<name> missing", "<name> ambiguous"
            return None
        sha, kind, size = parts
        data = _read_exact(stream, int(size) + 1)[:-1]
        return sha, kind, data

    def _ended_early(self, rev: str) -> GitError:
        """cat-file died before answering `rev`: git's last words, where it left any."""
        said = ""
        if self._err is not None:
            with contextlib.suppress(OSError):
                size = os.fstat(self._err).st_size
                tail = os.pread(self._err, 2048, max(0, size - 2048))
                said = next((line for line in reversed(tail.decode("utf-8", "replace")
                                                       .splitlines()) if line.strip()), "")
        if "promisor" in said:
            return GitError(f"git cat-file ended early (reading {rev}): {said.strip()}",
                            hint=PROMISOR_HINT)
        return GitError(f"git cat-file ended early (reading {rev})"
                        + (f": {said.strip()}" if said else ""))

    def close(self) -> None:
        """End cat-file: its stdin closed, and its stdout too before the wait, so that a
        batch left unread (an interrupted caller) cannot keep it, and us, waiting."""
        if self._proc is not None:
            proc, self._proc = self._proc, None
            for stream in (proc.stdin, proc.stdout):
                if stream is not None:
                    with contextlib.suppress(OSError):
                        stream.close()
            proc.wait()
        if self._err is not None:
            err, self._err = self._err, None
            with contextlib.suppress(OSError):
                os.close(err)

    def after_fork(self) -> None:
        """In a forked child (pq.git.forked): read through a cat-file of its own
        from now on, the objects read so far kept. The parent's is left as it is: its pipes
        are the parent's, and a request from here would tear its answers."""
        self._inherited = self._proc  # not collected here: its Popen would wait on it
        self._proc = None
        self._err = None  # the parent's too
        self._reading = threading.Lock()

    def _discard(self) -> None:
        """Kill cat-file, whose answers are out of step with our requests now."""
        if self._proc is not None:
            with contextlib.suppress(OSError):
                self._proc.kill()
            self.close()

    # -- writing -----------------------------------------------------------------------

    def hash_object(self, kind: str, data: bytes) -> str:
        """The id git gives an object of `kind` holding `data`, computed without git."""
        return object_id(kind, data, self.object_format)

    def write(self, kind: str, data: bytes) -> str:
        """Write one object (unless this process has it already) and return its id."""
        # A checkpoint even when the write is skipped: whether this process holds the
        # object can depend on the clock (an oplog record's time), the checkpoints may not.
        checkpoint("write " + kind)
        raw = kind.encode() + b" %d\0" % len(data) + data
        oid = (hashlib.sha256 if self.object_format == "sha256" else hashlib.sha1)(
            raw).hexdigest()
        if oid in self._cache:
            return oid
        if self._loose is None:
            plain = self.object_format == "sha1" and not os.environ.get(
                "GIT_OBJECT_DIRECTORY")
            self._loose = str(self.common_dir / "objects") if plain else False
        if self._loose is False:
            written = self._hash_object_w(kind, data)
        else:
            assert isinstance(self._loose, str)
            try:
                _write_loose(self._loose, oid, raw)
            except OSError as exc:  # a read-only or full disk, the user's permissions
                raise GitError(f"cannot write to {self._loose}: {exc.strerror or exc}",
                               hint="make the repository's objects folder writable (or "
                                    "free some space), then run it again") from None
            written = oid
        if written != oid:
            raise GitError(f"writing a {kind} gave {written}, expected {oid}")
        self._cache[oid] = (oid, kind, data)
        return oid


def object_id(kind: str, data: bytes, object_format: str = "sha1") -> str:
    """The id git gives an object of `kind` holding `data` in a repository of that object
    format (`sha1` or `sha256`), computed without git."""
    h = (hashlib.sha256 if object_format == "sha256" else hashlib.sha1)(
        kind.encode() + b" %d\0" % len(data))
    h.update(data)  # (not `header + data`: a copy of a big blob for each id)
    return h.hexdigest()


_tmp_ids = itertools.count(1)  # next() on it is atomic: threads never share a name
_folders: set[str] = set()  # fan-out folders known to exist


def _write_loose(objects: str, oid: str, raw: bytes) -> None:
    """One loose object, as git writes it: compressed (level 1, git's default for loose
    objects) into a temporary file next to its place, read-only, then renamed into place.
    An object already there is left alone."""
    folder = f"{objects}/{oid[:2]}"
    final = f"{folder}/{oid[2:]}"
    if os.path.exists(final):
        return
    if folder not in _folders:
        os.makedirs(folder, exist_ok=True)
        _folders.add(folder)
    tmp = f"{folder}/tmp_obj_pq{os.getpid()}_{next(_tmp_ids)}"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    except FileNotFoundError:  # the folder went away meanwhile (a `git prune`)
        os.makedirs(folder, exist_ok=True)
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o444)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(zlib.compress(raw, 1))
        os.rename(tmp, final)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _error_file() -> int | None:
    """A file of no name for a process's stderr (None where the system makes none)."""
    for folder in (os.environ.get("TMPDIR"), "/tmp"):  # (TMPDIR may name no folder)
        with contextlib.suppress(AttributeError, OSError):
            return os.open(folder or "/tmp", os.O_TMPFILE | os.O_RDWR, 0o600)
    return None


def _read_exact(stream: IO[bytes], n: int) -> bytes:
    chunks = []
    while n:
        chunk = stream.read(n)
        if not chunk:
            raise GitError("git cat-file ended early")
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def tree_entries(data: bytes, id_len: int) -> dict[bytes, tuple[bytes, str]]:
    """{name: (mode, id)} of a tree object's data; `id_len` is the hex length of an id."""
    size = id_len // 2
    entries = {}
    i = 0
    while i < len(data):
        sp = data.index(b" ", i)
        nul = data.index(b"\0", sp)
        entries[data[sp + 1:nul]] = (data[i:sp], data[nul + 1:nul + 1 + size].hex())
        i = nul + 1 + size
    return entries


def tree_data(entries: dict[bytes, tuple[bytes, str]]) -> bytes:
    """A tree object's data for {name: (mode, id)}, in git's order (folders sort as name/)."""
    ordered = sorted(entries.items(),
                     key=lambda kv: kv[0] + b"/" if is_tree_mode(kv[1][0]) else kv[0])
    return b"".join(mode + b" " + name + b"\0" + bytes.fromhex(obj)
                    for name, (mode, obj) in ordered)


def is_tree_mode(mode: bytes) -> bool:
    return mode in (b"40000", b"040000")
