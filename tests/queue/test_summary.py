"""series.yaml's summary of a commit: its subject as `git log` shows it, whatever bytes
the commit holds."""

from __future__ import annotations

from pathlib import Path

from gitrepo import git, make_fork, pq, write

from pq.git.objects import summary_of


def test_summary_reads_the_declared_encoding() -> None:
    latin1 = "glue: café".encode("latin-1").decode("utf-8", "surrogateescape")
    assert summary_of(latin1 + "\n\nbody", "ISO-8859-1") == "glue: café"
    assert summary_of(latin1, None) == "glue: caf\ufffd"  # undeclared: not guessed
    assert summary_of(latin1, "no-such-codec") == "glue: caf\ufffd"
    assert summary_of("glue:  two\tspaces\n") == "glue: two spaces"


def test_init_of_a_latin1_commit(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "pkg/__init__.py", "import torch  # café\n")
    git(fork, "add", "-A")
    git(fork, "-c", "i18n.commitEncoding=ISO-8859-1", "commit", "-q", "-F", "-",
        input="glue: café latin1\n".encode("latin-1"))
    assert git(fork, "log", "-1", "--format=%s") == "glue: café latin1"
    pq(fork, "init", "--upstream", "upstream/main")
    assert "summary: 'glue: café latin1'" in (fork / "series.yaml").read_text()
