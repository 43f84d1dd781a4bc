"""The input fingerprint of a reusable stage: which files its `inputs` patterns name, and
the digest of those files, its command, env, the interpreter and the toolchain that decides
whether an earlier passing run still holds (gate/reuse restores that run's artifacts).
"""

from __future__ import annotations

import hashlib
import json
import os
import re
import shutil
from collections.abc import Iterable, Mapping, Sequence
from functools import lru_cache
from pathlib import Path
from typing import Any

from pq.gate.config import BASE, Stage
from pq.model.layers import DOC_SUFFIXES, decide, is_doc
from pq.model.series import DEFAULT_QUEUE_PATHS
from pq.queue.files import is_queue_path

FORMAT = 2  # 2: tracked files an artifact replaces carry the blob the run started from
NOT_BUILT = (".py", ".pyi")  # Python sources a native build does not read (build files aside)
# Variables of the caller's environment that change what a compiler produces.
BUILD_ENV = ("CC", "CXX", "CFLAGS", "CXXFLAGS", "CPPFLAGS", "LDFLAGS", "LDSHARED", "NVCC_FLAGS",
             "CUDA_HOME", "CUDA_PATH", "TORCH_CUDA_ARCH_LIST", "CMAKE_ARGS", "CPATH",
             "C_INCLUDE_PATH", "CPLUS_INCLUDE_PATH", "LIBRARY_PATH", "NVCC_APPEND_FLAGS",
             "NVCC_PREPEND_FLAGS")
# The compilers a build runs by name, as the stages' PATH resolves them (with $CC, $CXX).
COMPILERS = ("cc", "c++", "gcc", "g++", "nvcc")

ATTRIBUTES = ".gitattributes"
# The settings that decide the bytes a checkout writes (checkout_settings): line ends,
# links, the attributes file, and every filter driver's commands (`filter.<driver>.smudge`,
# `.process`: git lfs).
CHECKOUT_CONFIG = r"^(core\.(autocrlf|eol|attributesfile|symlinks)|filter\..*)$"

# What, beside the interpreter, decides which packages the stages import.
PYTHON_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PYTHONNOUSERSITE",
              "PYTHONSAFEPATH")

Entries = Sequence[tuple[str, str, str, str]]  # (mode, type, object, path), as git ls-tree


@lru_cache(maxsize=256)
def _compile(pattern: str) -> re.Pattern[str]:
    """A glob over repository paths: `**` any folders (none included), `*`, `?` and `[...]`
    (as fnmatch: `[!...]` negates) within one name; a pattern ending in `/`, or naming a
    folder, takes everything under it."""
    pat = pattern.strip()
    pat = pat[2:] if pat.startswith("./") else pat
    out, i = "", 0
    while i < len(pat):
        if pat.startswith("**/", i):
            out, i = out + "(?:.*/)?", i + 3
        elif pat.startswith("**", i):
            out, i = out + ".*", i + 2
        elif pat[i] == "*":
            out, i = out + "[^/]*", i + 1
        elif pat[i] == "?":
            out, i = out + "[^/]", i + 1
        elif pat[i] == "[" and (end := _class_end(pat, i)) > 0:
            body = pat[i + 1:end].replace("\\", "\\\\").replace("[", "\\[")
            body = "^" + body[1:] if body.startswith("!") else re.sub(r"^\^", r"\\^", body)
            out, i = out + "(?!/)[" + body + "]", end + 1
        else:
            out, i = out + re.escape(pat[i]), i + 1
    if out.endswith("/"):
        out = out[:-1]
    return re.compile(rf"^{out}(?:/.*)?$", re.DOTALL)


def _class_end(pat: str, start: int) -> int:
    """Where the `[...]` class opened at `start` closes, as fnmatch reads it (`[!...]`
    negates, a `]` first is a member); -1 when it does not (the `[` is then a character)."""
    j = start + 1
    j += pat.startswith("!", j)
    j += pat.startswith("]", j)
    end = pat.find("]", j)
    return end


def matches(path: str, patterns: Iterable[str]) -> bool:
    return any(_compile(p).match(path) for p in patterns)


def reads_base(stages: Sequence[Stage]) -> bool:
    """Whether an input pattern of a reusable stage names files of the upstream base."""
    return any(p.startswith(BASE) for s in stages if s.reusable for p in s.inputs or ())


def default_input(path: str, queue_paths: Sequence[str] = DEFAULT_QUEUE_PATHS) -> bool:
    """Whether a file is an input of the `build` stage without `inputs:`: every file but the
    ones a native build clearly does not read — Python sources (`.py`, `.pyi`) that are not
    build files (setup.py, build.py, cmake/...), documentation, and pq's own queue files. A
    file named like a doc is one only without a suffix or with a text one (`NOTICE`,
    `CHANGES.txt`): `notice.tpp`, `license.inc` may be included by a source."""
    name = path.rsplit("/", 1)[-1].lower()
    text = "." not in name or name.endswith((*DOC_SUFFIXES, ".txt"))
    if is_queue_path(path, queue_paths) or (is_doc(path) and (
            text or path.startswith(("docs/", "doc/")))):
        return False
    return not path.lower().endswith(NOT_BUILT) or decide(path).layer == "build"


def input_files(stage: Stage, entries: Entries, base_entries: Entries = (),
                queue_paths: Sequence[str] = DEFAULT_QUEUE_PATHS
                ) -> list[tuple[str, str, str]]:
    """(path, mode, blob) of the files that are the stage's inputs, in path order: the
    tip's, and with `base:` patterns the recorded base's (their paths keep the prefix)."""
    tip = None if stage.inputs is None else [p for p in stage.inputs if not p.startswith(BASE)]
    base = [p[len(BASE):] for p in stage.inputs or () if p.startswith(BASE)]
    picked = []
    for prefix, files, patterns in (("", entries, tip), (BASE, base_entries, base)):
        if patterns == []:
            continue  # no pattern of this side: none of its files to look at
        for mode, kind, obj, path in files:
            if kind != "blob" and kind != "commit":
                continue
            if path.rsplit("/", 1)[-1] == ATTRIBUTES:
                pass  # how every file of that side is checked out: always an input
            elif patterns is not None:
                if not matches(path, patterns):
                    continue
            elif not default_input(path, queue_paths):
                continue
            picked.append((prefix + path, mode, obj))
    return sorted(picked)


def unmatched(stage: Stage, entries: Entries, base_entries: Entries = ()) -> list[str]:
    """The stage's `inputs` patterns that name no file (of the tip, or with `base:` of the
    recorded base): a typo there would make the stage reusable on its command alone."""
    files = {"": [p for _, kind, _, p in entries if kind in ("blob", "commit")],
             BASE: [p for _, kind, _, p in base_entries if kind in ("blob", "commit")]}
    missing = []
    for pattern in stage.inputs or ():
        side = BASE if pattern.startswith(BASE) else ""
        if not any(matches(p, [pattern[len(side):]]) for p in files[side]):
            missing.append(pattern)
    return missing


def checkout_settings(common_dir: Path, config: Mapping[str, str],
                      environ: Mapping[str, str]) -> str | None:
    """A digest of what, besides the tree's `.gitattributes`, decides the bytes a checkout
    writes (eol, working-tree-encoding, filters), for the gate's fingerprint:
    `.git/info/attributes`, the file `core.attributesFile` names (by default
    `$XDG_CONFIG_HOME/git/attributes`), `core.autocrlf`, `core.eol`, `core.symlinks` and
    the filter drivers' settings (`config`: those of git's configuration); None when none
    is there."""
    home = environ.get("XDG_CONFIG_HOME") or os.path.join(environ.get("HOME", "~"), ".config")
    named = config.get("core.attributesfile") or os.path.join(home, "git", "attributes")
    found: dict[str, str] = {k: v for k, v in sorted(config.items())
                             if re.match(CHECKOUT_CONFIG, k)}
    for label, path in (("info/attributes", common_dir / "info" / "attributes"),
                        ("attributesFile", Path(os.path.expanduser(named)))):
        try:
            found[label] = hashlib.sha256(path.read_bytes()).hexdigest()
        except OSError:
            continue
    return short_digest(found) if found else None


def short_digest(data: Any) -> str:
    """16 hex digits of SHA-256 of `data` as JSON: a fingerprint entry that tells values
    apart without writing them (paths, flags) into the records teams share."""
    return hashlib.sha256(json.dumps(data, sort_keys=True).encode()).hexdigest()[:16]


def compilers(path_env: str, environ: Mapping[str, str]) -> str | None:
    """A digest of the compilers a build would run, as the stages' PATH resolves them (`cc
    c++ gcc g++ nvcc`, and the command of `$CC` and `$CXX`): each one's resolved path, size
    and mtime, so another g++ first on PATH is another toolchain. None when none is found."""
    names = list(COMPILERS)
    for var in ("CC", "CXX"):
        words = environ.get(var, "").split()
        names += words[:1]
    found = {}
    for name in names:
        where = shutil.which(name, path=path_env)
        if where is None:
            continue
        real = os.path.realpath(where)
        try:
            st = os.stat(real)
        except OSError:
            continue
        found[name] = [where, real, st.st_size, st.st_mtime_ns]
    return short_digest(found) if found else None


def build_env(environ: Mapping[str, str]) -> str | None:
    """A digest of the build variables of the caller's environment, for the gate's
    fingerprint (their values, paths and flags, stay out of the records teams share)."""
    found = {k: environ[k] for k in BUILD_ENV if k in environ}
    return short_digest(found) if found else None


def stage_keys(stages: Sequence[Stage], entries: Entries, toolchain: Mapping[str, Any],
               python: str, base_entries: Entries = (),
               queue_paths: Sequence[str] = DEFAULT_QUEUE_PATHS) -> dict[str, str]:
    """The input fingerprint of every reusable stage: its input files (path, blob; every
    `.gitattributes` among them), command, env, what it requires and checks (a GPU, the
    symbol check), the interpreter, the toolchain fingerprint (the caller's build variables
    and checkout settings too) and the fingerprints of the reusable stages before it."""
    keys: dict[str, str] = {}
    unkeyed = False  # a reusable stage before runs: what it makes is in no key of later ones
    for stage in stages:
        if not stage.reusable:
            continue
        if unkeyed or (reads_base([stage]) and not base_entries):
            unkeyed = True  # (a base it cannot read: the stage runs, and so do the later)
            continue
        data = {"format": FORMAT, "stage": stage.name, "run": stage.run,
                "env": dict(sorted(stage.env.items())), "requires": sorted(stage.requires),
                "check_symbols": stage.check_symbols, "python": python,
                "toolchain": dict(toolchain),
                "inputs": input_files(stage, entries, base_entries, queue_paths),
                "patterns": list(stage.inputs) if stage.inputs is not None else None,
                "artifacts": list(stage.artifacts) if stage.artifacts is not None else None,
                "after": list(keys.values())}
        text = json.dumps(data, sort_keys=True, separators=(",", ":"))
        keys[stage.name] = hashlib.sha256(text.encode()).hexdigest()
    return keys
