"""A file name in an error: one line, and a command that bash reads back as that name."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

from pq.cli.failure import failure_of
from pq.errors import OperationFailed
from pq.quoting import from_here, shell_args, shown

NAMES = ["plain.txt", "a\nb", "it's here", "-dash", "tab\there", "back\\slash\n", "cr\r",
         "bell\x07", "caf\u00e9", "q\"uote\n'both'",
         # Not UTF-8: printed as is, the byte was U+FFFD on a terminal, and pasted back, no
         # such name.
         b"x\xffy.txt".decode("utf-8", "surrogateescape")]


@pytest.mark.parametrize("name", NAMES)
def test_a_suggested_command_gives_bash_the_name_back(name: str) -> None:
    words = shell_args([name])
    assert "\n" not in words and "\r" not in words and words.isprintable()
    out = subprocess.run(["bash", "-c", f"printf '%s\\0' {words}"], capture_output=True,
                         check=True).stdout
    assert out.split(b"\0")[:-1] == ([b"--"] if name.startswith("-") else []) + [
        os.fsencode(name)]


@pytest.mark.parametrize("name", [":colon.txt", "star*.txt", "q?.txt", "[ab].txt",
                                  "back\\slash", "-dash*", "plain.txt"])
def test_a_suggested_git_add_stages_that_file_alone(tmp_path: Path, name: str) -> None:
    """`git add :colon.txt` read `:` as pathspec magic (it failed), `git add 'star*.txt'`
    as a pattern (it staged starfish.txt too): the name as a pathspec is that file alone."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for each in (name, "starfish.txt", "qa.txt", "a.txt", "-dashed"):
        (tmp_path / each).write_text("x")
    subprocess.run(["bash", "-c", f"git add {shell_args([name], pathspec=True)}"],
                   cwd=tmp_path, check=True)
    staged = subprocess.run(["git", "diff", "--cached", "--name-only", "-z"], cwd=tmp_path,
                            capture_output=True, text=True, check=True).stdout
    assert staged.split("\0")[:-1] == [name]


def test_a_name_is_shown_as_git_quotes_it(tmp_path: Path) -> None:
    assert shown("plain.txt") == "plain.txt" and shown("caf\u00e9") == "caf\u00e9"
    assert shown('q"\t\\\x07\x1b') == '"q\\"\\t\\\\\\a\\033"'
    names = ["a\nb", 'q"\t\\\x07\x1b', "v\x0b\x0c\x08\x7f", "caf\u00e9\n",
             "sp ace\\back.txt", 'x"y', "plain name"]
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    for name in names:
        (tmp_path / name).write_text("x")
    listed = subprocess.run(["git", "-c", "core.quotePath=false", "ls-files", "--others"],
                            cwd=tmp_path, capture_output=True, text=True, check=True).stdout
    assert sorted(listed.splitlines()) == sorted(shown(n) for n in names)


def test_an_error_is_one_line_whatever_it_quotes() -> None:
    failure = failure_of(OperationFailed("git said:\nfatal: no\r\n", hint="fix it"))
    assert failure is not None and failure.line() == (
        "pq: error: git said:\\nfatal: no\\r\\n (fix it)")


def test_paths_from_here_follow_the_folder_git_reads_them_from(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Relative to the current folder inside the working tree; from its top outside it
    (GIT_DIR and GIT_WORK_TREE name the repository: git reads paths from the top then)."""
    root = tmp_path / "fork"
    (root / "pkg").mkdir(parents=True)
    for folder, expected in ((root, "pkg/a.py"), (root / "pkg", "a.py"),
                             (tmp_path, "pkg/a.py")):
        monkeypatch.chdir(folder)
        assert from_here(root, ["pkg/a.py"]) == [expected]
