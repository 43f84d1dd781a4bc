"""The shape of the package, kept by tests: each folder is one layer, every import points
down, no module outgrows ~400 lines, only pq/git/ starts processes (git, and others through pq/git/process.py), only
pq/git/ spells a git command line, and only pq/cli/ writes to the terminal.

docs/architecture.md draws the same picture; change both together."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import pq

SRC = Path(pq.__file__).parent
EXAMPLE = SRC / "demo" / "example"  # the example operator library pq ships, not pq

# Bottom to top; a module may import its own folder and the folders below it.
LAYERS = ["errors", "faults", "atomic", "background", "quoting", "installed", "git", "model", "oplog", "queue", "rebase",
          "toolchain", "compat", "drift", "compare", "audit", "gate", "lint", "report", "push", "demo", "cli", "__main__"]
MAX_LINES = 400
GATEWAY = {"run", "text", "run_proc", "run_sealed", "run_sealed_proc"}


def modules() -> list[Path]:
    return sorted(p for p in SRC.rglob("*.py") if EXAMPLE not in p.parents)


def layer_of(path: Path) -> str:
    rel = path.relative_to(SRC)
    return rel.parts[0] if len(rel.parts) > 1 else rel.stem


def imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module == "pq":
                found += [(node.lineno, f"pq.{a.name}") for a in node.names]
            elif node.module.startswith("pq."):
                found.append((node.lineno, node.module))
        elif isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names if a.name.startswith("pq.")]
    return found


def test_every_module_belongs_to_a_layer() -> None:
    unknown = {layer_of(p) for p in modules()} - set(LAYERS) - {"__init__"}
    assert unknown == set(), f"add {sorted(unknown)} to LAYERS and docs/architecture.md"


def test_every_import_points_down() -> None:
    rank = {name: i for i, name in enumerate(LAYERS)}
    upward = []
    for path in modules():
        here = layer_of(path)
        if here == "__init__":
            continue
        for line, module in imports(path):
            there = module.split(".")[1]
            if there in rank and there != here and rank[there] > rank[here]:
                upward.append(f"{path.relative_to(SRC)}:{line} imports {module}")
    assert upward == []


@pytest.mark.parametrize("limit", [MAX_LINES])
def test_no_module_outgrows_the_limit(limit: int) -> None:
    big = [f"{p.relative_to(SRC)}: {n}" for p in modules()
           if (n := len(p.read_text().splitlines())) > limit]
    assert big == []


def test_only_the_git_layer_starts_processes() -> None:
    starters = []
    for path in modules():
        if layer_of(path) == "git":
            continue
        for line, name in _plain_imports(path):
            if name in ("subprocess", "pty", "multiprocessing"):
                starters.append(f"{path.relative_to(SRC)}:{line} imports {name}")
        for node in ast.walk(ast.parse(path.read_text())):
            if (isinstance(node, ast.Attribute) and getattr(node.value, "id", "") == "os"
                    and node.attr.startswith(("system", "popen", "exec", "spawn", "fork",
                                              "killpg"))):
                starters.append(f"{path.relative_to(SRC)}:{node.lineno} uses os.{node.attr}")
    assert starters == []


def _plain_imports(path: Path) -> list[tuple[int, str]]:
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
    return found


def gateway_calls(path: Path, root: Path = SRC) -> list[str]:
    """`git.run("...")`-style calls: a git command line spelled outside the git layer."""
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


def test_only_the_git_layer_spells_git_command_lines() -> None:
    offenders = [hit for p in modules() if layer_of(p) != "git" for hit in gateway_calls(p)]
    assert offenders == []


def test_the_git_command_line_check_can_fail(tmp_path: Path) -> None:
    bad = tmp_path / "bad.py"
    bad.write_text('def f(git, self):\n    git.run("status")\n    self.git.text("log")\n')
    assert gateway_calls(bad, tmp_path) == ["bad.py:2", "bad.py:3"]


def test_only_the_cli_writes_to_the_terminal() -> None:
    writers = []
    for path in modules():
        if layer_of(path) in ("cli", "__main__"):
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Call):
                f = node.func
                if (isinstance(f, ast.Name) and f.id == "print") or (
                        isinstance(f, ast.Attribute) and f.attr in ("echo", "secho")
                        and getattr(f.value, "id", "") == "click"):
                    writers.append(f"{path.relative_to(SRC)}:{node.lineno}")
        if any(name == "click" for _, name in _plain_imports(path)):
            writers.append(f"{path.relative_to(SRC)} imports click")
    assert writers == []


def test_an_abort_loads_neither_the_replay_nor_yaml() -> None:
    """`pq rebase --abort` is the command of a user whose rebase went wrong, timed against
    `git rebase --abort`: the modules it runs leave the replay's chain (patch files, hunk
    reading, mail headers) and PyYAML unloaded."""
    import subprocess
    import sys

    heavy = ("pq.rebase.engine", "pq.queue.stack", "pq.model.patchfile", "yaml",
             "email.utils", "shutil", "tempfile")
    code = ("import sys\nimport pq.cli.app, pq.cli.rebase, pq.rebase.abort\n"
            f"print(sorted(m for m in {heavy!r} if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
