"""The shipped example as a fork: tinyop v1 (built as `pq demo` builds it, same commit id)
with this checkout's series.yaml, patches/ and mre/ applied on branch `paddle`."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from gitrepo import pq

from pq.demo import build

ROOT = Path(__file__).resolve().parents[2]


def example_fork(tmp: Path) -> Path:
    up, fork = tmp / "upstream", tmp / "fork"
    shutil.copytree(build.UPSTREAM_TREE, up,
                    ignore=shutil.ignore_patterns("__pycache__", "*.so", "build"))
    env = {**os.environ, **build._env("tinyop maintainers", 1_767_225_600)}
    for args in (["init", "-q", "-b", "main"], ["add", "-A"], ["commit", "-q", "-m", "tinyop v1"]):
        subprocess.run(["git", *args], cwd=up, env=env, check=True)
    v1 = subprocess.run(["git", "rev-parse", "HEAD"], cwd=up, capture_output=True, text=True,
                        check=True).stdout.strip()
    subprocess.run(["git", "clone", "-q", "-o", "upstream", str(up), str(fork)], check=True)
    build.copy_series(ROOT, fork, v1)
    pq(fork, "apply", "--branch", "paddle")
    return fork
