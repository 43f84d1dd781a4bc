"""A queue file as git stores it, from its bytes in the working tree.

A checkout may have converted what pq wrote (core.autocrlf, core.eol, the `text` and `eol`
attributes: each LF written as CRLF, or a clean filter's work): pq compares and hashes the
form git stores, so the same queue reads the same on every clone.
"""

from __future__ import annotations

import re

from pq.errors import ConfigError
from pq.git.repo import Git


def _hashable(path: str) -> bool:
    """Whether `git hash-object --stdin-paths` reads `path` back as it is: not a name with
    a line break or a leading quote (pq never writes such names; they are taken as they
    are)."""
    return "\n" not in path and "\r" not in path and not path.startswith('"')


def checkout_undone(data: bytes) -> bytes:
    """A queue file whose every LF is a CRLF with each CRLF made an LF (what a checkout's
    LF -> CRLF conversion was given: pq writes its header lines with LF alone, so such a
    file is never pq's own form); any other file as it is (the same object)."""
    if b"\r" not in data:  # (one memchr; a count reads a big patch through)
        return data
    crlf = data.count(b"\r\n")
    return data.replace(b"\r\n", b"\n") if crlf and crlf == data.count(b"\n") else data


def clean_forms(git: Git, raw: dict[str, bytes]) -> dict[str, bytes]:
    """{path: bytes as git stores them} for working-tree files read as `raw`.

    Checkout filters (core.autocrlf, core.eol, `text`/`eol` attributes) write a blob's LF
    as CRLF; what `git add` would store is found with one `git hash-object` for all files.
    A file that git would store as it is stays as it is; one that is the blob with each LF
    turned into CRLF is that blob. A file with CR bytes of its own next to bare LFs (a
    patch of a CRLF file, as pq wrote it) is kept as it is: git would strip those CRs on
    `git add`, but they belong to the patch. Anything else (a clean filter) is git's.
    """
    clean = {p: raw[p] for p in raw if not _hashable(p)}
    paths = sorted(p for p in raw if p not in clean)
    if not paths:
        return clean
    out = git.hash_files(paths)
    same = {p for p, oid in zip(paths, out, strict=True) if git.hash_blob(raw[p]) == oid}
    converted = [p for p in paths if b"\r\n" in raw[p] and p not in same]
    for path, blob in _indexed(git, converted).items():
        if _checked_out(blob) == raw[path]:  # the committed file, with its own CRs: the
            clean[path] = blob  # checkout's LF -> CRLF cannot be undone from its bytes
    for path, oid in zip(paths, out, strict=True):
        data = raw[path]
        lf = checkout_undone(data)
        if path in clean:
            continue
        if path in same:
            clean[path] = data
        elif lf is not data and git.hash_blob(lf) == oid:
            clean[path] = lf  # a checkout's LF -> CRLF
        elif b"\r\n" in data:
            clean[path] = data  # CRs next to bare LFs: pq's own bytes, not a checkout's
        else:  # another filter (a clean filter driver): what git stores, from git
            git.store_file(path)
            clean[path] = git.blob(oid)
    return clean


def _indexed(git: Git, paths: list[str]) -> dict[str, bytes]:
    """{path: its blob in the index} of those of `paths` the index has (stage 0)."""
    if not paths:
        return {}
    entries = [e.split("\t", 1) for e in git.ls_files(paths, stage=True, literal=True)]
    found = [(path, meta.split()[1]) for meta, path in entries if meta.endswith(" 0")]
    return {path: git.blob(oid) for path, oid in found}


def _checked_out(blob: bytes) -> bytes:
    """`blob` as a checkout that writes line ends as CRLF (a `text eol=crlf` attribute)
    writes it: each LF not after a CR as CRLF."""
    return re.sub(rb"(?<!\r)\n", b"\r\n", blob)


def stored_otherwise(git: Git, paths: list[str]) -> list[str]:
    """Those of the working tree's `paths` (files pq wrote) that `git add` would store as
    other bytes: a line-end conversion (core.autocrlf, a `text` attribute) would take the
    CRs of a CRLF file's lines out of its patch, which then no longer matches its commit."""
    paths = [p for p in paths if _hashable(p) and (git.root / p).is_file()]
    if not paths:
        return []
    return [p for p, oid in zip(paths, git.hash_files(paths), strict=True)
            if git.hash_blob((git.root / p).read_bytes()) != oid]


def require_convertible(git: Git, dirty: list[str], clean: dict[str, bytes]) -> None:
    """Refuse queue files that git calls changed (`dirty`) while they hold the committed
    bytes (`clean`: {path: their clean form}): a checkout's line-end conversion (a `text
    eol=crlf` attribute) that git cannot undo, where a patch of a CRLF file has CRs of its
    own. git calls such a file changed in every checkout, and no move of HEAD goes over it:
    a rebase would stop at its landing."""
    paths = [p for p in dirty if p in clean]
    if not paths:
        return
    committed = _indexed(git, paths)
    stuck = [p for p in paths if p in committed and committed[p] == clean[p]]
    if stuck:
        from pq.quoting import list_paths

        raise ConfigError(f"git calls {list_paths(stuck)} changed, though it holds the "
                          "committed bytes: a line-end conversion (a `text` attribute, "
                          "core.autocrlf) that cannot give back the CRs of a CRLF file's "
                          "patch lines, and no checkout moves over it",
                          hint="add `patches/*.patch -text` to .gitattributes, `git commit` "
                               "it, `git checkout -- patches`, `pq export --commit`, then run "
                               "it again")
