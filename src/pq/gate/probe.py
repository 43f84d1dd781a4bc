"""The environment a gate runs in: the interpreter, its framework versions, CUDA and GPUs.

One small `python -c` asks the chosen interpreter about itself (importlib.metadata, never
importing torch or paddle); `nvcc --version` and `nvidia-smi` describe CUDA and the GPUs.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pq.errors import ConfigError

_SCRIPT = r"""
import importlib.metadata as md, json, os, platform, sys, sysconfig
def version(*names):
    for name in names:
        try:
            return md.version(name)
        except Exception:
            pass
    return None
libc = platform.libc_ver()
lib = None
if sysconfig.get_config_var("Py_ENABLE_SHARED"):
    soname = sysconfig.get_config_var("INSTSONAME") or sysconfig.get_config_var("LDLIBRARY")
    libdir = sysconfig.get_config_var("LIBDIR")
    if soname and libdir and os.path.exists(os.path.join(libdir, soname)):
        lib = os.path.join(libdir, soname)
print(json.dumps({
    "python": platform.python_version(),
    "torch": version("torch"),
    "paddle": version("paddlepaddle", "paddlepaddle-gpu", "paddle"),
    "os": platform.system(),
    "machine": platform.machine(),
    "libc": (libc[0] + " " + libc[1]).strip() or None,
    "executable": os.path.realpath(sys.executable),
    "libpython": lib,
}))
"""

_LIBDIRS_SCRIPT = r"""
import importlib.util, os, sys
for name in ("torch", "paddle", "nvidia"):
    try:
        spec = importlib.util.find_spec(name)
    except Exception:
        continue
    for loc in (spec.submodule_search_locations or []) if spec else []:
        for d, dirs, files in os.walk(loc):
            dirs[:] = [x for x in dirs if x not in ("include", "__pycache__", "tests")]
            if any(f.startswith("lib") and ".so" in f for f in files):
                print(d)
"""


@dataclass(frozen=True)
class Interpreter:
    path: str  # as resolved on PATH or against the repository, symlinks kept (venvs)
    facts: dict[str, Any]

    @property
    def bin_dir(self) -> str:
        return os.path.dirname(self.path)


def find_interpreter(name: str, root: Path) -> str | None:
    """An absolute path for `name` (a path, relative to the repository, or a name on PATH)."""
    expanded = os.path.expanduser(name)
    if "/" in expanded:
        path = Path(expanded)
        if not path.is_absolute():
            path = root / path
        return os.path.abspath(path) if path.is_file() and os.access(path, os.X_OK) else None
    found = shutil.which(expanded)
    return os.path.abspath(found) if found else None


def inspect(path: str) -> Interpreter:
    """Run the interpreter once to learn its versions; ConfigError when it does not run."""
    try:
        proc = subprocess.run([path, "-c", _SCRIPT], capture_output=True, timeout=60, cwd="/",
                              check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ConfigError(f"python interpreter {path} does not run: {exc}",
                          hint="point gate.python (or --python) at a working interpreter") \
            from None
    if proc.returncode != 0:
        lines = proc.stderr.decode(errors="replace").strip().splitlines()
        raise ConfigError(f"python interpreter {path} failed: "
                          f"{lines[-1] if lines else 'exit ' + str(proc.returncode)}",
                          hint="pq needs Python 3.8 or newer as the gate interpreter")
    try:
        facts = json.loads(proc.stdout.decode().strip().splitlines()[-1])
    except (ValueError, IndexError):
        raise ConfigError(f"python interpreter {path} printed no answer",
                          hint="point gate.python (or --python) at a working interpreter") \
            from None
    return Interpreter(path, facts)


def library_dirs(interp: Interpreter) -> list[str]:
    """Folders holding the shared libraries of torch, paddle and NVIDIA wheels."""
    try:
        proc = subprocess.run([interp.path, "-c", _LIBDIRS_SCRIPT], capture_output=True,
                              timeout=120, cwd="/", check=False)
    except (OSError, subprocess.TimeoutExpired):
        return []
    return [line for line in proc.stdout.decode(errors="replace").splitlines() if line]


def gpu_visible() -> bool:
    """PQ_GPU=1/0 decides; otherwise `nvidia-smi -L` must list at least one GPU."""
    forced = os.environ.get("PQ_GPU")
    if forced in ("0", "1"):
        return forced == "1"
    out = _output(["nvidia-smi", "-L"])
    return out is not None and any(line.startswith("GPU ") for line in out.splitlines())


def fingerprint(interp: Interpreter, path_env: str, gpu: bool) -> dict[str, Any]:
    """What decides whether an earlier result still holds: versions, CUDA, GPU, platform."""
    facts = interp.facts
    gpus: list[str] | None = None
    driver: str | None = None
    if gpu and os.environ.get("PQ_GPU") != "1":
        out = _output(["nvidia-smi", "--query-gpu=name,driver_version",
                       "--format=csv,noheader"])
        if out:
            rows = [[c.strip() for c in line.split(",")] for line in out.splitlines() if line]
            gpus = [r[0] for r in rows]
            driver = rows[0][1] if rows and len(rows[0]) > 1 else None
    return {
        "python": facts.get("python"),
        "torch": facts.get("torch"),
        "paddle": facts.get("paddle"),
        "cuda": cuda_version(path_env),
        "gpu_visible": gpu,
        "gpu": gpus,
        "driver": driver,
        "os": facts.get("os"),
        "machine": facts.get("machine"),
        "libc": facts.get("libc"),
    }


def cuda_version(path_env: str) -> str | None:
    nvcc = shutil.which("nvcc", path=path_env)
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if nvcc is None and home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
        nvcc = os.path.join(home, "bin", "nvcc")
    if nvcc is None:
        return None
    out = _output([nvcc, "--version"])
    m = re.search(r"release [\d.]+, V([\d.]+)", out or "")
    return m.group(1) if m else None


def _output(cmd: list[str]) -> str | None:
    try:
        proc = subprocess.run(cmd, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return None
    return proc.stdout.decode(errors="replace") if proc.returncode == 0 else None

