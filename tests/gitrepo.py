"""Factories for real repositories in temporary folders: an upstream and a fork of it."""

from __future__ import annotations

import contextlib
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path

from click.testing import CliRunner, Result

from pq.cli import main


def git(cwd: Path, *args: str, input: bytes | None = None, check: bool = True) -> str:
    proc = subprocess.run(["git", *args], cwd=cwd, input=input, capture_output=True)
    if check and proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr.decode()}")
    return proc.stdout.decode("utf-8", "surrogateescape").strip()


def write(root: Path, rel: str, data: str | bytes, mode: int | None = None) -> None:
    p = root / rel
    p.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(data, str):
        data = data.encode()
    p.write_bytes(data)
    if mode is not None:
        os.chmod(p, mode)


def commit_all(root: Path, message: str) -> str:
    git(root, "add", "-A")
    git(root, "commit", "-q", "--no-verify", "-m", message)
    return git(root, "rev-parse", "HEAD")


def pq(root: Path, *args: str, ok: bool = True) -> Result:
    runner = CliRunner()
    old = os.getcwd()
    os.chdir(root)
    try:
        result = runner.invoke(main, list(args), catch_exceptions=False)
    finally:
        os.chdir(old)
    if ok and result.exit_code != 0:
        raise AssertionError(f"pq {' '.join(args)} exited {result.exit_code}:\n{result.output}")
    return result


def make_upstream(root: Path, files: dict[str, str] | None = None) -> Path:
    """An upstream repository with two commits on main."""
    root.mkdir(parents=True, exist_ok=True)
    git(root, "init", "-q", "-b", "main")
    files = files or {
        "setup.py": "from torch.utils import cpp_extension\n\nsetup(name='x')\n",
        "csrc/ops.cc": "#include <torch/extension.h>\n\nint f() { return 1; }\n",
        "pkg/__init__.py": "import torch\n\n\ndef op(x):\n    return x\n",
        "README.md": "upstream\n",
    }
    for rel, text in files.items():
        write(root, rel, text)
    commit_all(root, "upstream: initial")
    write(root, "pkg/util.py", "def helper():\n    return 2\n")
    commit_all(root, "upstream: add util")
    return root


def make_fork(tmp: Path, upstream: Path | None = None) -> Path:
    """A clone of the upstream with remote `upstream` and a branch `paddle`."""
    upstream = upstream or make_upstream(tmp / "upstream")
    fork = tmp / "fork"
    git(tmp, "clone", "-q", "-o", "upstream", str(upstream), str(fork))
    git(fork, "checkout", "-q", "-b", "paddle")
    return fork


def series_fork(tmp: Path, *commits: tuple[str, dict[str, str]]) -> Path:
    """A fork carrying one commit per (subject, files), its series made by
    `pq init --commit`."""
    fork = make_fork(tmp)
    for subject, files in commits:
        for rel, text in files.items():
            write(fork, rel, text)
        commit_all(fork, subject)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    return fork


def one_patch_fork(tmp: Path, patch: dict[str, str], upstream: dict[str, str],
                   subject: str = "python-glue: the patch") -> Path:
    """A fork whose committed series has one patch (`patch`'s files), and an upstream
    moved since by one commit (`upstream`'s files), fetched."""
    fork = series_fork(tmp, (subject, patch))
    for rel, text in upstream.items():
        write(tmp / "upstream", rel, text)
    commit_all(tmp / "upstream", "upstream: moved on")
    git(fork, "fetch", "-q", "upstream")
    return fork


def origin_with_hook(tmp_path: Path, fork: Path) -> Path:
    """A bare `origin` for the fork, and pq's pre-push hook installed; the remote's path."""
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(fork, "remote", "add", "origin", str(remote))
    pq(fork, "hook", "install")
    return remote


def worktree_files(root: Path) -> dict[str, bytes]:
    """Every file of the working tree outside .git, byte for byte."""
    files = {}
    for p in sorted(root.rglob("*")):
        if ".git" in p.relative_to(root).parts or not p.is_file():
            continue
        files[p.relative_to(root).as_posix()] = p.read_bytes()
    return files


def tree_without_queue(root: Path, rev: str) -> dict[str, str]:
    out = git(root, "ls-tree", "-r", "--full-tree", rev)
    entries = {}
    for line in out.splitlines():
        meta, path = line.split("\t", 1)
        if path == "series.yaml" or path.startswith(("patches/", "mre/", ".pq/")):
            continue
        entries[path] = meta
    return entries


def snapshot_queue(root: Path) -> dict[str, bytes]:
    files = {"series.yaml": (root / "series.yaml").read_bytes()}
    for p in sorted((root / "patches").iterdir()):
        files[f"patches/{p.name}"] = p.read_bytes()
    return files


def migrate(fork: Path) -> str:
    """A migration touching every kind of change git can carry; returns the tip."""
    write(fork, "setup.py", "import paddle\npaddle.enable_compat()\n"
          "from torch.utils import cpp_extension\n\nsetup(name='x')\n")
    commit_all(fork, "build: enable compat in setup.py\n\nThe build entry point.")
    write(fork, "assets/blob.bin", bytes(range(256)) * 4)
    write(fork, "tools/run.sh", "#!/bin/sh\necho hi\n", mode=0o755)
    commit_all(fork, "python-glue: binary asset and an executable script")
    os.chmod(fork / "tools/run.sh", 0o644)
    git(fork, "mv", "pkg/util.py", "pkg/helpers.py")
    git(fork, "rm", "-q", "README.md")
    commit_all(fork, "python-glue: rename util, drop readme, chmod")
    os.symlink("helpers.py", fork / "pkg/alias.py")
    write(fork, "data/latin1.txt", "caf\xe9 cr\xe8me\n".encode("latin-1"))
    commit_all(fork, "Ünïcode subject: symlink and latin-1 text")
    write(fork, "assets/blob.bin", bytes(reversed(range(256))) * 4)
    write(fork, "csrc/ops.cc", "#include <torch/extension.h>\n#include <torch/library.h>\n\n"
          "int f() { return 1; }\n")
    env_author = ["-c", "user.name=Jörg Ümlaut"]
    git(fork, "add", "-A")
    git(fork, *env_author, "commit", "-q", "--author", "Jörg Ümlaut <j@example.com>",
        "-m", "[cpp-compat] include torch/library.h\n\nBody line one.\n---\nnot a separator\n\n"
        "Signed-off-by: Jörg Ümlaut <j@example.com>")
    return git(fork, "rev-parse", "HEAD")


def terminate_pq_once_started(root: Path, args: list[str], pidfile: Path,
                              signum: int | None = None, ignored: bool = False) -> int:
    """Run the `pq` console script with `args` in `root` until a command it starts writes
    its pid to `pidfile`, then send pq `signum` (SIGTERM), which pq starts out ignoring
    where `ignored` (as under `nohup`); pq's exit code (that process's pid is in
    `pidfile`)."""
    import signal
    import sys
    import time

    sent = signal.SIGTERM if signum is None else signum
    proc = subprocess.Popen([str(Path(sys.executable).parent / "pq"), *args], cwd=root,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                            preexec_fn=(lambda: signal.signal(sent, signal.SIG_IGN))
                            if ignored else None)
    deadline = time.monotonic() + 30
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.05)
    proc.send_signal(sent)
    return proc.wait(timeout=60)


_FLICKER = """import os, sys
while True:
    try:
        os.mkdir(sys.argv[1])
        os.rmdir(sys.argv[1])
    except OSError:
        pass
"""


@contextlib.contextmanager
def flickering(folder: Path) -> Iterator[None]:
    """While the block runs, another process makes `folder` and takes it again as fast as
    it can (another git or pq in the same repository); after it, that process has ended
    (one process: no system call of it is still under way) and `folder` is gone."""
    import sys

    proc = subprocess.Popen([sys.executable, "-c", _FLICKER, str(folder)])
    try:
        yield
    finally:
        proc.kill()
        proc.wait()
        with contextlib.suppress(FileNotFoundError):
            folder.rmdir()
