"""The toolchain a command runs with: interpreter, torch, paddle, CUDA, driver and GPUs.

The one probe shared by `pq audit` (the versions an issue names) and `pq gate` (the
fingerprint a result holds for). Distributions are read from package metadata, never by
importing torch or paddle (seconds each); another interpreter is asked once with a small
`python -c`; CUDA comes from `nvcc --version`, the GPUs and driver from `nvidia-smi`.

CUDA is spelled as nvcc's full toolkit version, `V12.4.131` -> "12.4.131" (not the
release "12.4"): two toolkits of one release can build differently, so a gate result
must not carry over between them, and the issue text names the exact toolkit.
"""

from __future__ import annotations

import inspect
import json
import os
import re
import shutil
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from pq.git import process

PADDLE_DISTS = ("paddlepaddle", "paddlepaddle-gpu")


def paddle_dist_info() -> tuple[str, str, str] | None:
    """(distribution, version, its .dist-info folder) of the Paddle wheel this interpreter
    imports, found as importlib.metadata finds it (each name in PADDLE_DISTS in turn, the
    first folder on sys.path holding it), from the folder and its METADATA alone: a few
    milliseconds, where importing importlib.metadata costs ~10. None wherever the answer
    could differ from importlib.metadata's (an egg, a zip on sys.path, a METADATA header
    of another shape), which then answers."""
    listed: dict[str, list[str]] = {}
    for name in PADDLE_DISTS:
        for folder in sys.path:
            if not isinstance(folder, str):
                return None  # a path object, say: importlib.metadata reads those
            if folder not in listed:
                if folder.lower().endswith(".egg") or os.path.isfile(folder or "."):
                    return None  # an egg or a zip: importlib.metadata reads those
                try:
                    listed[folder] = os.listdir(folder or ".")
                except OSError:
                    listed[folder] = []
            for entry in listed[folder]:
                low = entry.lower()  # named as importlib.metadata's Lookup names it
                if not low.endswith((".dist-info", ".egg-info")) or _normalized(
                        low.rpartition(".")[0].partition("-")[0]) != _normalized(name):
                    continue
                if low.endswith(".egg-info"):
                    return None
                info = os.path.join(folder or ".", entry)
                version = _metadata_version(os.path.join(info, "METADATA"))
                return (name, version, info) if version else None
    return None


def _normalized(name: str) -> str:
    return re.sub(r"[-_.]+", "_", name).lower()


_HEADER = re.compile(r"[A-Za-z0-9][A-Za-z0-9-]*: \S(?:.*\S)?")
_VERSION = re.compile(r"[A-Za-z0-9][A-Za-z0-9.+!_-]*")


def _metadata_version(path: str) -> str | None:
    """The `Version:` of a METADATA file, where its header has the plain shape that the
    email parser importlib.metadata uses reads the same way (one `Key: value` a line, no
    folded or stray line up to it); None otherwise."""
    try:
        with open(path, encoding="utf-8") as f:  # text, universal newlines, as it reads
            lines = iter(f.read().split("\n"))
    except (OSError, UnicodeDecodeError):
        return None
    for line in lines:
        if not _HEADER.fullmatch(line):
            return None  # the header's end, or a line of another shape: not here
        key, _, value = line.partition(": ")
        if key.lower() == "version":
            after = next(lines, "")
            folded = after[:1] in (" ", "\t")
            return value if _VERSION.fullmatch(value) and not folded else None
    return None


def collect() -> dict[str, Any]:
    """The running interpreter's facts. Runs in-process, or as source in another (>= 3.8)
    interpreter: keep it self-contained."""
    import importlib.metadata as md
    import os
    import platform
    import re
    import sys
    import sysconfig

    out: dict[str, Any] = {"python": platform.python_version(), "torch": None,
                           "paddle": None, "paddle_dist": None, "paddle_commit": None}
    for name in ("paddlepaddle", "paddlepaddle-gpu"):
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        out["paddle"], out["paddle_dist"] = dist.version, name
        try:
            with open(str(dist.locate_file("paddle/version/__init__.py")),
                      encoding="utf-8") as f:
                m = re.search(r"^commit\s*=\s*'([0-9a-f]+)'", f.read(), re.MULTILINE)
            out["paddle_commit"] = m.group(1) if m else None
        except OSError:
            pass
        break
    try:
        out["torch"] = md.version("torch")
    except md.PackageNotFoundError:
        pass
    libc = platform.libc_ver()
    lib = None
    if sysconfig.get_config_var("Py_ENABLE_SHARED"):
        soname = (sysconfig.get_config_var("INSTSONAME")
                  or sysconfig.get_config_var("LDLIBRARY"))
        libdir = sysconfig.get_config_var("LIBDIR")
        if soname and libdir and os.path.exists(os.path.join(libdir, soname)):
            lib = os.path.join(libdir, soname)
    out.update({"os": platform.system(), "machine": platform.machine(),
                "libc": (libc[0] + " " + libc[1]).strip() or None,
                "executable": os.path.realpath(sys.executable), "libpython": lib})
    return out


@dataclass(frozen=True)
class Asked:
    """Another interpreter's facts, or why it gave none (`failed`: it ran and exited
    non-zero, e.g. too old for the script; otherwise it did not run or answer)."""

    facts: dict[str, Any] | None
    problem: str = ""
    failed: bool = False
    ran: bool = True  # False: it could not be started at all


def ask(python: str, timeout: float = 60.0) -> Asked:
    """This interpreter's facts (`collect`) as `python` sees them."""
    source = ("from __future__ import annotations\n" + inspect.getsource(collect)
              + "\nimport json\nprint(json.dumps(collect()))\n")
    return ask_source(python, source, timeout)


def ask_source(python: str, source: str, timeout: float = 60.0) -> Asked:
    """Run `source` in `python` once (in /, so no local module shadows the standard
    library); its answer is the JSON object on the last line it prints."""
    try:
        done = process.run([python, "-c", source], timeout=timeout, cwd="/",
                           merge_stderr=False)
    except OSError as exc:
        return Asked(None, exc.strerror or str(exc), ran=False)
    if done.timed_out:
        return Asked(None, f"no answer within {timeout:g} s")
    if done.code != 0:
        lines = done.stderr.decode(errors="replace").strip().splitlines()
        return Asked(None, lines[-1] if lines else process.exit_detail(done.code), True)
    try:
        facts = json.loads(done.stdout.decode(errors="replace").strip().splitlines()[-1])
    except (ValueError, IndexError):
        return Asked(None, "it printed no answer")
    return Asked(facts if isinstance(facts, dict) else None,
                 "" if isinstance(facts, dict) else "it printed no answer")


def cuda_version(path_env: str | None = None) -> str | None:
    """The CUDA toolkit of the `nvcc` on path_env (default PATH), else of $CUDA_HOME or
    $CUDA_PATH; its full version, e.g. "12.4.131"."""
    nvcc = shutil.which("nvcc", path=path_env)
    home = os.environ.get("CUDA_HOME") or os.environ.get("CUDA_PATH")
    if nvcc is None and home and os.access(os.path.join(home, "bin", "nvcc"), os.X_OK):
        nvcc = os.path.join(home, "bin", "nvcc")
    if nvcc is None:
        return None
    m = re.search(r"release [\d.]+, V([\d.]+)", _output([nvcc, "--version"]) or "")
    return m.group(1) if m else None


def gpus() -> tuple[list[str], str | None]:
    """(GPU names, driver version) from nvidia-smi; ([], None) without it."""
    if shutil.which("nvidia-smi") is None:
        return [], None
    out = _output(["nvidia-smi", "--query-gpu=name,driver_version", "--format=csv,noheader"])
    rows = [[c.strip() for c in line.split(",")] for line in (out or "").splitlines() if line]
    driver = rows[0][1] if rows and len(rows[0]) > 1 else None
    return [r[0] for r in rows], driver


def gpu_listed(cuda_visible: str | None = None) -> bool:
    """Whether `nvidia-smi -L` lists a GPU that CUDA may use: with `cuda_visible` (the
    CUDA_VISIBLE_DEVICES a process gets), one its first entry names by index or by its
    UUID (a prefix that only it has), as CUDA reads it; `""`, `-1` and `NoDevFiles` name
    none, and nvidia-smi lists every GPU whatever the variable says."""
    out = _output(["nvidia-smi", "-L"])
    if out is None or not any(line.startswith("GPU ") for line in out.splitlines()):
        return False
    if cuda_visible is None:
        return True
    first = cuda_visible.split(",")[0].strip()
    if first.startswith("MIG-GPU-"):  # older drivers' form: MIG-GPU-<uuid>/<gi>/<ci>
        first = first.removeprefix("MIG-").split("/")[0]
    indices = re.findall(r"(?m)^GPU (\d+):", out)
    uuids = re.findall(r"UUID: ((?:GPU|MIG)-[^)\s]+)", out)
    return first in indices or (first.startswith(("GPU-", "MIG-")) and sum(
        u.startswith(first) for u in uuids) == 1)  # a prefix names one device, or none


def _output(argv: list[str], env: Mapping[str, str] | None = None) -> str | None:
    done = process.output(argv, timeout=30, env=env)
    if done is None or done.code != 0:
        return None
    return done.stdout.decode("utf-8", "replace")
