"""The manual is executable (issue 18): every example session in README.md and docs/*.md
runs against real repositories (tests/transcripts.py says how, and why not prysk), every
`--help` option is documented and every documented option exists, and pq leaves no
temporary folders behind."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import click
import pytest
import transcripts
from gitrepo import commit_all, git, series_fork, write

from pq.cli import main
from pq.git.repo import Git

BLOCKS = transcripts.all_blocks()


def test_the_docs_have_their_sessions() -> None:
    assert len(BLOCKS) >= 15, [b.id for b in BLOCKS]
    assert all(b.scenario in transcripts.SCENARIOS or b.manual for b in BLOCKS)


@pytest.mark.parametrize("block", BLOCKS, ids=[b.id for b in BLOCKS])
def test_documented_session(block: transcripts.Block) -> None:
    if block.manual:
        pytest.skip(f"not run: {block.manual}")
    if block.needs and not transcripts.compat_available():
        pytest.skip(f"needs {block.needs} (torch and paddle)")
    diff = transcripts.check_block(block)
    assert not diff, ("the doc no longer matches what pq prints (`make docs` rewrites it):\n"
                      + diff)


# -- the runner itself can fail, and updates deterministically -------------------------------

DOC = """# t

<!-- session: three-patches -->
```
$ pq series
base 0123456789ab (upstream/main): 2 patches
   1  0001-build-enable-compat.patch        build        1 file +1 -1
   2  0002-python-glue-scoped-compat.patch  python-glue  1 file +1 -1
$ echo $?
0
$ pq undo --op 99
...
```
"""


def _doc(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "doc.md"
    path.write_text(text)
    return path


def test_a_session_that_matches_passes(tmp_path: Path) -> None:
    [block] = transcripts.parse(_doc(tmp_path, DOC))
    assert transcripts.check_block(block) == ""


def test_a_changed_output_fails_with_a_unified_diff_and_update_fixes_it(tmp_path: Path
                                                                       ) -> None:
    path = _doc(tmp_path, DOC.replace("2 patches", "7 patches").replace("\n0\n", "\n3\n"))
    [block] = transcripts.parse(path)
    diff = transcripts.check_block(block)
    assert "-base 0123456789ab (upstream/main): 7 patches" in diff, diff
    assert "+0" in diff and "-3" in diff and diff.startswith("---"), diff
    assert transcripts.update(path) == 1
    first = path.read_bytes()
    assert b": 2 patches" in first and b"\n$ echo $?\n0\n" in first
    assert transcripts.update(path) == 0
    assert path.read_bytes() == first


def test_marker_errors_are_reported(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="unknown session option"):
        transcripts.parse(_doc(tmp_path, "<!-- session: x bogus -->\n```\n$ true\n```\n"))
    with pytest.raises(ValueError, match="must precede a code block"):
        transcripts.parse(_doc(tmp_path, "<!-- session: x -->\ntext\n"))


def test_normalisation() -> None:
    n = transcripts.normalise
    assert n("pq: paddle 2f3c80d322d2: ok (7 checks passed, 0.6 s)") == \
        n("pq: paddle 6b38cc1fecc3: ok (7 checks passed, 12 s)")
    assert n("    3  2026-11-30T05:30:54+0000  done") == n("    3  2027-01-02T00:00:00+0000  done")
    assert n("at /tmp/adopt/fork/.git") == n("at /tmp/doc/fork/.git")
    assert n("0001-build-enable-compat.patch") == "0001-build-enable-compat.patch"
    assert n("added a decade") == "added a decade"


# -- options: --help against the docs ----------------------------------------------------------


def _commands() -> dict[str, click.Command]:
    """Every command by its path ('rebase', 'audit workarounds', 'hook install', ...)."""
    out: dict[str, click.Command] = {}

    def walk(group: click.Group, ctx: click.Context, prefix: str) -> None:
        for name in group.list_commands(ctx):
            cmd = group.get_command(ctx, name)
            assert cmd is not None, name
            path = f"{prefix}{name}"
            out[path] = cmd
            if isinstance(cmd, click.Group):
                walk(cmd, click.Context(cmd, parent=ctx, info_name=name), path + " ")

    assert isinstance(main, click.Group)
    walk(main, click.Context(main, info_name="pq"), "")
    return out


def _flags(cmd: click.Command) -> set[str]:
    return {o for p in cmd.params if isinstance(p, click.Option)
            for o in (*p.opts, *p.secondary_opts)}


def _doc_text() -> str:
    return "\n".join(p.read_text() for p in transcripts.DOCS)


def test_every_help_option_is_documented() -> None:
    text = _doc_text()
    missing = []
    for path, cmd in sorted(_commands().items()):
        for p in cmd.params:
            if not isinstance(p, click.Option) or p.hidden:
                continue
            longs = [o for o in (*p.opts, *p.secondary_opts) if o.startswith("--")]
            if longs and not any(re.search(re.escape(o) + r"(?![\w-])", text) for o in longs):
                missing.append(f"pq {path} {'/'.join(longs)}")
    assert not missing, "options in --help that README.md and docs/*.md never mention:\n" \
        + "\n".join(missing)


PQ_CALL = re.compile(r"(?:^|[`$(]\s*|&&\s*|^\s*)pq ((?:-C \S+ )?[a-z][^`\n|;&#)]*)", re.M)


def test_every_documented_option_exists() -> None:
    commands = _commands()
    root_flags = _flags(main) | {"--help"}
    wrong = []
    for m in PQ_CALL.finditer(_doc_text()):
        words = [w.strip("[]().,:'\"") for w in m.group(1).split()]
        if words[:1] == ["-C"]:
            words = words[2:]
        path = ""
        for w in words:
            if f"{path} {w}".strip() in commands:
                path = f"{path} {w}".strip()
            else:
                break
        if not path:
            continue
        allowed = _flags(commands[path]) | root_flags
        for w in words:
            flag = w.split("=")[0]
            if re.fullmatch(r"--[a-z][a-z-]*", flag) and flag not in allowed:
                wrong.append(f"`pq {m.group(1).strip()}`: pq {path} has no {flag}")
    assert not wrong, "documented options that do not exist:\n" + "\n".join(sorted(set(wrong)))


# -- no temporary folders left behind -----------------------------------------------------------


def _fork_with_series(tmp_path: Path) -> Path:
    return series_fork(tmp_path, ("build: enable compat",
                                  {"setup.py": "import paddle\nsetup(name='x')\n"}))


def test_temp_indexes_live_in_the_repository_and_go_away(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch
                                                        ) -> None:
    """A pq killed inside a temp index (test_faults) cannot leave a folder in /tmp: the
    index lives under .git/pq/tmp, and is removed on exit, also when read-tree fails."""
    fork = _fork_with_series(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    g = Git.open(fork)
    with g.temp_index(git(fork, "rev-parse", "HEAD^{tree}")) as env:
        index = Path(env["GIT_INDEX_FILE"])
        assert index.parent.parent == g.pq_dir() / "tmp" and index.is_file()
    assert not index.parent.exists()
    index_of_a_bad_tree = g.temp_index("0" * 40)
    with pytest.raises(Exception):  # noqa: B017,PT011  git's error, whatever its type
        index_of_a_bad_tree.__enter__()
    assert list(scratch.iterdir()) == []
    assert not list((g.pq_dir() / "tmp").glob("index-*"))


def test_temp_indexes_of_a_killed_pq_are_removed(tmp_path: Path,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """pq killed inside a temp index leaves it in .git/pq/tmp; the next pq removes it."""
    fork = _fork_with_series(tmp_path)
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setenv("TMPDIR", str(scratch))
    dead = subprocess.Popen(["true"])
    dead.wait()
    stale = fork / ".git" / "pq" / "tmp" / f"index-{dead.pid}-x1"
    stale.mkdir(parents=True)
    (stale / "index").write_bytes(b"junk")
    write(fork, "pkg/util.py", "def helper():\n    return 3\n")
    commit_all(fork, "glue: helper")
    subprocess.run(["pq", "export", "--commit"], cwd=fork, check=True, capture_output=True,
                   env={**os.environ, "PATH": transcripts.hermetic_env(tmp_path / "h")["PATH"]})
    subprocess.run(["pq", "apply", "--onto", "upstream/main", "--branch", "re"], cwd=fork,
                   check=True, capture_output=True,
                   env={**os.environ,
                        "PATH": transcripts.hermetic_env(tmp_path / "h")["PATH"]})
    assert not stale.exists()
    assert [p.name for p in scratch.iterdir()] == []
    assert git(fork, "status", "--porcelain") == ""
    shutil.rmtree(scratch)
