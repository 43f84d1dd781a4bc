"""A fork whose committed series.yaml carries a `gate` section of small shell stages."""

from __future__ import annotations

import json
import shutil
import sys
from pathlib import Path

from gitrepo import commit_all, git, make_fork, pq, write

PY = sys.executable


_TEMPLATE: list[Path] = []


def _template(tmp: Path) -> Path:
    """make_fork + one migration commit + `pq init --commit`, built once and copied."""
    if not _TEMPLATE:
        fork = make_fork(tmp / "template")
        write(fork, "setup.py", "import paddle\npaddle.enable_compat()\n"
              "from torch.utils import cpp_extension\n\nsetup(name='x')\n")
        commit_all(fork, "build: enable compat in setup.py")
        pq(fork, "init", "--upstream", "upstream/main", "--commit")
        _TEMPLATE.append(fork)
    return _TEMPLATE[0]


def gate_fork(tmp: Path, gate_yaml: str, files: dict[str, str] | None = None) -> Path:
    """A fork with a one-patch series, extra files committed, and the gate section."""
    fork = tmp / "fork"
    shutil.copytree(_template(tmp), fork, symlinks=True)
    if files:
        for rel, text in files.items():
            write(fork, rel, text, mode=0o755 if rel.endswith(".sh") else None)
        commit_all(fork, "python-glue: test files")
    if gate_yaml:
        set_gate(fork, gate_yaml)
    return fork


def set_gate(fork: Path, gate_yaml: str, commit: bool = True) -> None:
    text = (fork / "series.yaml").read_text()
    if "\ngate:" in text:
        text = text[:text.index("\ngate:") + 1]
    write(fork, "series.yaml", text + gate_yaml)
    if commit:
        commit_all(fork, "pq: gate configuration")


def note(fork: Path, rev: str = "HEAD") -> dict:
    return json.loads(git(fork, "notes", "--ref=refs/notes/pq-gate", "show", rev))


def stage_lines(*stages: str, python: str | None = PY) -> str:
    head = "gate:\n" + (f"  python: {python}\n" if python else "") + "  stages:\n"
    return head + "".join(stages)


def stage(name: str, run: str, **extra: str) -> str:
    text = f"    - name: {name}\n      run: {json.dumps(run)}\n"
    for key, value in extra.items():
        text += f"      {key}: {value}\n"
    return text
