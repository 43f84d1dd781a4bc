"""Sealed git directories: run git on the repository's objects, away from local state.

Patch bytes must not depend on anyone's configuration or checkout, and a merge must read
attributes from the trees being merged (as `git rebase` does), not from whatever the
working tree holds. Both run in a bare git directory under `.git/pq/sealed/` that shares
the repository's objects; this module lays those directories out (gitio runs git in them).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from pq.atomic import write_atomic

# "diff": no configuration and no attributes at all (patch bytes, patch ids, `git apply`).
# "merge": the repository's configuration (merge drivers, rename limits) and the
# attributes of the trees being merged, written per merge into info/attributes.
KINDS = ("diff", "merge")


def prepare(common_dir: Path, git_dir: Path, kind: str, object_format: str) -> Path:
    """The sealed git directory of `kind` for this repository, created or refreshed."""
    root = common_dir / "pq" / "sealed" / kind
    (root / "refs").mkdir(parents=True, exist_ok=True)
    (root / "info").mkdir(exist_ok=True)
    write_atomic(root / "HEAD", b"ref: refs/heads/pq-sealed\n")
    lines = []
    if kind == "merge":
        for config in (common_dir / "config", git_dir / "config.worktree"):
            if config.is_file():
                lines += ["[include]", f"\tpath = {_quote(str(config))}"]
    # After the includes: a sealed directory has no working tree of the repository's, so
    # git never reads the current folder's .gitattributes. "diff" is bare; "merge" has an
    # empty folder of its own for one (git 2.39's merge.renormalize dies in a bare one).
    lines += ["[core]", "\trepositoryformatversion = 1"]
    if kind == "diff":  # nor the user's attributes file (~/.config/git/attributes)
        lines += [f"\tattributesFile = {_quote(os.devnull)}"]
    if kind == "merge":
        (root / "worktree").mkdir(exist_ok=True)
        lines += ["\tbare = false", f"\tworktree = {_quote(str(root / 'worktree'))}"]
    else:
        lines += ["\tbare = true"]
    if object_format not in ("", "sha1"):
        lines += ["[extensions]", f"\tobjectformat = {object_format}"]
    write_atomic(root / "config", ("\n".join(lines) + "\n").encode("utf-8", "surrogateescape"))
    shallow = common_dir / "shallow"
    link = root / "shallow"
    if shallow.is_file():
        if not link.is_symlink():
            link.unlink(missing_ok=True)
            link.symlink_to(shallow)
    elif link.is_symlink() or link.exists():
        link.unlink()
    return root


def set_attributes(root: Path, data: bytes) -> None:
    """The attributes every path of the next command in `root` sees."""
    write_atomic(root / "info" / "attributes", data)


def env(root: Path, common_dir: Path, kind: str) -> dict[str, str]:
    result = {
        "GIT_DIR": str(root),
        "GIT_OBJECT_DIRECTORY": os.environ.get("GIT_OBJECT_DIRECTORY")
        or str(common_dir / "objects"),
        "GIT_NO_REPLACE_OBJECTS": "1",
    }
    if kind == "diff":
        result["GIT_CONFIG_NOSYSTEM"] = "1"
        result["GIT_CONFIG_GLOBAL"] = os.devnull
        result["GIT_ATTR_NOSYSTEM"] = "1"  # no attributes file of the system's either
        # ... and no configuration given through the environment (`git -c` of a caller).
        result["GIT_CONFIG_PARAMETERS"] = ""
        result["GIT_CONFIG_COUNT"] = "0"
    return result


def _quote(value: str) -> str:
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"') + '"'


# -- attributes of a tree, as one file ------------------------------------------------


def flatten_attributes(files: dict[str, bytes], info: bytes = b"") -> bytes:
    """One attributes file, read from the top, that says what the `.gitattributes` files
    of a tree ({path: bytes}) and the repository's info/attributes say together.

    git gives a deeper `.gitattributes` precedence over a shallower one and
    info/attributes precedence over all, and within one file a later line wins: so the
    files are written shallow to deep, then info/attributes. A pattern in `dir/` is
    rewritten relative to the top: `*.c` becomes `/dir/**/*.c`, `/x` or `a/b` becomes
    `/dir/x` or `/dir/a/b`; macros (`[attr]`) count only at the top, as in git.
    """
    out: list[bytes] = []
    for path in sorted(files, key=lambda p: (p.count("/"), p)):
        folder = path[: -len(".gitattributes")].rstrip("/")
        for raw in files[path].splitlines():
            line = raw.strip()
            if not line or line.startswith(b"#"):
                continue
            if line.startswith(b"[attr]"):
                if not folder:
                    out.append(line)
                continue
            pattern, rest = _split_pattern(line)
            if pattern is None:
                continue
            out.append(_quote_pattern(_relocate(pattern, folder)) + rest)
    out += [ln for ln in (r.strip() for r in info.splitlines()) if ln]
    return b"".join(ln + b"\n" for ln in out)


def _split_pattern(line: bytes) -> tuple[bytes | None, bytes]:
    if line.startswith(b'"'):
        m = re.match(rb'"((?:[^"\\]|\\.)*)"', line)
        if not m:
            return None, b""
        return _unquote(m.group(1)), line[m.end():]
    m = re.match(rb"(\S+)", line)
    assert m is not None
    return m.group(1), line[m.end():]


def _relocate(pattern: bytes, folder: str) -> bytes:
    if not folder:
        return pattern
    prefix = b"/" + re.sub(rb"([*?\[\\])", rb"\\\1", folder.encode("utf-8", "surrogateescape"))
    body = pattern.rstrip(b"/")
    if b"/" in body:  # anchored to the folder of the .gitattributes file
        return prefix + b"/" + pattern.lstrip(b"/")
    return prefix + b"/**/" + pattern


_C_ESCAPES = {b"n": b"\n", b"t": b"\t", b'"': b'"', b"\\": b"\\"}


def _unquote(body: bytes) -> bytes:
    out = bytearray()
    i = 0
    while i < len(body):
        c = body[i:i + 1]
        if c == b"\\" and i + 1 < len(body):
            nxt = body[i + 1:i + 2]
            if nxt.isdigit():
                out.append(int(body[i + 1:i + 4], 8) & 0xFF)
                i += 4
                continue
            out += _C_ESCAPES.get(nxt, nxt)
            i += 2
            continue
        out += c
        i += 1
    return bytes(out)


def _quote_pattern(pattern: bytes) -> bytes:
    if not (re.search(rb"[\s\x00-\x1f\x7f]", pattern) or pattern.startswith(b'"')):
        return pattern
    body = b"".join(b"\\" + bytes([c]) if c in b'"\\' else
                    b"\\%03o" % c if c < 0x20 or c == 0x7F else bytes([c]) for c in pattern)
    return b'"' + body + b'"'
