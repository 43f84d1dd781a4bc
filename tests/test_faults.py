"""Fault injection: pq is killed (SIGKILL) at each checkpoint of every command that rewrites
history, then recovered with `pq rebase --abort` or `pq undo`; the repository must then be
exactly as it was before the command: refs, HEAD, index, every working tree byte, pq state.

Each command first runs once with PQ_FAULT_LOG to count its checkpoints N; then, for each
chosen k in 1..N, a fresh copy of a template repository runs it with PQ_FAULT_AT=k, using
the real `pq` console script in a subprocess so that the SIGKILL kills just that process.
"""

from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, pq, write

PQ = str(Path(sys.executable).parent / "pq")
WORKERS = max(1, min(4, os.cpu_count() or 1))

State = dict[str, object]


def repo_state(root: Path) -> State:
    """Everything a user could lose: refs, HEAD, index, working tree files, pq's state.

    The operation log itself (.git/pq/oplog and refs/pq/oplog) is left out: it records the
    killed command and its undo, which is the point of it.
    """
    refs = [ln for ln in git(root, "for-each-ref", "--format=%(refname) %(objectname)")
            .splitlines() if not ln.startswith("refs/pq/oplog")]
    head = git(root, "symbolic-ref", "-q", "HEAD", check=False) or \
        "detached " + git(root, "rev-parse", "HEAD")
    files: dict[str, object] = {}
    for dirpath, dirnames, filenames in os.walk(root):
        if Path(dirpath) == root:
            dirnames.remove(".git")
        for name in filenames + [d for d in dirnames if os.path.islink(Path(dirpath, d))]:
            p = Path(dirpath, name)
            rel = p.relative_to(root).as_posix()
            st = p.lstat()
            if stat.S_ISLNK(st.st_mode):
                files[rel] = ("link", os.readlink(p))
            else:
                files[rel] = (st.st_mode & 0o111 != 0, p.read_bytes())
    pq_state: dict[str, bytes] = {}
    pq_dir = root / ".git" / "pq"
    if pq_dir.is_dir():
        for p in pq_dir.rglob("*"):
            rel = p.relative_to(pq_dir).as_posix()
            if p.is_file() and not rel.startswith(("oplog", "lock")):
                pq_state[rel] = p.read_bytes()
    return {"refs": refs, "HEAD": head, "index": git(root, "ls-files", "-s"),
            "files": files, "pq": pq_state,
            "git-locks": sorted(p.name for p in (root / ".git").glob("*.lock"))}


def run_pq(root: Path, args: list[str], **env: str) -> subprocess.CompletedProcess[bytes]:
    full = dict(os.environ, **env)
    return subprocess.run([PQ, *args], cwd=root, env=full, capture_output=True, timeout=120,
                          check=False)


def oplog_count(root: Path) -> int:
    d = root / ".git" / "pq" / "oplog"
    return len(list(d.glob("*.json"))) if d.is_dir() else 0


def recover(root: Path, logged_before: int) -> str:
    """What a user does after pq died: abort a rebase, or undo the logged operation."""
    if (root / ".git" / "pq" / "rebase" / "state.json").exists():
        proc = run_pq(root, ["rebase", "--abort"])
        assert proc.returncode == 0, proc.stderr.decode()
        return "abort"
    if oplog_count(root) > logged_before:
        proc = run_pq(root, ["undo"])
        assert proc.returncode == 0, proc.stderr.decode()
        return "undo"
    return "nothing"  # killed before the operation was logged: nothing may have changed


def copy(template: Path, dest: Path) -> Path:
    shutil.copytree(template, dest, symlinks=True)
    return dest


def fault_run(template: Path, work: Path, args: list[str], k: int, expected: State,
              logged: int) -> tuple[int, str]:
    root = copy(template, work / f"k{k}")
    proc = run_pq(root, args, PQ_FAULT_AT=str(k))
    assert proc.returncode == -9, (k, proc.returncode, proc.stderr.decode())
    how = recover(root, logged)
    got = repo_state(root)
    for key in expected:
        assert got[key] == expected[key], f"checkpoint {k} ({how}): {key} differs"
    shutil.rmtree(root)
    return k, how


def count_checkpoints(template: Path, work: Path, args: list[str]) -> list[str]:
    root = copy(template, work / "count")
    log = work / "faults.log"
    proc = run_pq(root, args, PQ_FAULT_LOG=str(log))
    assert proc.returncode == 0, proc.stderr.decode()
    labels = log.read_text().splitlines()
    # A second, clean run from the same state must meet the same checkpoints.
    again = copy(template, work / "count2")
    log2 = work / "faults2.log"
    run_pq(again, args, PQ_FAULT_LOG=str(log2))
    assert log2.read_text().splitlines() == labels, "checkpoints are not deterministic"
    return labels


def check_all(template: Path, work: Path, args: list[str], ks: list[int] | None = None
              ) -> dict[str, int]:
    expected = repo_state(template)
    logged = oplog_count(template)
    labels = count_checkpoints(template, work, args)
    assert repo_state(work / "count") != expected, "the command changed nothing"
    chosen = ks if ks is not None else list(range(1, len(labels) + 1))
    with ThreadPoolExecutor(WORKERS) as pool:
        results = list(pool.map(lambda k: fault_run(template, work, args, k, expected,
                                                    logged), chosen))
    hows = [h for _, h in results]
    return {"checkpoints": len(labels), "tested": len(chosen),
            **{h: hows.count(h) for h in set(hows)}}


# -- the templates -------------------------------------------------------------------------

_templates: dict[str, Path] = {}


def template(name: str, build: Callable[[Path], Path],
             factory: pytest.TempPathFactory) -> Path:
    if name not in _templates:
        _templates[name] = build(factory.mktemp(name))
    return _templates[name]


def base_fork(tmp: Path) -> Path:
    """A fork with two patches in a committed series, an untracked note, and an upstream
    that moved on by one commit touching a file the patches do not touch."""
    fork = make_fork(tmp)
    write(fork, "setup.py", "import paddle\npaddle.enable_compat()\n"
          "from torch.utils import cpp_extension\n\nsetup(name='x')\n")
    commit_all(fork, "build: enable compat")
    write(fork, "pkg/__init__.py", "import torch  # scoped compat\n")
    commit_all(fork, "python-glue: scoped compat")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    upstream = tmp / "upstream"
    write(upstream, "csrc/extra.cc", "int g() { return 2; }\n")
    commit_all(upstream, "upstream: extra")
    git(fork, "fetch", "-q", "upstream")
    write(fork, "notes.txt", "my untracked notes\n")
    return fork


def export_fork(tmp: Path) -> Path:
    fork = base_fork(tmp)
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "python-glue: helper returns 3")
    return fork


@pytest.fixture
def work(tmp_path: Path) -> Path:
    return tmp_path


def test_export_commit(work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    tpl = template("export", export_fork, tmp_path_factory)
    stats = check_all(tpl, work, ["export", "--commit"])
    assert stats["undo"] > 0


def test_apply(work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    tpl = template("base", base_fork, tmp_path_factory)
    stats = check_all(tpl, work, ["apply", "--onto", "upstream/main"])
    assert stats["undo"] > 0


def test_apply_branch(work: Path, tmp_path_factory: pytest.TempPathFactory) -> None:
    tpl = template("base", base_fork, tmp_path_factory)
    stats = check_all(tpl, work, ["apply", "--onto", "upstream/main", "--branch", "rebuilt"])
    assert stats["undo"] > 0
