"""git rerere's recorded resolutions, as pq uses them: whether rerere is on, the conflict
id of a conflicted file (computed as git's rerere.c does), the recorded resolution for it
in `.git/rr-cache/<id>/` (what pq recorded or reused is pq.rebase.rrnotes).

The id is the hash of the file's conflict hunks: for each top-level conflict, its two
sides (sorted, labels and the common ancestor's part dropped) each followed by a NUL. The
preimage is the file with every conflict written as `<<<<<<<`, side, `=======`, side,
`>>>>>>>`. A recorded resolution (`preimage[.N]` with `postimage[.N]`) applies in memory
only when the conflicted file normalizes to exactly its preimage; anything else is left
to git rerere in the working tree.
"""

from __future__ import annotations

import hashlib
import os
import weakref
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from pq.background import Background
from pq.errors import GitError
from pq.git.gateway import zsplit
from pq.git.repo import Git

if TYPE_CHECKING:
    from pq.git.objects import Entry
    from pq.git.trees import Trees

MARKER_SIZE = 7


@dataclass
class Resolution:
    """A recorded resolution of one file's conflicts."""

    path: str
    id: str  # rr-cache/<id>, `<hash>` or `<hash>.<variant>` as git names it in MERGE_RR
    hunks: list[str] = field(default_factory=list)  # preimage -> postimage, range-diff style
    # Reused: the files the resolution also changed when it was recorded (another file
    # edited or added), which a recorded resolution does not replay (rrnotes).
    also: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"path": self.path, "id": self.id, "hunks": list(self.hunks),
                "also": list(self.also)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Resolution:
        return cls(str(data["path"]), str(data["id"]), [str(h) for h in data["hunks"]],
                   [str(p) for p in data.get("also", [])])


_CONFIG_KEYS = r"^(rerere\.enabled|core\.(autocrlf|eol|attributesfile)|filter\.)"
_config: weakref.WeakKeyDictionary[Git, dict[str, str]] = weakref.WeakKeyDictionary()
_ahead: weakref.WeakKeyDictionary[Git, Background[dict[str, str]]] = \
    weakref.WeakKeyDictionary()


def read_ahead(git: Git) -> None:
    """Start reading the configuration `_settings` reads, in a thread, where rr-cache
    exists (a rebase may reuse a resolution): the first conflict then finds it read, as
    it was when the command started (git reads its configuration once, at its start)."""
    if git not in _config and git not in _ahead and rr_cache(git).is_dir():
        _ahead[git] = Background(lambda: git.config_matching(_CONFIG_KEYS), "pq git config")


def wait_ahead(git: Git) -> None:
    """Until `read_ahead`'s read ended (before anything that may change the configuration
    runs: a hook); its error, if any, is raised where the settings are first used."""
    ahead = _ahead.get(git)
    if ahead is not None:
        ahead.wait()


def _settings(git: Git) -> dict[str, str]:
    """The configuration that decides how pq uses rerere (read once per Git object)."""
    found = _config.get(git)
    if found is None:
        ahead = _ahead.pop(git, None)
        found = _config[git] = (ahead.result() if ahead is not None
                                else git.config_matching(_CONFIG_KEYS))
    return found


_BOOLEANS = dict.fromkeys(("true", "yes", "on", "1"), True) | dict.fromkeys(
    ("false", "no", "off", "0"), False)


def enabled(git: Git, wanted: bool = True) -> bool:
    """Whether pq runs git rerere: not with `--no-rerere` (`wanted` False), nor where the
    configuration says `rerere.enabled` is false as git reads it; on when it is unset."""
    settings = _settings(git)
    if not wanted or (value := settings.get("rerere.enabled")) is None:
        return wanted
    if value.lower() not in _BOOLEANS:  # "", "00", "0x0", a key with no value: ask git
        found = git.config_bool("rerere.enabled")
        settings["rerere.enabled"] = value = "true" if found is None or found else "false"
    return _BOOLEANS[value.lower()]


def rr_cache(git: Git) -> Path:
    return git.common_dir / "rr-cache"


# -- the conflict id, as rerere.c computes it -----------------------------------------------


def _marker(line: bytes, char: bytes, size: int) -> bool:
    if not line.startswith(char * size):
        return False
    after = line[size:size + 1]
    if char in (b"<", b">") and after != b" ":
        return False
    return after != b"" and after in b" \t\n\r\v\f"


def _conflict(lines: list[bytes], pos: list[int], size: int,
              hashes: Any | None) -> bytes | None:
    """One conflict after its `<` marker, normalized; None when it does not parse."""
    one: list[bytes] = []
    two: list[bytes] = []
    side = 1  # 1, 2, or 0 for the common ancestor's part (dropped)
    while pos[0] < len(lines):
        line = lines[pos[0]]
        pos[0] += 1
        if _marker(line, b"<", size):
            inner = _conflict(lines, pos, size, None)
            if inner is None:
                return None
            (one if side == 1 else two).append(inner)
        elif _marker(line, b"|", size):
            if side != 1:
                return None
            side = 0
        elif _marker(line, b"=", size):
            if side == 2:
                return None
            side = 2
        elif _marker(line, b">", size):
            if side != 2:
                return None
            a, b = b"".join(one), b"".join(two)
            if a > b:
                a, b = b, a
            if hashes is not None:
                hashes.update(a + b"\0")
                hashes.update(b + b"\0")
            return (b"<" * size + b"\n" + a + b"=" * size + b"\n" + b
                    + b">" * size + b"\n")
        elif side == 1:
            one.append(line)
        elif side == 2:
            two.append(line)
    return None


def normalize(data: bytes, object_format: str = "sha1",
              size: int = MARKER_SIZE) -> tuple[bytes, str] | None:
    """(preimage, conflict id) of a file with conflict markers; None without conflicts or
    when they do not parse (git rerere leaves such a file alone too)."""
    lines = data.splitlines(keepends=True)
    hashes = hashlib.new("sha256" if object_format == "sha256" else "sha1")
    out: list[bytes] = []
    pos = [0]
    found = False
    while pos[0] < len(lines):
        line = lines[pos[0]]
        pos[0] += 1
        if _marker(line, b"<", size):
            conflict = _conflict(lines, pos, size, hashes)
            if conflict is None:
                return None
            out.append(conflict)
            found = True
        else:
            out.append(line)
    return (b"".join(out), hashes.hexdigest()) if found else None


# -- recorded resolutions --------------------------------------------------------------------


def hunks(preimage: bytes, postimage: bytes) -> list[str]:
    """What the resolution changed in the conflicted file, as the range-diff shows lines."""
    from pq.rebase.rangediff import summary  # rangediff imports us (Resolution)

    return summary(preimage, postimage, max_lines=None)


def variants(folder: Path) -> list[tuple[str, Path, Path]]:
    """(suffix, preimage, postimage) of each recorded variant, variant 0 first."""
    found = []
    if folder.is_dir():
        for p in folder.iterdir():
            if p.name == "preimage" or p.name.startswith("preimage."):
                suffix = p.name[len("preimage"):]
                post = folder / ("postimage" + suffix)
                if post.is_file() and (suffix == "" or suffix[1:].isdigit()):
                    found.append((suffix, p, post))
    return sorted(found, key=lambda v: int(v[0][1:] or 0))


def _normalized(git: Git, path: str, conflicted: bytes, tree: str | None
                ) -> tuple[bytes, str] | None:
    """`normalize` of `path`'s conflicted bytes with its markers' width: the
    `conflict-marker-size` of its attributes in `tree` (None: the working tree), asked of
    git only when markers of 7 do not name a recorded resolution (a file given a larger
    size often holds lines like 7-wide markers as its content)."""
    found = normalize(conflicted, git.object_format())
    if conflicted and (found is None or not (rr_cache(git) / found[1]).is_dir()):
        size = git.marker_sizes(tree, [path])[path]
        if size != MARKER_SIZE:
            found = normalize(conflicted, git.object_format(), size)
    return found


def lookup(git: Git, path: str, conflicted: bytes, tree: str | None
           ) -> tuple[Resolution, bytes] | None:
    """The recorded resolution of `conflicted` (a file with conflict markers, as a checkout
    of `tree` has it) and the resolved bytes, when a recorded preimage is exactly its
    normalized form."""
    normal = _normalized(git, path, conflicted, tree)
    if normal is None:
        return None
    preimage, cid = normal
    for suffix, pre, post in variants(rr_cache(git) / cid):
        if pre.read_bytes() == preimage:
            resolved = post.read_bytes()
            os.utime(post)  # git rerere marks a reused resolution as used, for `rerere gc`
            return Resolution(path, cid + suffix, hunks(preimage, resolved)), resolved
    return None


def reused_in_worktree(git: Git, paths: list[str]) -> list[Resolution]:
    """The resolutions git rerere (without autoupdate) just took for `paths`, still
    unmerged in the index; each is then staged, as autoupdate would. The conflict is
    written again (`git checkout -m`) to compute its id, and the resolved file put back."""
    found = []
    for path in paths:
        target = git.root / path
        resolved = target.read_bytes()
        mode = target.stat().st_mode  # `checkout -m` writes the file with the tip's mode
        try:
            git.checkout_paths([path], merge=True)
            conflicted = target.read_bytes()
        except GitError:
            conflicted = b""
        finally:
            target.write_bytes(resolved)
            os.chmod(target, mode & 0o7777)  # the merge's mode (a patch's chmod +x) is staged
        normal = _normalized(git, path, conflicted, None)
        if normal is None:
            continue
        preimage, cid = normal
        on_file = variants(rr_cache(git) / cid)
        exact = [v for v in on_file if v[1].read_bytes() == preimage]
        for suffix, pre, post in exact or on_file:
            posted = post.read_bytes()
            if exact and resolved != posted:  # git took the first variant that merges (of
                target.write_bytes(posted)  # another file's conflict, same id): as in memory
            found.append(Resolution(path, cid + suffix, hunks(pre.read_bytes(), posted)))
            break
    if paths:
        git.add(paths)
    return found


def plain_checkout(git: Git) -> bool:
    """Whether checking a file out writes its blob's bytes unchanged, as far as the
    configuration says (no eol conversion, filters or attribute files outside the trees):
    then a working-tree preimage can be compared with a blob, and a postimage is a blob."""
    if any(k != "rerere.enabled" and (k, v.lower()) != ("core.autocrlf", "false")
           for k, v in _settings(git).items()):
        return False
    home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(os.path.expanduser("~"), ".config")
    return not any(p.exists() for p in (git.common_dir / "info" / "attributes",
                                         Path(home) / "git" / "attributes"))


def resolve_tree(git: Git, trees: Trees, merged: str, paths: tuple[str, ...],
                 sides: tuple[str, str], known: dict[str, tuple[Entry, Entry]] | None = None
                 ) -> tuple[str, list[Resolution]] | None:
    """`merged` (a merge's tree, conflict markers in `paths`) with every conflicted file
    taken from a recorded resolution, or None unless each is a plain content conflict (a
    regular file at the same path and mode in both `sides` trees) with one. `known`:
    {path: its entries in the two sides}, where the caller has them (not read again)."""
    changes: dict[str, tuple[str, str] | None] = {}
    found = []
    for path in paths:
        entry = trees.lookup(merged, path)
        if entry is None or entry[0] not in ("100644", "100755"):
            return None
        pair = (known or {}).get(path) or tuple(trees.lookup(side, path) for side in sides)
        if any(there is None or there[0] != entry[0] for there in pair):
            return None
        hit = lookup(git, path, git.blob(entry[1]), merged)
        if hit is None:
            return None
        resolution, data = hit
        changes[path] = (entry[0], git.write_blob(data))
        found.append(resolution)
    return trees.edit(merged, changes), found


def recorded(git: Git, rid: str, path: str) -> Resolution | None:
    """The resolution git recorded as `rid` (a MERGE_RR id), with its hunks."""
    cid, _, variant = rid.partition(".")
    suffix = f".{variant}" if variant else ""
    folder = rr_cache(git) / cid
    pre, post = folder / ("preimage" + suffix), folder / ("postimage" + suffix)
    if not (pre.is_file() and post.is_file()):
        return None
    return Resolution(path, rid, hunks(pre.read_bytes(), post.read_bytes()))


def merge_rr(git: Git) -> dict[str, str]:
    """{path: id} of .git/MERGE_RR, the conflicts git rerere follows now."""
    try:
        raw = (git.git_dir / "MERGE_RR").read_bytes()
    except FileNotFoundError:
        return {}
    result = {}
    for item in zsplit(raw):
        rid, tab, path = item.partition("\t")
        if tab:
            result[path] = rid
    return result
