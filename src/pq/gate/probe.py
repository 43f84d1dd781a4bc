"""The environment a gate runs in: the interpreter, its framework versions, CUDA and GPUs.

pq.toolchain asks the chosen interpreter about itself and reads CUDA and the GPUs; this
module adds what only the gate needs: finding the interpreter, the folders of its wheels'
shared libraries, the PQ_GPU override and the fingerprint a recorded result holds for.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pq import __version__, toolchain
from pq.atomic import write_atomic
from pq.errors import ConfigError
from pq.git import process

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


def is_launcher(path: str) -> bool:
    """Whether `path` is a version manager's shim (pyenv, asdf, mise: a script in a
    `shims` folder), not an interpreter: which Python it runs depends on where and with
    what environment it runs. Another script (a wrapper that sets variables, then execs
    Python) is what the stages run, as it is."""
    if os.path.basename(os.path.dirname(os.path.abspath(path))) != "shims":
        return False
    try:
        with open(os.path.realpath(path), "rb") as f:
            return f.read(2) == b"#!"
    except OSError:
        return False


def launched(path: str, cwd: Path, env: dict[str, str]) -> str:
    """The interpreter a launcher runs in `cwd` with `env` (the gate's worktree, the stages'
    environment: a committed .python-version, PYENV_VERSION): its `sys.executable`."""
    script = "import sys; print(sys.executable)"
    try:
        done = process.run([path, "-c", script], timeout=120, cwd=str(cwd), env=env,
                           merge_stderr=False)
    except OSError as exc:
        raise ConfigError(f"python interpreter {path} does not start: {exc.strerror}",
                          hint="point gate.python (or --python) at a working interpreter"
                          ) from None
    found = done.stdout.decode(errors="replace").strip()
    if done.timed_out or done.code != 0 or not os.path.isabs(found):
        said = done.stderr.decode(errors="replace").strip().splitlines()[-1:]
        detail = "timed out" if done.timed_out else said[0] if said else \
            process.exit_detail(done.code)
        raise ConfigError(f"python interpreter {path} (a launcher) does not run in the gate's "
                          f"worktree: {detail}",
                          hint="point gate.python (or --python) at a working interpreter")
    return found


def inspect(path: str) -> Interpreter:
    """Run the interpreter once to learn its versions; ConfigError when it does not run."""
    asked = toolchain.ask(path)
    if asked.failed:
        raise ConfigError(f"python interpreter {path} failed: {asked.problem}",
                          hint="pq needs Python 3.8 or newer as the gate interpreter")
    if asked.facts is None:
        raise ConfigError(f"python interpreter {path} does not run: {asked.problem}",
                          hint="point gate.python (or --python) at a working interpreter")
    return Interpreter(path, asked.facts)


def library_dirs(interp: Interpreter) -> list[str]:
    """Folders holding the shared libraries of torch, paddle and NVIDIA wheels."""
    try:
        done = process.run([interp.path, "-c", _LIBDIRS_SCRIPT], timeout=120, cwd="/",
                           merge_stderr=False)
    except OSError:
        return []
    if done.timed_out:
        return []
    return [line for line in done.stdout.decode(errors="replace").splitlines() if line]


def gpu_visible() -> bool:
    """PQ_GPU=1/0 decides; otherwise `nvidia-smi -L` must list at least one GPU, and
    CUDA_VISIBLE_DEVICES, where set, must name one (`-1` or empty hides them all)."""
    forced = os.environ.get("PQ_GPU")
    if forced in ("0", "1"):
        return forced == "1"
    return toolchain.gpu_listed(os.environ.get("CUDA_VISIBLE_DEVICES"))


def fingerprint(interp: Interpreter, path_env: str, gpu: bool) -> dict[str, Any]:
    """What decides whether an earlier result still holds: versions, CUDA, GPU, platform."""
    facts = interp.facts
    names: list[str] | None = None
    driver: str | None = None
    if gpu and os.environ.get("PQ_GPU") != "1":
        found, driver = toolchain.gpus()
        names = found or None
    return {
        "python": facts.get("python"),
        "torch": facts.get("torch"),
        "paddle": facts.get("paddle"),
        "paddle_commit": facts.get("paddle_commit"),  # develop builds all say 0.0.0
        "cuda": toolchain.cuda_version(path_env),
        "gpu_visible": gpu,
        "gpu": names,
        "driver": driver,
        "os": facts.get("os"),
        "machine": facts.get("machine"),
        "libc": facts.get("libc"),
    }


# -- the probe, remembered -------------------------------------------------------------------

PROBE_FILE = "probe.json"
PROBE_FORMAT = 2  # 2: the fingerprint holds paddle_commit (a probe.json of 1 is asked again)
_PROBE_ENV = ("PYTHONPATH", "PYTHONHOME", "PYTHONUSERBASE", "PQ_GPU", "CUDA_HOME",
              "CUDA_PATH", "CUDA_VISIBLE_DEVICES", "NVIDIA_VISIBLE_DEVICES")


@dataclass(frozen=True)
class Environment:
    interpreter: Interpreter
    gpu: bool
    fingerprint: dict[str, Any]


def environment(path: str, path_env: str, cache_file: Path) -> Environment:
    """inspect + gpu_visible + fingerprint, remembered in `cache_file` for as long as nothing
    they read changed: the interpreter and its site-packages folders (a pip install changes
    their mtime), nvcc and nvidia-smi on PATH, the GPU device nodes, the boot, and the
    variables in _PROBE_ENV. Saves the interpreter and nvcc/nvidia-smi runs of every gate."""
    key = _probe_key(path, path_env)
    try:
        data = json.loads(cache_file.read_text(encoding="utf-8"))
        if data.get("key") == key:
            return Environment(Interpreter(path, data["facts"]), bool(data["gpu"]),
                               dict(data["fingerprint"]))
    except (OSError, ValueError, KeyError, TypeError, AttributeError, RecursionError):
        pass
    interp = inspect(path)
    gpu = gpu_visible()
    found = Environment(interp, gpu, fingerprint(interp, path_env, gpu))
    text = json.dumps({"key": key, "facts": interp.facts, "gpu": gpu,
                       "fingerprint": found.fingerprint}, indent=1, sort_keys=True)
    try:
        write_atomic(cache_file, text.encode() + b"\n", durable=False)
    except OSError:
        pass  # only a cache
    return found


def _pythonpath_entries(value: str) -> list[str]:
    """Each PYTHONPATH folder and what is directly in it: a package installed, removed or
    replaced there (`pip install --target`) changes one of their stamps, as it changes a
    site-packages folder's."""
    found: list[str] = []
    for entry in value.split(os.pathsep):
        if not entry:
            continue
        found.append(entry)
        try:
            found += sorted(os.path.join(entry, name) for name in os.listdir(entry))
        except OSError:
            continue
    return found


def _probe_key(path: str, path_env: str) -> str:
    real = os.path.realpath(path)
    files = [path, real, os.path.join(os.path.dirname(os.path.dirname(path)), "pyvenv.cfg")]
    for prefix in sorted({os.path.dirname(os.path.dirname(p)) for p in (path, real)}):
        for pattern in ("lib*/python3*/site-packages", "lib*/python3*/dist-packages",
                        "lib/python3/dist-packages"):
            files += sorted(glob.glob(os.path.join(prefix, pattern)))
    files += sorted(glob.glob(os.path.expanduser("~/.local/lib/python3*/site-packages")))
    files += _pythonpath_entries(os.environ.get("PYTHONPATH", ""))
    for tool in ("nvcc", "nvidia-smi"):
        found = shutil.which(tool, path=path_env)
        files += [found, os.path.realpath(found)] if found else []
    files += sorted(glob.glob("/dev/nvidia*")) + ["/proc/sys/kernel/random/boot_id"]
    stamps = []
    for name in files:
        try:
            st = os.stat(name)
            stamps.append(f"{name}:{st.st_mtime_ns}:{st.st_size}:{st.st_ino}")
        except OSError:
            stamps.append(f"{name}:-")
    try:
        with open("/proc/sys/kernel/random/boot_id", encoding="ascii") as f:
            stamps.append(f.read().strip())
    except OSError:
        pass
    env = [f"{k}={os.environ.get(k)}" for k in _PROBE_ENV]
    text = "\n".join([__version__, str(PROBE_FORMAT), path_env, *env, *stamps])
    return hashlib.sha256(text.encode()).hexdigest()
