"""The versions an audit and a Paddle issue need: Paddle, PyTorch, Python, CUDA, driver.

The probe itself is pq.toolchain's (shared with the gate): package metadata, never
`import paddle`; another interpreter (`--python`) is asked once; CUDA and the driver from
nvcc and nvidia-smi when they are there. This module adds the audit's shape (Versions) and
the fast scan for the installed Paddle wheel.
"""

from __future__ import annotations

import os
import platform
import shutil
import sys
from dataclasses import dataclass
from typing import Any

from pq import toolchain
from pq.toolchain import PADDLE_DISTS


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
    data: dict[str, Any]
    if python is None or same_interpreter(python):
        data = toolchain.collect()
    else:
        data = toolchain.ask(python).facts or {}
    return Versions(python=data.get("python"), paddle=data.get("paddle"),
                    paddle_dist=data.get("paddle_dist"),
                    paddle_commit=data.get("paddle_commit"), torch=data.get("torch"),
                    platform=platform.platform())


def paddle_version(python: str | None, thorough: bool = True) -> tuple[str | None, str]:
    """(installed Paddle version, where it was found) for the given interpreter.

    The running interpreter's site folders are scanned for the distribution's metadata
    folder first (milliseconds: toolchain.paddle_dist_info); `thorough` falls back to
    importlib.metadata."""
    if same_interpreter(python):
        found = toolchain.paddle_dist_info()
        if found is not None:
            return found[1], f"installed {found[0]}"
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


def gpu() -> tuple[str | None, str | None]:
    """(CUDA toolkit version from nvcc, driver version from nvidia-smi), when present."""
    return toolchain.cuda_version(), toolchain.gpus()[1]
