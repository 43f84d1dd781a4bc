"""A plain `pq rebase` runs without click (`pq.__main__`, `pq.cli.rebase.plain_args`): it
must say and do exactly what the click path says and does, errors included, and leave every
other command line to click."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, pq, write

from pq.cli.rebase import plain_args

FIXED = {"GIT_AUTHOR_DATE": "1700000000 +0100", "GIT_COMMITTER_DATE": "1700000000 +0100",
         "GIT_EDITOR": "true"}


def _fork(root: Path) -> Path:
    """A fork of two patches; upstream then changes the line the first one changes."""
    fork = make_fork(root)
    write(fork, "pkg/__init__.py", "import paddle\n\n\ndef op(x):\n    return x + 1\n")
    commit_all(fork, "python-glue: op adds one")
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "python-glue: helper returns three")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    up = root / "upstream"
    write(up, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    return x * 2\n")
    commit_all(up, "upstream: op doubles")
    git(fork, "fetch", "-q", "upstream")
    return fork


def _pq(fork: Path, args: list[str], through_click: bool) -> tuple[int, str, str]:
    """`python -m pq rebase ...`; through click when `-C .` comes first (not plain)."""
    command = [sys.executable, "-m", "pq", *(["-C", "."] if through_click else []), *args]
    proc = subprocess.run(command, cwd=fork, capture_output=True, check=False,
                          env={**os.environ, **FIXED})
    out = proc.stdout.decode().replace(str(fork), "<fork>")
    out = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d[+-]\d{4}", "<when>", out)  # pq log's
    return proc.returncode, out, proc.stderr.decode().replace(str(fork), "<fork>")


def test_plain_command_lines_are_read_and_the_others_left_to_click() -> None:
    assert plain_args([]) == {}
    assert plain_args(["upstream/main"]) == {"upstream": "upstream/main"}
    assert plain_args(["--json", "--abort", "--force"]) == {"as_json": True, "abort": True,
                                                           "force": True}
    assert plain_args(["--no-rerere", "v2.1", "--gate"]) == {"no_rerere": True,
                                                             "upstream": "v2.1", "gate": True}
    for other in (["a", "b"], ["--json", "--json"], ["--forget", "a.py"], ["--help"], ["-h"],
                  ["--", "main"], ["--bogus"], ["-"], [""], ["--continue=1"]):
        assert plain_args(other) is None, other


def test_a_plain_rebase_says_and_does_what_the_click_path_does(tmp_path: Path) -> None:
    sessions = []
    for through_click in (False, True):
        fork = _fork(tmp_path / ("click" if through_click else "plain"))
        said = [_pq(fork, ["rebase", "--continue"], through_click)]  # none in progress
        said.append(_pq(fork, ["rebase", "upstream/main"], through_click))  # conflict
        said.append(_pq(fork, ["rebase", "--json", "--continue"], through_click))  # unresolved
        write(fork, "pkg/__init__.py", "import paddle\n\n\ndef op(x):\n    return x * 2 + 1\n")
        git(fork, "add", "pkg/__init__.py")
        said.append(_pq(fork, ["rebase", "--continue", "--json"], through_click))
        git(fork, "reset", "-q", "--hard", "refs/pq/orig-head/paddle")
        said.append(_pq(fork, ["rebase", "--no-rerere", "--json"], through_click))  # conflict
        said.append(_pq(fork, ["rebase", "--abort"], through_click))
        said.append(_pq(fork, ["log"], through_click))
        sessions.append((said, git(fork, "rev-parse", "HEAD", "paddle^{tree}")))
    for a, b in zip(sessions[0][0], sessions[1][0], strict=True):
        assert a == b
    assert sessions[0][1] == sessions[1][1]
    said, _ = sessions[0]
    codes = [code for code, _, _ in said]
    assert codes == [2, 1, 1, 0, 1, 0, 0]
    assert said[1][2].startswith("pq: error: patches/0001-python-glue-op-adds-one.patch "
                                 "(layer python-glue) conflicts in pkg/__init__.py")
    assert all(err.count("\n") <= 1 for _, _, err in said[:6])
    assert '"status": "done"' in said[3][1] and '"status": "conflict"' in said[4][1]
    assert "pq rebase upstream/main" in said[6][1]  # the log's command, as typed


def test_other_command_lines_get_clicks_usage_errors(tmp_path: Path) -> None:
    fork = _fork(tmp_path)
    for args, needle in ((["rebase", "--bogus"], "No such option '--bogus'"),
                         (["rebase", "a", "b"], "unexpected extra argument")):
        code, out, err = _pq(fork, args, through_click=False)
        assert code == 2 and out == "" and needle in err and "pq rebase --help" in err
    code, out, _ = _pq(fork, ["rebase", "--help"], through_click=False)
    assert code == 0 and "UPSTREAM-REF" in out and "--forget PATH" in out


def test_an_empty_upstream_ref_is_refused_not_read_as_none(tmp_path: Path) -> None:
    """`pq rebase "$REF"` with REF unset must not rebase onto series.yaml's ref (git:
    `invalid upstream ''`)."""
    fork = _fork(tmp_path)
    head = git(fork, "rev-parse", "HEAD")
    for args in (["rebase", ""], ["rebase", " ", "--json"]):
        code, out, err = _pq(fork, args, through_click=False)
        assert code == 2, (args, out, err)
        assert "UPSTREAM-REF given is empty" in (err if "--json" not in args else out)
    assert git(fork, "rev-parse", "HEAD") == head
    assert not (fork / ".git/pq/rebase/state.json").exists()


@pytest.mark.parametrize("args", [["rebase", "--abort"], ["rebase", "upstream/main"]])
def test_a_plain_rebase_never_imports_click(tmp_path: Path, args: list[str]) -> None:
    fork = _fork(tmp_path)
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pq", *args], cwd=fork,
                          capture_output=True, check=False)
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert "pq.cli.rebase" in imported and "click" not in imported


def test_a_clean_rebase_loads_neither_the_export_nor_the_stopped_rebase_modules(
        tmp_path: Path) -> None:
    """What only `pq export` (the `copies:` proposals, the hand-edit refusal) or a stopped
    rebase (`--continue`, `--skip`, `pq status`) runs is not imported by a rebase that
    lands: every module a command imports costs it time before its first git process."""
    fork = make_fork(tmp_path)
    write(fork, "pkg/glue.py", "import paddle\n")
    commit_all(fork, "python-glue: glue")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    write(tmp_path / "upstream", "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(tmp_path / "upstream", "upstream: helper returns three")
    git(fork, "fetch", "-q", "upstream")
    proc = subprocess.run([sys.executable, "-X", "importtime", "-m", "pq", "rebase",
                           "upstream/main"], cwd=fork, capture_output=True, check=False)
    assert proc.returncode == 0 and b"1 of 1 patches kept" in proc.stdout, proc
    imported = {line.rsplit("|", 1)[-1].strip() for line in proc.stderr.decode().splitlines()
                if line.startswith("import time:")}
    assert "pq.rebase.engine" in imported
    assert imported & {"pq.queue.copies", "pq.queue.handedits", "pq.rebase.status"} == set()
