"""Messages, authors and empty commits, byte for byte: through patch files (`render` and
`parse`, the Pq-Patch trailer), through `pq init`/`pq export`/`pq apply`, and through
`pq rebase` compared with `git rebase` of the same commits; `pq check` passes on each."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from gitrepo import commit_all, git, make_fork, pq, snapshot_queue, worktree_files, write
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from pq.git.objects import Person, as_git_commits
from pq.model import patchfile
from pq.model.patchfile import PatchFile

REPO = Path(__file__).resolve().parents[2]

# -- the property: parse(render(p)) == p ------------------------------------------------

DIFF = (b"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1,2 @@\n a\n-b\n+c\n")
# A removed line `--` at the end of a hunk, then the next file: `---` + `diff --git`.
TRAP = (b"diff --git a/x.py b/x.py\n--- a/x.py\n+++ b/x.py\n@@ -1,2 +1 @@\n a\n---\n"
        b"diff --git a/y.py b/y.py\n--- a/y.py\n+++ b/y.py\n@@ -1 +1 @@\n-d\n+e\n")
PIECES = ["a", " ", "  ", "\n", "\n\n", "\r\n", "\r", "\t", "---", "---\n", "diff --git a/x b/x\n",
          "=?UTF-8?B?w7w=?=", "=?utf-8?q?x?=", "[PATCH] ", "Signed-off-by: A <a@x>", ":", "<",
          ">", '"', ",", "\\", "(", ")", "ü", "Müller, Hans", "\udcfc", "\udce9\udc80", "日本",
          "From ", "Subject: x", "Pq-Patch: 0001-a.patch", "\x00", "\x1f", "\x85", "\xa0"]


def _as_git_text(text: str) -> str:
    """Text as pq holds a commit's bytes: UTF-8, surrogateescaped where not UTF-8."""
    return text.encode("utf-8", "surrogateescape").decode("utf-8", "surrogateescape")


def texts(newlines: bool = True) -> st.SearchStrategy[str]:
    piece = st.sampled_from(PIECES if newlines else [p for p in PIECES if "\n" not in p])
    raw = st.binary(max_size=12).map(lambda b: b.decode("utf-8", "surrogateescape"))
    return st.lists(st.one_of(piece, raw, st.text(max_size=6)), max_size=8).map(
        lambda parts: _as_git_text("".join(parts))).filter(
        lambda t: newlines or "\n" not in t)


dates = st.builds(lambda epoch, sign, tz: f"{epoch} {sign}{tz:04d}",
                  st.one_of(st.integers(0, 2**34), st.integers(0, 2**63 - 1)),  # git: < 2^63
                  st.sampled_from("+-"), st.one_of(st.sampled_from([0, 100, 530, 1400]),
                                                   st.integers(0, 9999)))
people = st.builds(Person, texts(newlines=False), texts(newlines=False), dates)
dep3_headers = st.lists(st.tuples(st.sampled_from(["Description", "X-Pq-Layer", "Bug"]),
                                  texts(newlines=False)), max_size=3).map(tuple)
patches = st.builds(PatchFile, people, texts(), st.sampled_from([DIFF, TRAP, b""]),
                    dep3_headers, st.one_of(st.none(), st.sampled_from(
                        ["ISO-8859-1", "UTF-8", "utf8", "x-bogus"]), texts(newlines=False)))


@settings(max_examples=600, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(patches)
@example(PatchFile(Person("", "", "0 +0000"), "[PATCH] \n", b"", (), None))
@example(PatchFile(Person("A", "a@b", "0 +0000"), "[PATCH v2] x\n\nbody\n", b"", (), None))
def test_any_patch_reads_back_as_written(p: PatchFile) -> None:
    data = patchfile.render(p)
    assert patchfile.parse(data, "patches/0001-x.patch") == p
    assert patchfile.render(patchfile.parse(data, "x")) == data  # deterministic


@settings(max_examples=600, deadline=None)
@given(texts(), st.sampled_from(["0001-a.patch", "0012-build-x.patch"]))
def test_trailer_comes_off_as_it_went_on(message: str, name: str) -> None:
    assert patchfile.strip_trailer(patchfile.add_trailer(message, name)) == (message, name)


def test_ordinary_patch_files_keep_their_plain_bytes() -> None:
    """This repository's own patch files (written by an earlier pq) render byte for byte."""
    files = sorted((REPO / "patches").glob("*.patch"))
    assert files
    for f in files:
        data = f.read_bytes()
        pf = patchfile.parse(data, f.name)
        assert patchfile.render(pf) == data
        assert b"X-Pq-Message" not in data


def test_separator_in_message_and_diff() -> None:
    """A message with `---` + `diff --git` lines, and a diff with the same, read back."""
    p = PatchFile(Person("A", "a@x", "1700000000 +0100"),
                  "fix: x\n\nquote:\n---\ndiff --git a/q b/q\n", TRAP)
    data = patchfile.render(p)
    assert patchfile.parse(data, "x") == p


def test_name_with_a_comma_and_empty_email() -> None:
    for person in (Person("Müller, Hans", "hm@example.de", "1700000000 +0100"),
                   Person("Nobody", "", "1700000000 +0100")):
        p = PatchFile(person, "x\n", DIFF)
        assert patchfile.parse(patchfile.render(p), "x").author == person


# -- scenarios on real repositories ---------------------------------------------------


def raw_commit(fork: Path, author: bytes, message: bytes, encoding: bytes | None,
               empty: bool) -> None:
    """A commit of exactly these bytes on HEAD (git's porcelain would clean them up)."""
    if not empty:
        write(fork, "csrc/ops.cc", (fork / "csrc/ops.cc").read_text() + "// fork edit\n")
        git(fork, "add", "-A")
    tree = git(fork, "write-tree")
    head = git(fork, "rev-parse", "HEAD")
    data = (b"tree " + tree.encode() + b"\nparent " + head.encode() + b"\nauthor " + author
            + b" 1700000000 +0100\ncommitter C O Mitter <committer@example.com> 1700000000 "
            b"+0100\n" + (b"encoding " + encoding + b"\n" if encoding else b"") + b"\n" + message)
    sha = git(fork, "hash-object", "--literally", "-t", "commit", "-w", "--stdin",
              input=data)
    git(fork, "reset", "-q", "--hard", sha)


def commit_bytes(fork: Path, rev: str) -> bytes:
    """A commit object without its tree, parent and committer lines."""
    import subprocess

    data = subprocess.run(["git", "cat-file", "commit", rev], cwd=fork, capture_output=True,
                          check=True).stdout
    head, _, message = data.partition(b"\n\n")
    kept = [ln for ln in head.split(b"\n") if not ln.startswith((b"tree ", b"parent ",
                                                                  b"committer "))]
    return b"\n".join(kept) + b"\n\n" + message


def revs(fork: Path, range_: str) -> list[str]:
    return git(fork, "rev-list", "--reverse", range_).split()


def rebased_by_pq_and_git(tmp: Path, fork: Path, orig: str) -> tuple[list[str], list[str]]:
    """Upstream moves on; `pq rebase` of the branch and `git rebase` of `orig` (the branch
    without its bookkeeping commit, on `by-git`): the patch commits each made, in order."""
    up = tmp / "upstream"
    write(up, "README.md", "upstream, improved\n")
    commit_all(up, "upstream: docs")
    git(fork, "fetch", "-q", "upstream")
    pq(fork, "rebase", "upstream/main")
    git(fork, "checkout", "-q", "-b", "by-git", orig)
    git(fork, "rebase", "-q", "upstream/main")
    return revs(fork, "upstream/main..paddle")[:-1], revs(fork, "upstream/main..by-git")


AUTHOR = b"A U Thor <author@example.com>"
CASES = {
    "subject-trailing-spaces": (AUTHOR, b"build: trailing spaces  \n\nbody\n", None, False),
    "two-line-subject": (AUTHOR, b"build: a subject\nin two lines\n\nbody\n", None, False),
    "crlf": (AUTHOR, b"build: crlf\r\n\r\nbody line\r\n", None, False),
    "trailers-then-blank": (AUTHOR, b"build: t\n\nbody\n\nSigned-off-by: A <a@x>\n\n",
                            None, False),
    "encoded-word-subject": (AUTHOR, b"build: =?UTF-8?B?w7w=?= literal\n", None, False),
    "no-final-newline": (AUTHOR, b"build: no newline\n\nbody", None, False),
    "dashes-then-diff": (AUTHOR, b"build: quote\n\n---\ndiff --git a/q b/q\n", None, False),
    "comma-name": ("Müller, Hans <hm@example.de>".encode(), b"build: x\n", None, False),
    "non-ascii-email": ("Jörg <jö@exämple.de>".encode(), b"build: x\n", None, False),
    "empty-email": (b"Nobody <>", b"build: nobody\n", None, False),
    "latin1-no-header": (b"M\xfcller <m@x>", b"build: caf\xe9\n\ncr\xe8me\n", None, False),
    "latin1-with-header": (b"M\xfcller <m@x>", b"build: caf\xe9\n\ncr\xe8me\n",
                           b"ISO-8859-1", False),
    "utf8-header": ("Jörg <j@x>".encode(), "build: ü\n".encode(), b"UTF-8", False),
    # git converts the whole commit from UTF-16, which fails here: it keeps the bytes
    # (pq read the author line alone as UTF-16: "cannot parse identity '⁁愼...'").
    "utf16-header": (AUTHOR, b"build: utf-16!?\n", b"UTF-16", False),
    "empty-commit": (AUTHOR, b"build: started empty\n\nkept as git keeps it\n", None, True),
    "leading-blank-lines": (AUTHOR, b"\n \t\r\nbuild: after blank lines\n\nbody\n", None,
                            False),
    "indented-subject": (AUTHOR, b"   build: indented\n\n  body\n", None, False),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_commit_survives_export_apply_and_rebase_like_git(tmp_path: Path, case: str) -> None:
    author, message, encoding, empty = CASES[case]
    fork = make_fork(tmp_path)
    write(fork, "setup.py", (fork / "setup.py").read_text() + "# fork\n")
    commit_all(fork, "build: before")
    raw_commit(fork, author, message, encoding, empty)
    write(fork, "pkg/__init__.py", (fork / "pkg/__init__.py").read_text() + "# fork\n")
    commit_all(fork, "python-glue: after")
    orig = git(fork, "rev-parse", "HEAD")
    originals = revs(fork, f"upstream/main..{orig}")
    result = pq(fork, "init", "--upstream", "upstream/main", "--commit")
    assert "3 patches" in result.output, result.output
    pq(fork, "check")
    queue = snapshot_queue(fork)
    pq(fork, "export")
    assert snapshot_queue(fork) == queue

    # Patch files back to commits: the same author line, encoding header and message.
    pq(fork, "apply", "-b", "applied")
    applied = [c for c in revs(fork, "upstream/main..applied")
               if b"Pq-Patch: " in commit_bytes(fork, c)]
    assert len(applied) == 3
    for old, new in zip(originals, applied, strict=True):
        a, b = commit_bytes(fork, old), commit_bytes(fork, new)
        assert b.startswith(a) and re.fullmatch(rb"\n{0,2}Pq-Patch: [\w.-]+\n?", b[len(a):])
        text = b.decode("utf-8", "surrogateescape").partition("\n\n")[2]
        assert patchfile.strip_trailer(text)[0].encode("utf-8", "surrogateescape") == \
            a.partition(b"\n\n")[2]
        assert git(fork, "rev-parse", f"{old}^{{tree}}") == git(fork, "rev-parse",
                                                                 f"{new}^{{tree}}")
    pq(fork, "check")
    pq(fork, "export")
    assert snapshot_queue(fork) == queue
    git(fork, "checkout", "-q", "paddle")

    # A rebase makes the commits `git rebase` makes of the same commits.
    by_pq, by_git = rebased_by_pq_and_git(tmp_path, fork, orig)
    assert len(by_pq) == len(by_git) == 3
    for ours, theirs in zip(by_pq, by_git, strict=True):
        assert commit_bytes(fork, ours) == commit_bytes(fork, theirs)
        assert git(fork, "rev-parse", f"{ours}^{{tree}}") == git(fork, "rev-parse",
                                                                  f"{theirs}^{{tree}}")
    git(fork, "checkout", "-q", "paddle")
    pq(fork, "check")
    rebased = snapshot_queue(fork)
    pq(fork, "export")
    assert snapshot_queue(fork) == rebased


def test_bookkeeping_commit_is_not_a_patch(tmp_path: Path) -> None:
    """A commit changing only queue files stays out of the series; an empty one is in."""
    fork = make_fork(tmp_path)
    write(fork, "setup.py", (fork / "setup.py").read_text() + "# fork\n")
    commit_all(fork, "build: before")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    git(fork, "commit", "-q", "--allow-empty", "-m", "build: marker")
    series = (fork / "series.yaml").read_text()
    write(fork, "series.yaml", series + "# note\n")
    commit_all(fork, "queue: a note")
    pq(fork, "export")
    names = sorted(p.name for p in (fork / "patches").iterdir())
    assert names == ["0001-build-before.patch", "0002-build-marker.patch"]
    assert (fork / "patches" / names[1]).read_bytes().endswith(b"---\n")


def test_patch_that_becomes_empty_is_still_dropped(tmp_path: Path) -> None:
    fork = make_fork(tmp_path)
    write(fork, "README.md", "upstream, improved\n")
    commit_all(fork, "docs: improve")
    git(fork, "commit", "-q", "--allow-empty", "-m", "docs: marker")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    up = tmp_path / "upstream"
    write(up, "README.md", "upstream, improved\n")
    commit_all(up, "upstream: the same docs")
    git(fork, "fetch", "-q", "upstream")
    out = pq(fork, "rebase", "upstream/main", "--json").output
    import json

    outcomes = {p["name"]: p["outcome"] for p in json.loads(out)["patches"]}
    assert outcomes == {"0001-docs-improve.patch": "dropped", "0002-docs-marker.patch": "clean"}
    assert sorted(p.name for p in (fork / "patches").iterdir()) == ["0002-docs-marker.patch"]


@pytest.mark.parametrize(("message", "picked"), [
    ("\n\nsubject\n", "subject\n"), (" \t\r\n\nsubject\n\n\nbody\n", "subject\n\n\nbody\n"),
    ("  \n\n", ""), ("\x0b\nsubject\n", "\x0b\nsubject\n"), ("  subject\n", "  subject\n"),
    ("subject\n   \n", "subject\n   \n")])
def test_a_pick_starts_the_message_at_its_first_line_that_is_not_blank(
        message: str, picked: str) -> None:
    """As git's picks do (skip_blank_lines: spaces, tabs and CRs; not a vertical tab)."""
    author = Person.parse("A U Thor <a@example.com> 1700000000 +0000")
    assert as_git_commits(author, message, None) == (author, picked)


def test_a_message_after_blank_lines_is_named_by_its_subject_as_git_does(
        tmp_path: Path) -> None:
    """`git format-patch` names the file from the first line that is not blank; so do
    pq's patch file name and series.yaml summary."""
    fork = make_fork(tmp_path)
    raw_commit(fork, AUTHOR, b"\n \n\t\r\nbuild: after blank lines\n\nbody\n", None, False)
    expected = git(fork, "format-patch", "-1", "--stdout", "HEAD").split("\n")[3]
    assert expected == "Subject: [PATCH] build: after blank lines"
    pq(fork, "init", "--upstream", "upstream/main")
    assert [p.name for p in (fork / "patches").iterdir()] == [
        "0001-build-after-blank-lines.patch"]
    assert "summary: 'build: after blank lines'" in (fork / "series.yaml").read_text()


@pytest.mark.parametrize("author", [b" <author@example.com>", b"A U Thor<author@example.com>",
                                    b"<author@example.com>", b"A U Thor  <author@example.com>",
                                    b"A U Thor <author@example.com> ",
                                    b"A U Thor <author@example.com> \t"])
def test_a_rebase_keeps_the_author_line_byte_for_byte_as_git_does(tmp_path: Path,
                                                                   author: bytes) -> None:
    # An empty name (`author  <e@x>`, which git fsck accepts) or no space before the `<`:
    # `git rebase` copies the line; writing it anew would make a commit fsck refuses. Two
    # spaces before the date: fsck and `git log` take them; pq took them for no date.
    fork = make_fork(tmp_path)
    raw_commit(fork, author, b"build: an odd author line\n", None, False)
    orig = git(fork, "rev-parse", "HEAD")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    (ours,), (theirs,) = rebased_by_pq_and_git(tmp_path, fork, orig)
    assert commit_bytes(fork, ours) == commit_bytes(fork, theirs)
    assert b"\nauthor " + author + b" 1700000000" in b"\n" + commit_bytes(fork, ours)
    git(fork, "checkout", "-q", "paddle")
    pq(fork, "check")


def test_a_sha256_repository_keeps_an_odd_author_line_as_git_does(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # There pq writes objects through `git hash-object`, which checks commits since git
    # 2.40 (missingSpaceBeforeEmail): a copied commit is written unchecked, as git's own.
    # (A git on PATH that refuses a checked commit write stands for git >= 2.40 here.)
    import shutil

    real = shutil.which("git")
    shim = tmp_path / "bin" / "git"
    shim.parent.mkdir()
    shim.write_text(f'#!/bin/sh\ncase " $* " in *" hash-object "*" commit "*)\n'
                    f'  case " $* " in *" --literally "*) ;; *) exit 128;; esac;; esac\n'
                    f'exec {real} "$@"\n')
    shim.chmod(0o755)
    monkeypatch.setenv("GIT_DEFAULT_HASH", "sha256")
    fork = make_fork(tmp_path)
    assert git(fork, "rev-parse", "--show-object-format") == "sha256"
    author = b"A U Thor<author@example.com>"
    raw_commit(fork, author, b"build: an odd author line\n", None, False)
    orig = git(fork, "rev-parse", "HEAD")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    monkeypatch.setenv("PATH", f"{shim.parent}{os.pathsep}{os.environ['PATH']}")
    (ours,), (theirs,) = rebased_by_pq_and_git(tmp_path, fork, orig)
    assert commit_bytes(fork, ours) == commit_bytes(fork, theirs)
    assert b"\nauthor " + author + b" 1700000000" in b"\n" + commit_bytes(fork, ours)


def test_a_patch_from_an_address_alone_applies_as_a_commit_git_fsck_accepts(
        tmp_path: Path) -> None:
    """`From: a@x` (no name): the address is the name too, as `git am` reads it (pq wrote
    `author  <a@x>`: git fsck passes it, but git refuses to write an empty name again, so
    `git commit --amend` and `git rebase` of it failed)."""
    import subprocess

    fork = make_fork(tmp_path)
    write(fork, "setup.py", (fork / "setup.py").read_text() + "# fork\n")
    commit_all(fork, "build: an edit")
    pq(fork, "init", "--upstream", "upstream/main", "--commit")
    patch = next((fork / "patches").glob("*.patch"))
    patch.write_text(re.sub(r"(?m)^From: .*$", "From: nobody@example.com", patch.read_text()))
    commit_all(fork, "by hand: an address alone")
    pq(fork, "apply", "-b", "applied")
    first = revs(fork, "upstream/main..applied")[0]
    assert b"\nauthor nobody@example.com <nobody@example.com> " in b"\n" + commit_bytes(
        fork, first)
    fsck = subprocess.run(["git", "fsck", "--no-dangling"], cwd=fork, capture_output=True)
    assert b"missingNameBeforeEmail" not in fsck.stdout + fsck.stderr


@pytest.mark.parametrize(("author", "message", "where"), [
    (b"A U Thor <author@example.com>", b"subj\n\nbody \0 nul\n", "message"),
    (b"A U\0Thor <author@example.com>", b"subj\n", "author"),
])
def test_a_commit_git_could_not_write_again_is_refused_before_its_patch_file(
        tmp_path: Path, author: bytes, message: bytes, where: str) -> None:
    """A NUL byte in a commit's message or author (git's porcelain refuses to write one):
    its patch file could not be applied again, so `pq init` and `pq export` name the
    commit and write nothing."""
    for command in (["init", "--upstream", "upstream/main", "--commit"], ["export"]):
        fork = make_fork(tmp_path / command[0])
        if command == ["export"]:
            write(fork, "setup.py", (fork / "setup.py").read_text() + "# fork\n")
            commit_all(fork, "build: an edit")
            pq(fork, "init", "--upstream", "upstream/main", "--commit")
        raw_commit(fork, author, message, None, empty=False)
        sha = git(fork, "rev-parse", "HEAD")
        before = worktree_files(fork)
        refused = pq(fork, *command, ok=False)
        assert refused.exit_code == 2, refused.output
        assert f"commit {sha[:12]} ('subj') holds a NUL byte in its {where}" in \
            refused.output, refused.output
        assert worktree_files(fork) == before and git(fork, "rev-parse", "HEAD") == sha


@pytest.mark.parametrize("date", [b"01000 +0000", b"9223372036854775808 +0000",
                                  b"18446744073709548016 +0100"])
def test_a_commit_whose_date_no_patch_file_can_carry_is_refused_before_it(
        tmp_path: Path, date: bytes) -> None:
    """A zero-padded author date, or one past git's 64-bit time (git stores 1970-01-01
    00:00 +0100 as 2^64 - 3600): pq init wrote the patch file with it and exited 0, and
    then every command refused that file's Date: header; the next export took the commit
    for a new one, dropping its entry's layer and summary."""
    fork = make_fork(tmp_path)
    write(fork, "csrc/ops.cc", (fork / "csrc/ops.cc").read_text() + "// fork edit\n")
    git(fork, "add", "-A")
    data = (b"tree " + git(fork, "write-tree").encode() + b"\nparent "
            + git(fork, "rev-parse", "HEAD").encode() + b"\nauthor A U Thor <a@example.com> "
            + date + b"\ncommitter C <c@example.com> 1700000000 +0000\n\nsubj\n")
    sha = git(fork, "hash-object", "--literally", "-t", "commit", "-w", "--stdin", input=data)
    git(fork, "reset", "-q", "--hard", sha)
    refused = pq(fork, "init", "--upstream", "upstream/main", "--commit", ok=False)
    assert refused.exit_code == 2, refused.output
    assert f"commit {sha[:12]} ('subj') holds an author date git fsck refuses " \
           f"({date.decode()!r})" in refused.output and "--date=" in refused.output
    assert not (fork / "series.yaml").exists() and git(fork, "rev-parse", "HEAD") == sha
