"""The versions an audit and a Paddle issue need: Paddle, PyTorch, Python, CUDA, driver.

Distributions are read from package metadata (no `import paddle`, which takes seconds);
another interpreter (`--python`) is asked once; CUDA and the driver come from nvcc and
nvidia-smi only when they are on PATH.
"""

from __future__ import annotations

import json
import os
import platform
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass

PADDLE_DISTS = ("paddlepaddle", "paddlepaddle-gpu")


def _collect() -> dict[str, str | None]:
    """Runs in-process, or as source in another interpreter: keep it self-contained."""
    import re
    import sys
    from importlib import metadata

    out: dict[str, str | None] = {"python": sys.version.split()[0], "paddle": None,
                                  "paddle_dist": None, "paddle_commit": None, "torch": None}
    for name in ("paddlepaddle", "paddlepaddle-gpu"):
        try:
            dist = metadata.distribution(name)
        except metadata.PackageNotFoundError:
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
        out["torch"] = metadata.version("torch")
    except metadata.PackageNotFoundError:
        pass
    return out


@dataclass(frozen=True)
class Versions:
    python: str | None = None
    paddle: str | None = None
    paddle_dist: str | None = None
    paddle_commit: str | None = None
    torch: str | None = None
    cuda: str | None = None
    driver: str | None = None
    platform: str = ""


def same_interpreter(python: str | None) -> bool:
    if python is None:
        return True
    found = shutil.which(python)
    return found is not None and os.path.abspath(found) == os.path.abspath(sys.executable)


def probe(python: str | None) -> Versions:
    """Python, Paddle and PyTorch versions of `python` (the running one when None)."""
    data: dict[str, str | None]
    if python is None or same_interpreter(python):
        data = _collect()
    else:
        import inspect

        script = ("from __future__ import annotations\n" + inspect.getsource(_collect)
                  + "\nimport json\nprint(json.dumps(_collect()))\n")
        try:
            proc = subprocess.run([python, "-c", script], capture_output=True, timeout=60,
                                  check=False)
            data = json.loads(proc.stdout.decode()) if proc.returncode == 0 else {}
        except (OSError, subprocess.TimeoutExpired, ValueError):
            data = {}
    return Versions(python=data.get("python"), paddle=data.get("paddle"),
                    paddle_dist=data.get("paddle_dist"),
                    paddle_commit=data.get("paddle_commit"), torch=data.get("torch"),
                    platform=platform.platform())


def paddle_version(python: str | None, thorough: bool = True) -> tuple[str | None, str]:
    """(installed Paddle version, where it was found) for the given interpreter.

    The running interpreter's site folders are scanned for the distribution's metadata
    folder first (milliseconds); `thorough` falls back to importlib.metadata."""
    if same_interpreter(python):
        for name, version in _scan_dist_info():
            return version, f"installed {name}"
        if not thorough:
            return None, ""
        from importlib import metadata

        for name in PADDLE_DISTS:
            try:
                return metadata.version(name), f"installed {name}"
            except metadata.PackageNotFoundError:
                continue
        return None, ""
    v = probe(python)
    return v.paddle, f"{v.paddle_dist} in {python}" if v.paddle else ""


def _scan_dist_info() -> list[tuple[str, str]]:
    """(distribution, version) of Paddle wheels installed on sys.path, first path first."""
    wanted = {n.replace("-", "_"): n for n in PADDLE_DISTS}
    found = []
    for folder in sys.path:
        try:
            names = os.listdir(folder or ".")
        except OSError:
            continue
        for entry in names:
            if not entry.endswith(".dist-info"):
                continue
            name, _, version = entry[: -len(".dist-info")].partition("-")
            dist = wanted.get(name.lower().replace("-", "_").replace(".", "_"))
            if dist and version:
                found.append((dist, version))
        if found:
            return sorted(found, key=lambda f: PADDLE_DISTS.index(f[0]))
    return found


def gpu() -> tuple[str | None, str | None]:
    """(CUDA toolkit version from nvcc, driver version from nvidia-smi), when present."""
    cuda = driver = None
    if shutil.which("nvcc"):
        out = _run(["nvcc", "--version"])
        m = re.search(r"release (\d+\.\d+)", out)
        cuda = m.group(1) if m else None
    if shutil.which("nvidia-smi"):
        out = _run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"])
        driver = out.strip().splitlines()[0].strip() if out.strip() else None
    return cuda, driver


def _run(argv: list[str]) -> str:
    try:
        proc = subprocess.run(argv, capture_output=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return ""
    return proc.stdout.decode("utf-8", "replace") if proc.returncode == 0 else ""
