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


# What a partial clone's git needs to fetch a missing object from its promisor remote:
# transport settings only, none that changes what git writes in a diff.
PROMISOR_KEYS = (r"^(extensions\.partialclone|remote\..*|http\..*|credential\..*|"
                 r"core\.sshcommand|url\..*\.(insteadof|pushinsteadof))$")


def prepare(common_dir: Path, git_dir: Path, kind: str, object_format: str,
            partial_clone: str | None = None) -> Path:
    """The sealed git directory of `kind` for this repository, created or refreshed.
    `partial_clone`: the promisor remote of a partial clone, which a "diff" directory
    fetches the objects the clone left out from, as git there would (with the settings
    `env` hands it)."""
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
    if kind == "diff" and partial_clone is not None:  # read from this file alone, by git
        lines += ["[extensions]", f"\tpartialClone = {_quote(partial_clone)}"]
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


def env(root: Path, common_dir: Path, kind: str,
        settings: list[tuple[str, str]] | None = None) -> dict[str, str]:
    """The environment of git run in the sealed directory `root`; `settings`: the
    configuration a "diff" directory gets (a partial clone's fetch settings), handed in
    the environment, never written to a file."""
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
    if kind == "diff" or settings:
        result["GIT_CONFIG_COUNT"] = str(len(settings or []))
        for i, (key, value) in enumerate(settings or []):
            result[f"GIT_CONFIG_KEY_{i}"], result[f"GIT_CONFIG_VALUE_{i}"] = key, value
    return result


def includes_config(common_dir: Path, git_dir: Path, environ: dict[str, str]) -> bool:
    """Whether a configuration file git reads here includes another (`[include]`,
    `[includeIf "gitdir:..."]`): a "merge" directory, a git directory of its own on no
    branch, would read a conditional one otherwise than the repository does."""
    home = Path(environ.get("HOME", "~")).expanduser()
    xdg = Path(environ.get("XDG_CONFIG_HOME") or home / ".config")
    files = [common_dir / "config", git_dir / "config.worktree",
             Path(environ.get("GIT_CONFIG_GLOBAL") or home / ".gitconfig"), xdg / "git/config"]
    if not environ.get("GIT_CONFIG_NOSYSTEM"):
        files.append(Path(environ.get("GIT_CONFIG_SYSTEM") or "/etc/gitconfig"))
    for path in files:
        try:
            if b"[include" in path.read_bytes().lower():
                return True
        except OSError:
            continue
    return False


# Settings of the repository's own a "merge" directory keeps its values for.
_SEALED_KEYS = re.compile(r"^(core\.(bare|worktree|repositoryformatversion)|extensions\..*|"
                          r"include\..*|includeif\..*)$")


def listed_settings(listing: bytes) -> list[tuple[str, str]]:
    """`git config -z --list` as (key, value) pairs, conditional includes read as the
    repository reads them, less the settings of the sealed directory's own."""
    pairs = []
    for item in listing.decode("utf-8", "surrogateescape").split("\0"):
        key, _, value = item.partition("\n")
        if key and not _SEALED_KEYS.match(key):
            pairs.append((key, value if "\n" in item else "true"))
    return pairs


def _quote(value: str) -> str:
    """A configuration value as git reads it back (a newline or tab in it escaped)."""
    return '"' + value.replace("\\", "\\\\").replace('"', '\\"').replace(
        "\n", "\\n").replace("\t", "\\t").replace("\b", "\\b") + '"'


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
        for raw in files[path].removeprefix(_BOM).splitlines():
            line = raw.strip()
            if not line or line.startswith(b"#") or len(raw) >= MAX_LINE:
                continue  # git ignores a line longer than it reads
            if line.startswith(b"[attr]"):
                if not folder:
                    out.append(line)
                continue
            pattern, rest = _split_pattern(line)
            out += _lines(_quote_pattern(_relocate(pattern, folder)), rest)
    out += [ln for ln in (r.strip() for r in info.removeprefix(_BOM).splitlines()) if ln]
    return b"".join(ln + b"\n" for ln in out)


_BOM = b"\xef\xbb\xbf"  # git skips one at the start of an attributes file
MAX_LINE = 2048  # git ignores an attributes line of this many bytes or more


def _lines(pattern: bytes, rest: bytes) -> list[bytes]:
    """`pattern` with its attributes `rest`, as lines git reads whole: a line that the
    relocated pattern made longer than git reads is split in lines of the same pattern,
    each with some of the attributes (the last line naming an attribute still wins)."""
    if len(pattern) + len(rest) < MAX_LINE:
        return [pattern + rest]
    out = [pattern]
    for state in rest.split():
        if len(out[-1]) + 1 + len(state) >= MAX_LINE and out[-1] != pattern:
            out.append(pattern)
        out[-1] += b" " + state
    return out


def _split_pattern(line: bytes) -> tuple[bytes, bytes]:
    """(pattern, the attributes after it), as git's attribute parser reads a line: a
    quoted pattern that does not unquote is a plain one, quote and all."""
    if line.startswith(b'"'):
        found = _unquote(line)
        if found is not None:
            return found[0], line[found[1]:]
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


_C_ESCAPES = {b"a": b"\a", b"b": b"\b", b"f": b"\f", b"n": b"\n", b"r": b"\r", b"t": b"\t",
              b"v": b"\v", b'"': b'"', b"\\": b"\\"}


def _unquote(line: bytes) -> tuple[bytes, int] | None:
    """The C-quoted string `line` starts with, as git's unquote_c_style reads it, and the
    offset after its closing quote; None where git refuses it (another escape, no end)."""
    out = bytearray()
    i = 1
    while i < len(line):
        c = line[i:i + 1]
        if c == b'"':
            return bytes(out), i + 1
        if c == b"\\":
            nxt = line[i + 1:i + 2]
            if nxt in _C_ESCAPES:
                out += _C_ESCAPES[nxt]
                i += 2
                continue
            if re.fullmatch(rb"[0-3][0-7][0-7]", line[i + 1:i + 4]):
                out.append(int(line[i + 1:i + 4], 8))
                i += 4
                continue
            return None
        out += c
        i += 1
    return None


def _quote_pattern(pattern: bytes) -> bytes:
    if not (re.search(rb"[\s\x00-\x1f\x7f]", pattern) or pattern.startswith(b'"')):
        return pattern
    body = b"".join(b"\\" + bytes([c]) if c in b'"\\' else
                    b"\\%03o" % c if c < 0x20 or c == 0x7F else bytes([c]) for c in pattern)
    return b'"' + body + b'"'
