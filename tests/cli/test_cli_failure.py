"""The one error handler (`pq.cli.failure`): what each exception becomes, and that the
hook's fast path (`python -m pq hook run`, no click) and the click CLI say the same."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import make_fork

from pq.cli.failure import failure_of
from pq.errors import ConfigError, GitError, OperationFailed
from pq.quoting import json_text


def test_pq_errors_keep_their_message_hint_and_exit_code() -> None:
    f = failure_of(ConfigError("bad key", path="series.yaml", line=3, hint="remove it"))
    assert f is not None and f.exit_code == 2
    assert f.line() == "pq: error: series.yaml:3: bad key (remove it)"
    assert f.data()["error"] == {"message": "series.yaml:3: bad key", "path": "series.yaml",
                                 "line": 3, "column": None, "hint": "remove it",
                                 "exit_code": 2}
    conflict = failure_of(OperationFailed("conflict in a.py"))
    assert conflict is not None and conflict.exit_code == 1
    git = failure_of(GitError("`git x` failed"))
    assert git is not None and (git.exit_code, git.line()) == (2, "pq: error: `git x` failed")


def test_what_the_file_system_refuses_is_named_not_reported_as_a_bug(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PQ_DEBUG", raising=False)
    denied = failure_of(PermissionError(13, "Permission denied", "/f/patches"))
    assert denied is not None and denied.exit_code == 2
    assert denied.line() == ("pq: error: /f/patches: Permission denied (check the permissions "
                             "of /f/patches and of its folder, then run the command again)")
    full = failure_of(OSError(28, "No space left on device", "/f/.git/objects/ab"))
    assert full is not None and "free some disk space" in str(full.line())
    nameless = failure_of(PermissionError(13, "Permission denied"))  # no file: a bug still
    assert nameless is not None and "internal error" in str(nameless.line())
    full_anywhere = failure_of(OSError(28, "No space left on device"))  # a full disk is one
    assert full_anywhere is not None and full_anywhere.line() == (
        "pq: error: No space left on device (free some disk space, then run the command "
        "again)")


@pytest.mark.skipif(not hasattr(os, "geteuid") or os.geteuid() == 0,
                    reason="root writes into a read-only folder")
def test_a_read_only_patches_folder_is_named(tmp_path: Path) -> None:
    from gitrepo import commit_all, pq, write

    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "enable compat")
    pq(fork, "init", "--upstream", "upstream/main")
    (fork / "series.yaml").write_text((fork / "series.yaml").read_text().replace(
        "summary: ", "summary: Now "))
    os.chmod(fork / "patches", 0o555)
    try:
        result = pq(fork, "export", ok=False)
    finally:
        os.chmod(fork / "patches", 0o755)
    assert result.exit_code == 2
    assert f"pq: error: {fork / 'patches'}: Permission denied" in result.output


def test_a_write_the_disk_refuses_names_the_file(tmp_path: Path,
                                                monkeypatch: pytest.MonkeyPatch) -> None:
    """The error of a full disk carries no file name; write_atomic gives it the file's."""
    import errno

    from pq.atomic import write_atomic

    def full(_fd: int) -> None:
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)
    target = tmp_path / "series.yaml"
    with pytest.raises(OSError) as info:
        write_atomic(target, b"x\n")
    assert info.value.filename == str(target) and not list(tmp_path.iterdir())
    failure = failure_of(info.value)
    assert failure is not None and failure.line() == (
        f"pq: error: {target}: No space left on device (free some disk space, then run the "
        "command again)")


def test_interrupt_pipe_and_bugs(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("PQ_DEBUG", raising=False)
    stop = failure_of(KeyboardInterrupt())
    assert stop is not None and (stop.exit_code, stop.line()) == (130, "pq: interrupted")
    pipe = failure_of(BrokenPipeError())
    assert pipe is not None and (pipe.exit_code, pipe.line()) == (141, None)
    bug = failure_of(ValueError("first\nsecond"))
    assert bug is not None and bug.exit_code == 2
    assert bug.line() == ("pq: error: internal error: ValueError: first (set PQ_DEBUG=1 for "
                          "the traceback, and please report it)")
    assert failure_of(SystemExit(3)) is None
    monkeypatch.setenv("PQ_DEBUG", "1")
    assert failure_of(ValueError("x")) is None  # re-raised, traceback and all


def test_fast_path_and_click_cli_report_an_error_alike(tmp_path: Path) -> None:
    """`python -m pq hook run R U` takes the fast path; `-C .` first sends the same call
    through click: the one handler gives both the same line and exit code."""
    fork = make_fork(tmp_path)
    outs = []
    for prefix in ([], ["-C", "."]):
        proc = subprocess.run([sys.executable, "-m", "pq", *prefix, "hook", "run", "origin",
                               "url"], cwd=fork, input=b"garbage\n",
                              capture_output=True, check=False)
        outs.append((proc.returncode, proc.stderr.decode()))
    assert outs[0] == outs[1]
    code, err = outs[0]
    assert code == 2 and err.startswith("pq: error: cannot read git's pre-push input line "
                                        "'garbage'")
    assert err.count("\n") == 1


def test_pre_push_input_with_a_sha_that_is_no_object_id_is_refused() -> None:
    from pq.errors import ConfigError
    from pq.push.refs import parse_push_lines

    zero, one = "0" * 40, "1" * 64
    good = parse_push_lines(f"refs/heads/a {one} refs/heads/a {zero}\n".encode())
    assert [(u.local_sha, u.remote_sha) for u in good] == [(one, zero)]
    for bad in (f"refs/heads/a nothex refs/heads/a {zero}", f"refs/heads/a {zero} refs/heads/a "
                "HEAD", f"refs/heads/a {zero[:39]} refs/heads/a {zero}"):
        with pytest.raises(ConfigError, match="cannot read git's pre-push input line"):
            parse_push_lines(bad.encode())


def test_json_output_stays_utf8_with_a_file_name_that_is_not() -> None:
    """A file name's byte that is not UTF-8 (read with surrogateescape) is written as its
    \\u escape: the output encodes as UTF-8, and reads back as the same string."""
    data = {"location": "pkg/na\udcffme.py:2", "message": "café"}
    text = json_text(data)
    assert "café" in text and "\\udcff" in text
    assert json.loads(text.encode("utf-8")) == data


def test_a_file_names_bytes_reach_stderr_as_they_are() -> None:
    """An error line naming a file whose name is not UTF-8 names it with its own bytes (as
    git does), on stderr as on stdout: Python's stderr would write `\\udce9`, a name the
    user cannot `git add`."""
    code = ("import sys; from pq.cli import raw_bytes_out; raw_bytes_out(); "
            "sys.stderr.write('caf\\udce9\\n'); print('caf\\udce9')")
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, check=True,
                          env={**os.environ, "PYTHONIOENCODING": ""})
    assert proc.stderr == b"caf\xe9\n" and proc.stdout == b"caf\xe9\n"


def test_a_file_where_pq_keeps_a_folder_is_named_with_its_fix(tmp_path: Path) -> None:
    from gitrepo import migrate, pq

    fork = make_fork(tmp_path)
    migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    shutil.rmtree(fork / ".git" / "pq" / "tmp", ignore_errors=True)
    (fork / ".git" / "pq" / "tmp").write_text("not a folder\n")
    result = pq(fork, "check", ok=False)
    assert result.exit_code == 2 and "internal error" not in result.output
    assert len(result.output.strip().splitlines()) == 1
    assert ".git/pq/tmp aside" in result.output


def test_the_file_in_the_way_is_named_not_a_folder_below_it(tmp_path: Path) -> None:
    """A file `.git/pq/sealed` where pq writes `.git/pq/sealed/diff/refs`: the error names
    the file to move, not the folder the write wanted."""
    (tmp_path / "sealed").write_text("a file\n")
    wanted = tmp_path / "sealed" / "diff" / "refs"
    with pytest.raises(NotADirectoryError) as caught:
        wanted.mkdir(parents=True, exist_ok=True)
    failure = failure_of(caught.value)
    assert failure is not None
    assert failure.message == (f"{tmp_path / 'sealed'}: Not a directory (a file stands where "
                               f"{tmp_path / 'sealed'} wants a folder: move it aside, then "
                               "run the command again)")


def test_a_folder_where_pq_keeps_its_lock_is_named_with_its_fix(tmp_path: Path) -> None:
    from gitrepo import migrate, pq

    fork = make_fork(tmp_path)
    migrate(fork)
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    lock = fork / ".git" / "pq" / "lock"
    lock.unlink(missing_ok=True)
    lock.mkdir()
    result = pq(fork, "export", ok=False)
    assert result.exit_code != 0 and f"move the folder {lock} aside" in result.output
    lock.rmdir()  # the fix named
    assert pq(fork, "export").exit_code == 0


def test_the_logged_as_failed_clause_follows_a_message_as_one_sentence(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """git's sentence loses its full stop before "; stopped half-way"; a bug with no message
    of its own is named by its type alone."""
    monkeypatch.delenv("PQ_DEBUG", raising=False)
    tail = ("; stopped half-way: operation 7 is logged as failed (`pq log` shows it), and "
            "`pq undo` puts back the state before it")
    refused = GitError("`git reset --hard -q abc` failed: could not write the index.")
    refused.pq_failed_operation = 7  # type: ignore[attr-defined]
    said = failure_of(refused)
    assert said is not None and said.line() == (
        "pq: error: `git reset --hard -q abc` failed: could not write the index" + tail)
    trailing = GitError("git stopped...")
    trailing.pq_failed_operation = 7  # type: ignore[attr-defined]
    assert str(failure_of(trailing).line()).startswith("pq: error: git stopped...; stopped")  # type: ignore[union-attr]
    later = ValueError("\n  the first line with words.\nmore")
    later.pq_failed_operation = 7  # type: ignore[attr-defined]
    assert str(failure_of(later).line()).startswith(  # type: ignore[union-attr]
        "pq: error: internal error: ValueError: the first line with words; stopped")
    for bug in (ValueError(), ValueError("  ")):
        bug.pq_failed_operation = 7  # type: ignore[attr-defined]
        named = failure_of(bug)
        assert named is not None and named.line() == (
            "pq: error: internal error: ValueError" + tail
            + " (set PQ_DEBUG=1 for the traceback, and please report it)")


# A Ctrl-C while `module` is imported (the interrupt lands there: a stand-in for its timing).
_INTERRUPT_IN_IMPORT = """
import builtins, sys
real, module = builtins.__import__, sys.argv[1]
def interrupting(name, *args, **kwargs):
    if name == module:
        builtins.__import__ = real
        raise KeyboardInterrupt
    return real(name, *args, **kwargs)
builtins.__import__ = interrupting
sys.argv = ["pq", *sys.argv[2:]]
from pq.__main__ import main
main()
"""


@pytest.mark.parametrize("module,args", [
    ("click", ["series"]),  # before any command's handler: it was a traceback
    ("pq.oplog.txn", ["series"]),  # in click's main, outside the command: "Aborted!", exit 1
    ("pq.push.hook", ["hook", "run"]),  # the hook's fast path, before its handler
])
def test_a_ctrl_c_as_pq_starts_is_its_one_line_and_exit_130(
        tmp_path: Path, module: str, args: list[str]) -> None:
    proc = subprocess.run([sys.executable, "-c", _INTERRUPT_IN_IMPORT, module, *args],
                          cwd=tmp_path, input=b"", capture_output=True, check=False)
    assert (proc.returncode, proc.stderr.decode().strip()) == (130, "pq: interrupted"), \
        proc.stderr.decode()
