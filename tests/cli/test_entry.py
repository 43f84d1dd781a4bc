"""The `pq` process: each of its entry paths (click, a plain `pq rebase`, the pre-push
hook's `hook run`) collects cyclic garbage with pq's thresholds, set before its imports."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from pq.cli import COLLECTOR_THRESHOLDS

# Runs pq's entry as the `pq` script does, and prints the collector's thresholds at exit
# (registered first, so it runs after pq's own exit handlers).
PROBE = """
import atexit, gc, sys
atexit.register(lambda: print("thresholds", *gc.get_threshold(), file=sys.stderr))
sys.argv = ["pq", *sys.argv[1:]]
from pq.__main__ import main
main()
"""


@pytest.mark.parametrize("args", [["--version"], ["rebase", "--abort"],
                                  ["hook", "run", "origin", "/nowhere.git"]],
                         ids=["click", "plain-rebase", "hook-run"])
def test_every_entry_path_collects_with_pq_thresholds(tmp_path: Path, args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", PROBE, *args], cwd=tmp_path, input=b"",
                          capture_output=True, check=False)
    said = proc.stderr.decode().splitlines()
    assert said[-1] == "thresholds " + " ".join(map(str, COLLECTOR_THRESHOLDS)), said
