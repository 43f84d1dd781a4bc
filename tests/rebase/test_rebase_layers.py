"""rebase/ sits above git, model, queue and oplog and below audit, gate, push, demo and cli:
its modules import only down, and the layers below it do not import it."""

from __future__ import annotations

import ast
from pathlib import Path

import pq

SRC = Path(pq.__file__).parent
ABOVE = ("pq.audit", "pq.gate", "pq.push", "pq.demo", "pq.cli")
BELOW = ("git", "model", "queue", "oplog")


def _imports(path: Path) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module:
            found.append(node.module)
        elif isinstance(node, ast.Import):
            found += [alias.name for alias in node.names]
    return found


def test_rebase_imports_nothing_above_it() -> None:
    files = sorted((SRC / "rebase").glob("*.py"))
    assert len(files) >= 9
    bad = [f"{p.name}: {m}" for p in files for m in _imports(p) if m.startswith(ABOVE)]
    assert bad == []


def test_nothing_below_rebase_imports_it() -> None:
    bad = [f"{p.relative_to(SRC)}: {m}" for folder in BELOW
           for p in sorted((SRC / folder).rglob("*.py")) for m in _imports(p)
           if m == "pq.rebase" or m.startswith("pq.rebase.")]
    # undo (oplog) lists the resolutions an operation recorded, through rebase/rerere.py,
    # until the operation log keeps them itself.
    assert bad == ["oplog/undo.py: pq.rebase"]


def test_the_check_sees_an_import(tmp_path: Path) -> None:
    sample = tmp_path / "m.py"
    sample.write_text("import pq.cli\nfrom pq.rebase import state\n")
    assert _imports(sample) == ["pq.cli", "pq.rebase"]
