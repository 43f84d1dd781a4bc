"""scripts/gpu-gate.sh runs where no test can (a GPU machine): what it copies from the
checkout must exist in it."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
NOT_TRACKED = {"wheelhouse"}  # filled by the user on a machine where pip works


def test_every_checkout_path_the_gpu_script_names_exists() -> None:
    script = (ROOT / "scripts" / "gpu-gate.sh").read_text()
    named = set(re.findall(r"\$ROOT/([A-Za-z0-9_./-]+)", script))
    assert "src/pq/demo/example/upstream" in named  # the example's upstream it copies
    missing = sorted(p for p in named - NOT_TRACKED if not (ROOT / p).exists())
    assert missing == []
