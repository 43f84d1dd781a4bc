"""One git vocabulary: outside pq/git/ no module in these folders spells a git command line
(`git.run("...")`, `git.text`, `git.run_proc`, `git.run_sealed`); they call named verbs.
The folders still being moved by other work (oplog/, push/, gate/runner) join the list
when they are done."""

from __future__ import annotations

import ast
from pathlib import Path

import pq

SRC = Path(pq.__file__).parent
CHECKED = ["queue", "rebase", "audit", "model", "gate/record.py", "gate/symbols.py"]
GATEWAY = {"run", "text", "run_proc", "run_sealed"}


def _gateway_calls(path: Path, root: Path = SRC) -> list[str]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and node.func.attr in GATEWAY):
            continue
        owner = node.func.value
        name = owner.attr if isinstance(owner, ast.Attribute) else getattr(owner, "id", "")
        if name == "git":
            found.append(f"{path.relative_to(root)}:{node.lineno}")
    return found


def test_no_git_command_line_outside_the_git_layer() -> None:
    files: list[Path] = []
    for item in CHECKED:
        target = SRC / item
        files += sorted(target.rglob("*.py")) if target.is_dir() else [target]
    assert len(files) > 20
    offenders = [hit for f in files for hit in _gateway_calls(f)]
    assert offenders == []


def test_the_check_finds_a_git_command_line(tmp_path: Path) -> None:
    sample = SRC / "queue" / "files.py"
    bad = tmp_path / "bad.py"
    bad.write_text('def f(git, self):\n    git.run("status")\n    self.git.text("log")\n')
    assert len(_gateway_calls(sample)) == 0
    assert _gateway_calls(bad, tmp_path) == ["bad.py:2", "bad.py:3"]


def test_git_layer_imports_nothing_above_it() -> None:
    allowed = ("pq.git", "pq.errors", "pq.faults", "pq.process")
    bad = []
    for path in sorted((SRC / "git").glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("pq") \
                    and not (node.module or "").startswith(allowed):
                bad.append(f"{path.name}: {node.module}")
    # sealed.py borrows queue.files.write_atomic until a leaf module owns atomic writes.
    assert bad == ["sealed.py: pq.queue.files"]
