"""Every command on a fork whose commits carry hostile content, compared with plain git.

One fork holds, in its patch commits, the authors, messages and files that broke tools
before: a comma and umlauts in a name, a non-ASCII e-mail address, an empty address,
non-UTF-8 names and subjects (with and without an `encoding` header), CRLF messages,
trailing spaces, two-line subjects, encoded-word look-alikes, a `---` + `diff --git`
inside a message, an empty commit, binary and CRLF files, a non-UTF-8 file name, a file
named `docs/notes .git`, a link and a mode change. init, series, export, apply, check, the pre-push hook, audit and
rebase each run on it; the results are compared with `git rebase` / the original commits.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, make_upstream, origin_with_hook, pq, write

NAME_LATIN1 = "Jos\xe9 Pe\xf1a".encode("latin-1")


def raw_commit(repo: Path, message: bytes, *, author: tuple[bytes, bytes] | None = None,
               allow_empty: bool = False, encoding: str | None = None) -> None:
    """`git commit` of the index with exact message bytes and author."""
    (repo / ".git" / "pq-msg").write_bytes(message)
    env = dict(os.environb)
    if author is not None:
        env[b"GIT_AUTHOR_NAME"], env[b"GIT_AUTHOR_EMAIL"] = author
    args = ["git", "commit", "-q", "--no-verify", "--cleanup=verbatim", "-F", ".git/pq-msg"]
    if allow_empty:
        args.append("--allow-empty")
    if encoding:
        args[1:1] = ["-c", f"i18n.commitEncoding={encoding}"]
    subprocess.run(args, cwd=repo, env=env, check=True, capture_output=True)
    (repo / ".git" / "pq-msg").unlink()


def hostile_fork(tmp_path: Path) -> Path:
    up = make_upstream(tmp_path / "upstream", {
        "setup.py": "from torch.utils import cpp_extension\n\nsetup(name='x')\n",
        "csrc/ops.cc": "#include <torch/extension.h>\n\nint f() { return 1; }\n",
        "pkg/__init__.py": "import torch\n\n\ndef op(x):\n    return x\n",
        "data/table.bin": b"\x00\x01\x02binary\xff" * 20,
        "win/crlf.txt": b"line one\r\nline two\r\n",
        "tools/run.sh": "#!/bin/sh\necho run\n",
        "README.md": "upstream\n",
    })
    fork = make_fork(tmp_path, up)
    write(fork, "setup.py", "import paddle\npaddle.enable_compat()\n"
          "from torch.utils import cpp_extension\n\nsetup(name='x')\n")
    git(fork, "add", "-A")
    raw_commit(fork, b"build: enable compat   \n\nTrailing spaces in the subject.\n",
               author=("Müller, Hans".encode(), b"hm@example.de"))
    write(fork, "win/crlf.txt", b"line one\r\nline two (paddle)\r\n")
    git(fork, "add", "-A")
    raw_commit(fork, b"glue: crlf message\r\n\r\nBody with CRLF.\r\n",
               author=("Jörg".encode(), "jörg@exämple.de".encode()))
    write(fork, "data/table.bin", b"\x00\x01\x02paddle\xff" * 20)
    git(fork, "add", "-A")
    raw_commit(fork, b"glue: two-line\nsubject paragraph\n\nBody.\n", author=(b"Nobody", b""))
    (fork / "tools/run.sh").chmod(0o755)
    os.symlink("run.sh", fork / "tools/link")
    git(fork, "add", "-A")
    raw_commit(fork, b"build: caf\xe9 subject in latin-1\n", author=(NAME_LATIN1, b"jp@example.org"))
    write(fork, "pkg/na\xefve.py".encode("latin-1").decode("utf-8", "surrogateescape"),
          "x = 1\n")
    write(fork, "docs/notes .git", "a file, not a repository\n")  # a space, then `.git`
    git(fork, "add", "-A")
    raw_commit(fork, "glue: ISO-8859-1 message, caf\xe9\n".encode("latin-1"),
               author=(NAME_LATIN1, b"jp@example.org"), encoding="ISO-8859-1")
    write(fork, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    return x  # glue\n")
    git(fork, "add", "-A")
    raw_commit(fork, b"glue: literal =?UTF-8?B?SGVsbG8=?= in a subject\n")
    write(fork, "csrc/ops.cc", "#include <torch/extension.h>\n#include <torch/library.h>\n\n"
          "int f() { return 1; }\n")
    git(fork, "add", "-A")
    raw_commit(fork, b"cpp-compat: include torch/library.h\n\nA message that quotes a diff:\n"
               b"---\ndiff --git a/x b/x\n--- a/x\n+++ b/x\n\nSigned-off-by: A <a@b.c>\n\n")
    raw_commit(fork, b"glue: an empty commit\n", allow_empty=True)
    return fork


def move_upstream(fork: Path) -> None:
    up = fork.parent / "upstream"
    write(up, "LICENSE", "MIT\n")
    commit_all(up, "upstream: license")
    write(up, "pkg/__init__.py", "import torch\nimport os\n\n\ndef op(x):\n    return x\n")
    commit_all(up, "upstream: import os")
    git(fork, "fetch", "-q", "upstream")


def commits(repo: Path, range_: str) -> list[tuple[bytes, bytes, bytes]]:
    """(author line, encoding header, message) of each commit, oldest first, without pq's
    trailer; bookkeeping commits (only queue files) left out."""
    out = []
    for rev in git(repo, "rev-list", "--reverse", range_).split():
        files = git(repo, "diff-tree", "--no-commit-id", "-r", "--name-only", rev).split("\n")
        if files != [""] and all(f == "series.yaml" or f.startswith("patches/") for f in files):
            continue
        raw = subprocess.run(["git", "cat-file", "commit", rev], cwd=repo, check=True,
                             capture_output=True).stdout
        head, _, message = raw.partition(b"\n\n")
        fields = dict(ln.split(b" ", 1) for ln in head.split(b"\n"))
        message = b"\n".join(ln for ln in message.split(b"\n")
                             if not ln.startswith(b"Pq-Patch: "))
        out.append((fields[b"author"], fields.get(b"encoding", b""), message.rstrip(b"\n")))
    return out


def no_crash(result_output: str) -> None:
    assert "internal error" not in result_output and "Traceback" not in result_output


@pytest.fixture(params=["plain", "autocrlf"])
def fork(tmp_path: Path, request: pytest.FixtureRequest) -> Path:
    """The hostile fork; once as it is, once as Git for Windows checks it out (CRLF)."""
    repo = hostile_fork(tmp_path)
    if request.param == "autocrlf":
        git(repo, "config", "core.autocrlf", "true")
        for path in git(repo, "ls-files", "-z").split("\0"):
            if path and not (repo / path).is_symlink():
                (repo / path).unlink()
        git(repo, "checkout", "-q", "--", ".")
        assert (repo / "setup.py").read_bytes().count(b"\r\n") == 5
    return repo


def test_every_command_on_hostile_commits(fork: Path, tmp_path: Path) -> None:
    original = commits(fork, "upstream/main..HEAD")
    assert len(original) == 8
    no_crash(pq(fork, "init", "--upstream", "upstream/main", "--commit").output)
    assert len(list((fork / "patches").iterdir())) == 8
    no_crash(pq(fork, "series").output)
    listed = json.loads(pq(fork, "series", "--json").output)
    assert len(listed["patches"]) == 8
    before = {p.name: p.read_bytes() for p in (fork / "patches").iterdir()}
    pq(fork, "export")
    assert {p.name: p.read_bytes() for p in (fork / "patches").iterdir()} == before
    assert git(fork, "status", "--porcelain") == ""
    # apply materialises the same commits: authors, encodings and messages byte for byte
    pq(fork, "apply", "-b", "applied")
    assert commits(fork, "upstream/main..applied") == original
    assert git(fork, "rev-parse", "applied^{tree}") == git(fork, "rev-parse", "paddle^{tree}")
    git(fork, "checkout", "-q", "paddle")
    assert pq(fork, "check").exit_code == 0
    # the pre-push hook accepts the branch
    origin_with_hook(tmp_path, fork)
    push = subprocess.run(["git", "push", "-q", "origin", "paddle"], cwd=fork,
                          capture_output=True, text=True)
    assert push.returncode == 0, push.stderr
    audit = pq(fork, "audit", "workarounds", "--json", ok=False)
    no_crash(audit.output)
    assert audit.exit_code in (0, 1)
    json.loads(audit.output)


def test_rebase_of_hostile_commits_agrees_with_git(fork: Path, tmp_path: Path) -> None:
    copy = tmp_path / "git-copy"
    shutil.copytree(fork, copy, symlinks=True)
    move_upstream(fork)
    git(copy, "fetch", "-q", "upstream")
    subprocess.run(["git", "rebase", "-q", "upstream/main"], cwd=copy, check=True,
                   capture_output=True)
    expected = commits(copy, "upstream/main..HEAD")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    result = pq(fork, "rebase", "upstream/main")
    no_crash(result.output)
    assert commits(fork, "upstream/main..HEAD") == expected
    ls = git(fork, "ls-tree", "-r", "HEAD")
    assert [ln for ln in ls.splitlines() if "\tseries.yaml" not in ln
            and "\tpatches/" not in ln] == git(copy, "ls-tree", "-r", "HEAD").splitlines()
    check = pq(fork, "check", ok=False)
    assert check.exit_code == 0, check.output
