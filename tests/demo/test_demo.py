"""`pq demo`: the whole story on the bundled example, with pq run as a user runs it."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from gitrepo import git, pq


def test_demo_syncs_the_example_and_finds_only_the_planted_workaround(tmp_path: Path) -> None:
    out = tmp_path / "demo"
    result = pq(tmp_path, "demo", str(out))
    text = result.output
    for step in ("[1/5] upstream: tinyop v1", "[2/5] fork: branch paddle",
                 "[3/5] upstream moved by 3 commits", "[4/5] the weekly sync:",
                 "$ pq rebase upstream/main", "[5/5] which workarounds are still needed:",
                 "WA014 undeclared-workaround", "Everything else in the example series "
                 "audits clean."):
        assert step in text, step
    assert git(out / "fork", "rev-parse", "--abbrev-ref", "HEAD") == "paddle"
    assert git(out / "fork", "merge-base", "--is-ancestor", "upstream/main", "HEAD") == ""


def test_demo_does_not_import_the_cli() -> None:
    code = ("import sys, pq.demo.build; "
            "print(sorted(m for m in sys.modules if m.startswith('pq.cli')))")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                          check=True)
    assert proc.stdout.strip() == "[]"


def test_demo_refuses_a_file_a_full_folder_or_one_it_cannot_make(tmp_path: Path) -> None:
    (tmp_path / "a-file").write_text("mine\n")
    (tmp_path / "full").mkdir()
    (tmp_path / "full" / "x").write_text("mine\n")
    for name, said in (("a-file", "is not a folder"), ("full", "is not empty"),
                       ("a-file/below", "cannot make the folder")):
        result = pq(tmp_path, "demo", str(tmp_path / name), ok=False)
        assert result.exit_code == 2 and said in result.output, result.output
        assert "internal error" not in result.output and len(result.output.splitlines()) == 1
    assert (tmp_path / "a-file").read_text() == "mine\n"
