"""Signed commits: with commit.gpgSign on, the commits pq puts on a branch are signed (as
git rebase and git am sign theirs), are otherwise the very commits pq writes unsigned, and
a signer that fails stops the command with one line, the branch untouched."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, migrate, pq, write

pytestmark = pytest.mark.skipif(shutil.which("ssh-keygen") is None, reason="needs ssh-keygen")


def _sign_with_ssh(repo: Path, tmp_path: Path) -> None:
    key = tmp_path / "signing-key"
    if not key.exists():
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", "pq-test",
                        "-f", str(key)], check=True, capture_output=True)
        pub = (tmp_path / "signing-key.pub").read_text().split()
        (tmp_path / "allowed").write_text(f"committer@example.com {pub[0]} {pub[1]}\n")
    for key_, value in (("gpg.format", "ssh"), ("user.signingKey", str(key)),
                        ("gpg.ssh.allowedSignersFile", str(tmp_path / "allowed")),
                        ("commit.gpgSign", "true")):
        git(repo, "config", key_, value)


def _fork_needing_a_rebase(tmp_path: Path, author: bytes | None = None) -> tuple[Path, Path]:
    """A fork of two patches, `pq init`-ed, whose upstream moved; `author`: the second
    patch's author line, written as is."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\npaddle.enable_compat()\n"
          "from torch.utils import cpp_extension\n\nsetup(name='x')\n")
    commit_all(fork, "build: enable compat")
    write(fork, "pkg/__init__.py", "import torch\n\n\ndef op(x):\n    return x + 0\n")
    commit_all(fork, "python-glue: op adds zero")
    if author is not None:
        raw = re.sub(rb"^author [^\n]*", b"author " + author, _unsigned(fork, "HEAD"),
                     count=1, flags=re.M)
        odd = subprocess.run(["git", "hash-object", "--literally", "-t", "commit", "-w",
                              "--stdin"],
                             cwd=fork, input=raw, check=True, capture_output=True)
        git(fork, "reset", "-q", "--hard", odd.stdout.decode().strip())
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    up = tmp_path / "upstream"
    write(up, "README.md", "upstream, moved\n")
    commit_all(up, "upstream: readme")
    git(fork, "fetch", "-q", "upstream")
    return fork, up


def _unsigned(repo: Path, rev: str) -> bytes:
    raw = subprocess.run(["git", "cat-file", "commit", rev], cwd=repo, check=True,
                         capture_output=True).stdout
    return re.sub(rb"^gpgsig [^\n]*\n(?: [^\n]*\n)*", b"", raw, count=1, flags=re.M)


def _signatures(repo: Path, *revs: str) -> list[str]:
    return git(repo, "log", "--format=%G?", *revs).split()


def test_rebase_signs_each_commit_it_writes_and_changes_nothing_else(tmp_path: Path) -> None:
    fork, _ = _fork_needing_a_rebase(tmp_path)
    plain = tmp_path / "plain"
    shutil.copytree(fork, plain, symlinks=True)
    _sign_with_ssh(fork, tmp_path)
    pq(fork, "rebase", "upstream/main")
    pq(plain, "rebase", "upstream/main")
    # the two patches and the bookkeeping commit, each signed by the configured key
    assert _signatures(fork, "upstream/main..paddle") == ["G", "G", "G"]
    assert _signatures(plain, "upstream/main..paddle") == ["N", "N", "N"]
    mine = git(fork, "rev-list", "upstream/main..paddle").split()
    theirs = git(plain, "rev-list", "upstream/main..paddle").split()
    # without their signatures, the commits are field for field those of the unsigned run,
    # but for their parents (signed commits have other ids)
    for a, b in zip(mine, theirs, strict=True):
        strip = re.compile(rb"^parent [0-9a-f]+\n", re.M)
        assert strip.sub(b"", _unsigned(fork, a)) == strip.sub(b"", _unsigned(plain, b))
    assert git(fork, "rev-parse", "paddle^{tree}") == git(plain, "rev-parse", "paddle^{tree}")
    # the operation log's own commits are pq's bookkeeping, never signed
    assert set(_signatures(fork, "-3", "--first-parent", "refs/pq/oplog")) == {"N"}


def test_apply_signs_the_branch_it_builds(tmp_path: Path) -> None:
    fork, _ = _fork_needing_a_rebase(tmp_path)
    _sign_with_ssh(fork, tmp_path)
    pq(fork, "apply", "--branch", "rebuilt")
    assert set(_signatures(fork, "upstream/main~1..rebuilt")) == {"G"}


def test_a_failing_signer_stops_the_rebase_with_one_line_and_the_branch_as_it_was(
        tmp_path: Path) -> None:
    fork, _ = _fork_needing_a_rebase(tmp_path)
    tip = git(fork, "rev-parse", "paddle")
    git(fork, "config", "commit.gpgSign", "true")
    git(fork, "config", "gpg.program", "false")
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code == 2
    lines = result.output.strip().splitlines()
    assert len(lines) == 1 and "could not sign the commit 'build: enable compat'" in lines[0]
    assert "commit.gpgSign" in lines[0]
    assert git(fork, "rev-parse", "paddle") == tip
    assert git(fork, "status", "--porcelain") == ""
    # the pre-push checks build their throwaway stack unsigned: they still pass
    assert pq(fork, "check").exit_code == 0


def test_commit_gpgsign_that_is_no_boolean_is_named(tmp_path: Path) -> None:
    fork, _ = _fork_needing_a_rebase(tmp_path)
    git(fork, "config", "commit.gpgSign", "sometimes")
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code == 2
    assert "commit.gpgSign is not a boolean" in result.output


def test_a_commit_git_would_change_while_signing_it_is_refused_not_rewritten(
        tmp_path: Path) -> None:
    # a patch commit whose author name ends in a comma: git drops it from a name it is
    # given (a dot too, before git 2.42)
    fork, _ = _fork_needing_a_rebase(tmp_path, b"A U Thor, <author@example.com> 1 +0000")
    tip = git(fork, "rev-parse", "paddle")
    _sign_with_ssh(fork, tmp_path)
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code == 2
    line, = result.output.strip().splitlines()
    assert "signing the commit 'python-glue: op adds zero', git changes it" in line
    assert "GIT_CONFIG_VALUE_0=false" in line
    assert git(fork, "rev-parse", "paddle") == tip


def test_import_signs_the_branch_it_writes_and_a_dry_run_signs_nothing(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\npaddle.enable_compat()\n")
    commit_all(fork, "build: enable compat")
    git(fork, "config", "commit.gpgSign", "true")
    git(fork, "config", "gpg.program", "false")  # a dry run must not even ask
    for extra in ([], ["--keep-commits"]):
        pq(fork, "import", "--upstream", "upstream/main", "--dry-run", *extra)
    _sign_with_ssh(fork, tmp_path)
    pq(fork, "import", "--upstream", "upstream/main")
    assert set(_signatures(fork, "upstream/main..paddle")) == {"G"}


@pytest.mark.parametrize(("author", "why"), [
    (b"A U Thor <author@example.com> 1700000000 -0000", "differ from the original"),
    (b" <author@example.com> 1700000000 +0000", "git refuses its identity or date"),
])
def test_an_identity_git_rewrites_or_refuses_is_named_not_blamed_on_the_signer(
        tmp_path: Path, author: bytes, why: str) -> None:
    """`git commit-tree` formats the identity it is given (`-0000` becomes `+0000`, an empty
    name is refused): the refusal says so and how to go on, not that the key is wrong."""
    fork, _ = _fork_needing_a_rebase(tmp_path, author)
    _sign_with_ssh(fork, tmp_path)
    result = pq(fork, "rebase", "upstream/main", ok=False)
    assert result.exit_code == 2
    line, = result.output.strip().splitlines()
    assert "signing the commit 'python-glue: op adds zero', git changes it" in line
    assert why in line and "commit.gpgSign" in line and "user.signingKey" not in line


def test_an_encoding_header_naming_utf8_is_dropped_as_git_rebase_drops_it(
        tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "build: enable compat")
    raw = _unsigned(fork, "HEAD").replace(b"\n\nbuild:", b"\nencoding UTF-8\n\nbuild:")
    odd = subprocess.run(["git", "hash-object", "--literally", "-t", "commit", "-w",
                          "--stdin"], cwd=fork,
                         input=raw, check=True, capture_output=True).stdout.decode().strip()
    git(fork, "reset", "-q", "--hard", odd)
    pq(fork, "init", "--upstream", "upstream/main")
    _sign_with_ssh(fork, tmp_path)
    pq(fork, "split", "patches/0001-build-enable-compat.patch", "--by-layer", ok=False)
    pq(fork, "apply", "--branch", "signed")
    assert set(_signatures(fork, "upstream/main..signed")) == {"G"}


def test_init_commit_that_cannot_sign_names_a_next_step_that_works(tmp_path: Path) -> None:
    """`pq init --commit` wrote the series, then git could not sign its commit: the fix
    named commits what was written (running `pq init --commit` again is refused)."""
    fork = make_fork(tmp_path)
    migrate(fork)
    git(fork, "config", "commit.gpgSign", "true")
    git(fork, "config", "gpg.program", "false")
    result = pq(fork, "init", "--upstream", "upstream/main", "--commit", ok=False)
    assert result.exit_code == 2
    assert "`pq export --commit` commits the series.yaml and patches/" in result.output
    git(fork, "config", "commit.gpgSign", "false")
    assert "committed as" in pq(fork, "export", "--commit").output
    assert git(fork, "status", "--porcelain") == ""
    done = pq(fork, "init", "--upstream", "upstream/main", ok=False)  # nothing to commit
    assert done.exit_code == 2 and "already has a series" in done.output
