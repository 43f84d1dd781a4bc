"""pq.model.diff against what git itself says about the same diff.

One fixture commit holds every git-specific case (binary, rename without hunks, mode change,
C-quoted and spaced names, CRLF, a missing final newline, bytes that are not UTF-8, lines
with form feeds and U+2028); every expectation is read from git (`git apply --numstat -z`,
the files' own lines, `git blame`), not typed by hand.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from gitrepo import commit_all, git, write

from pq.errors import ConfigError
from pq.model import diff as diffs
from pq.model import patchfile
from pq.rebase.rangediff import diff_blocks, log_sections

QUOTED = 'qu"ote\\tä.txt'


@pytest.fixture(scope="module")
def repo(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("diff")
    git(root, "init", "-q")
    git(root, "config", "user.name", "A")
    git(root, "config", "user.email", "a@example.com")
    base = {
        "plain.txt": b"a\nb\nc\n", "crlf.txt": b"x\r\ny\r\n", "nonl.txt": b"no\nnl",
        "latin.txt": b"\xff\xfe bad\nok\n", "ren.txt": b"r1\nr2\nr3\n", "mode.sh": b"m\n",
        "o b/m.sh": b"m\n", "bin.dat": bytes(range(256)) * 2, "gone.txt": b"del\nx\n",
        "odd.txt": "one\ntwo\x0cff\nthree\u2028ls\nfour\rcr\n".encode(),
        "long.txt": b"".join(b"line %d\n" % i for i in range(1, 40)),
    }
    for rel, data in base.items():
        write(root, rel, data)
    commit_all(root, "base")
    write(root, "plain.txt", b"a\nB\nc\nd\n")
    write(root, "crlf.txt", b"x\r\nY\r\n")
    write(root, "nonl.txt", b"no\nnl2")
    write(root, "latin.txt", b"\xff\xfe bad\nok\n\xe9new\n")
    write(root, "bin.dat", bytes(reversed(range(256))) * 2)
    write(root, "odd.txt", "one\ntwo\x0cFF\nthree\u2028LS\nfour\rCR\n".encode())
    write(root, "long.txt", b"".join(b"line %d\n" % i if i % 13 else b"changed %d\n" % i
                                     for i in range(1, 40)) + b"end\n")
    write(root, QUOTED, b"q\n")
    os.chmod(root / "mode.sh", 0o755)
    os.chmod(root / "o b/m.sh", 0o755)
    git(root, "mv", "ren.txt", "sp ace.txt")
    git(root, "rm", "-q", "gone.txt")
    commit_all(root, "change")
    return root


def git_bytes(repo: Path, *args: str, input: bytes | None = None) -> bytes:
    proc = subprocess.run(["git", *args], cwd=repo, input=input, capture_output=True,
                          check=True)
    return proc.stdout


def _diff(repo: Path) -> bytes:
    return git_bytes(repo, "diff", "-M", "--binary", "HEAD~1", "HEAD")


def _numstat(repo: Path, data: bytes) -> list[tuple[str, str, str]]:
    """(added, removed, path) of each file, as `git apply --numstat -z` reads `data`."""
    out = git_bytes(repo, "apply", "--numstat", "-z", "-", input=data)
    rows = []
    for field in out.split(b"\0"):
        if field:
            a, r, path = field.split(b"\t", 2)
            rows.append((a.decode(), r.decode(), path.decode("utf-8", "surrogateescape")))
    return rows


def test_paths_and_counts_are_what_git_apply_reads(repo: Path) -> None:
    data = _diff(repo)
    files = diffs.parse(data)
    numstat = _numstat(repo, data)
    assert [f.path for f in files] == [p for _a, _r, p in numstat]
    for f, (a, r, _p) in zip(files, numstat, strict=True):
        if f.binary:
            assert (a, r) == ("-", "-") and f.hunks == ()
        else:
            assert (len(f.added()), len(f.removed())) == (int(a), int(r)), f.path


def test_paths_read_from_headers_alone_are_the_full_readers(repo: Path) -> None:
    """diffs.paths (no hunk read) gives each section's (old, new) exactly as parse does:
    additions, deletions, a rename, mode changes, binary data, quoted names."""
    data = _diff(repo)
    full = [(f.old, f.new) for f in diffs.parse(data)]
    assert diffs.paths(data) == full
    assert (None, QUOTED) in full and ("gone.txt", None) in full
    assert ("ren.txt", "sp ace.txt") in full


def test_read_hunks_leaves_out_only_the_hunks_of_the_sections_it_refuses(repo: Path) -> None:
    data = _diff(repo)
    asked: list[tuple[str, bool]] = []

    def only_plain(path: str, section: bytes) -> bool:
        asked.append((path, section.startswith(b"diff --git ")))
        return path == "plain.txt"

    full = diffs.parse(data)
    some = diffs.parse(data, read_hunks=only_plain)
    assert [(f.old, f.new, f.status, f.binary, f.old_mode, f.new_mode) for f in some] == [
        (f.old, f.new, f.status, f.binary, f.old_mode, f.new_mode) for f in full]
    for f, g in zip(full, some, strict=True):
        assert g.hunks == (f.hunks if f.path == "plain.txt" else ()), f.path
    # asked once for every section with hunks (binary and hunk-less sections are not read)
    assert sorted(p for p, _ in asked) == sorted(f.path for f in full if f.hunks)
    assert all(whole for _, whole in asked)


def test_line_numbers_are_the_files_lines(repo: Path) -> None:
    for f in diffs.parse(_diff(repo)):
        if f.binary:
            continue
        new = git_bytes(repo, "show", f"HEAD:{f.new}").split(b"\n") if f.new else []
        old = git_bytes(repo, "show", f"HEAD~1:{f.old}").split(b"\n") if f.old else []
        for h in f.hunks:
            for ln in h.lines:
                if ln.new is not None:
                    assert new[ln.new - 1] == ln.raw, (f.path, ln)
                if ln.old is not None:
                    assert old[ln.old - 1] == ln.raw, (f.path, ln)


def test_added_lines_are_the_lines_blame_gives_the_commit(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    for f in diffs.parse(_diff(repo)):
        if f.binary or f.new is None:
            continue
        blame = git(repo, "blame", "--porcelain", "-M", "HEAD", "--", f.new)
        mine = {int(m.group(1)) for m in re.finditer(rf"(?m)^{head} \d+ (\d+)", blame)}
        assert {ln.number for ln in f.added()} == mine, f.path


def test_status_modes_and_names_come_from_the_strict_reader(repo: Path) -> None:
    files = {f.path: f for f in diffs.parse(_diff(repo))}
    assert files[QUOTED].status == "added" and files[QUOTED].old is None
    assert files["gone.txt"].status == "deleted" and files["gone.txt"].new is None
    assert files["gone.txt"].deleted and files[QUOTED].created
    ren = files["sp ace.txt"]
    assert (ren.status, ren.old, ren.old_path, ren.hunks) == ("renamed", "ren.txt", "ren.txt", ())
    for name in ("mode.sh", "o b/m.sh"):
        f = files[name]
        assert (f.status, f.old, f.old_mode, f.new_mode, f.hunks) == \
            ("modified", name, "100644", "100755", ())
    assert files["bin.dat"].binary and files["plain.txt"].old_path is None


def test_line_content_keeps_git_bytes(repo: Path) -> None:
    files = {f.path: f for f in diffs.parse(_diff(repo))}
    assert [ln.raw for ln in files["crlf.txt"].added()] == [b"Y\r"]
    assert [ln.raw for ln in files["nonl.txt"].added()] == [b"nl2"]
    assert [ln.raw for ln in files["nonl.txt"].removed()] == [b"nl"]
    latin = files["latin.txt"].added()[0]
    assert latin.raw == b"\xe9new" and latin.text == "\ufffdnew"
    odd = [ln.text for ln in files["odd.txt"].added()]
    assert odd == ["two\x0cFF", "three\u2028LS", "four\rCR"]
    hunk = files["plain.txt"].hunks[0]
    assert [ln.kind for ln in hunk.lines] == [" ", "-", "+", " ", "+"]
    assert [ln.text for ln in hunk.post()] == ["a", "B", "c", "d"]


def test_a_format_patch_signature_is_not_part_of_the_last_hunk(repo: Path) -> None:
    mail = git_bytes(repo, "format-patch", "-1", "--stdout", "-M", "--binary", "HEAD")
    body = mail[mail.index(b"\ndiff --git ") + 1:]
    assert b"\n-- \n" in body
    assert diffs.parse(body) == diffs.parse(_diff(repo))


def test_a_hunk_shorter_than_its_header_is_refused() -> None:
    bad = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n-a\n+b\n"
    with pytest.raises(ConfigError, match="the diff of f is not what its `@@`") as e:
        diffs.parse(bad, "patches/0001-x.patch")
    assert e.value.path == "patches/0001-x.patch"
    # At the end of the file too: what follows its last newline is no (context) line.
    for counts in (b"-1,2 +1,9", b"-1,9 +1,2"):
        short = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ " + counts + b" @@\n a\n-b\n+c\n"
        with pytest.raises(ConfigError, match="a hunk is shorter than they count"):
            diffs.parse(short, "patches/0001-x.patch")


@pytest.mark.parametrize("counts", [b"-1," + b"9" * 5000 + b" +1,2", b"-1,2 +1," + b"9" * 19])
def test_a_count_of_thousands_of_digits_is_a_hunk_too_short_for_it(counts: bytes) -> None:
    """Python refuses to read an int of more than 4300 digits (a ValueError): such a count
    is refused as any count the hunk falls short of, not an internal error."""
    bad = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ " + counts + b" @@\n a\n-b\n+c\n"
    with pytest.raises(ConfigError, match="a hunk is shorter than they count"):
        diffs.parse(bad, "patches/0001-x.patch")
    with pytest.raises(ConfigError, match="a hunk is shorter than they count"):
        assert patchfile.parse(b"From: a <a@b>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\n"
                               b"Subject: s\n\n---\n" + bad, "p.patch").files is None


def test_a_hunk_longer_than_its_header_is_refused_at_the_sections_hunks() -> None:
    """Two removed lines where the header counts one: git apply calls it corrupt too."""
    bad = (b"From: x\n\ndiff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n-b\n+c\n")
    with pytest.raises(ConfigError, match="a hunk is longer than they count") as e:
        diffs.parse(bad[9:], "patches/0001-x.patch", first_line=3)
    assert (e.value.path, e.value.line) == ("patches/0001-x.patch", 6)  # its `@@` line


def test_a_short_hunk_before_another_is_refused_not_read_on() -> None:
    """A line deleted by hand from a hunk that another follows: the next `@@` line is no
    line of the short hunk."""
    bad = (b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n"
           b"@@ -10,2 +10,2 @@\n x\n-y\n+Y\n")
    with pytest.raises(ConfigError, match="a hunk is shorter than they count") as e:
        diffs.parse(bad, "patches/0001-x.patch")
    assert e.value.line == 4


@pytest.mark.parametrize("bad", [
    b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,-2 +1,2 @@\n-a\n+A\n b\n",  # a count < 0
    b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1,2 +1,2 @@\n-a\n+A\n b",  # no last newline
    b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@\n-a\n+A\n@@ -x +2 @@\n-b\n+B\n",
], ids=["negative count", "last line cut", "second header"])
def test_a_diff_git_apply_calls_corrupt_is_refused_at_gits_line(tmp_path: Path,
                                                                bad: bytes) -> None:
    """Hunks git apply refuses ("corrupt patch at line N") are refused at that line, not
    read as no hunks (a malformed `@@ -` line) or as a last line (one without its newline)."""
    git(tmp_path, "init", "-q")
    write(tmp_path, "f", "a\nb\n")
    (tmp_path / "x.patch").write_bytes(bad)
    said = subprocess.run(["git", "apply", "--check", "x.patch"], cwd=tmp_path,
                          capture_output=True, check=False)
    at = re.search(rb"corrupt patch at line (\d+)", said.stderr)
    assert said.returncode != 0 and at is not None, said.stderr
    with pytest.raises(ConfigError) as e:
        diffs.parse(bad, "patches/0001-x.patch")
    assert (e.value.path, e.value.line) == ("patches/0001-x.patch", int(at.group(1)))


def test_hunk_lines_keep_their_bytes_and_numbers() -> None:
    """CRs, bytes that are not UTF-8, an empty context line, and `\\ No newline` lines
    (not lines of the file), numbered in the old and the new file."""
    body = (b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -3,3 +3,3 @@\n a\r\n\n-\xff\n"
            b"\\ No newline at end of file\n+\xc3\xa9\n\\ No newline at end of file\n")
    (hunk,) = diffs.parse(body)[0].hunks
    assert [(ln.kind, ln.raw, ln.text, ln.old, ln.new) for ln in hunk.lines] == [
        (" ", b"a\r", "a\r", 3, 3), (" ", b"", "", 4, 4), ("-", b"\xff", "\ufffd", 5, None),
        ("+", b"\xc3\xa9", "\u00e9", None, 5)]


@pytest.mark.parametrize("line", [
    b"diff --git a/../x b/../x", b'diff --git "a/.git/config" "b/.git/config"',
    b"--- a/ok\n+++ b/.GIT/hooks/pre-commit", b"rename to ../../etc/passwd",
    b'diff --git "a/\\056\\056/x" "b/\\056\\056/x"', b'diff --git a/ok b/sp ace/../../x',
    b"diff --git x/../../e y/../../e",  # git apply -p1 strips any first folder
    b'diff --git a/x "b/\\056\\056/e"',  # one name quoted: pq reads the line by its words
    b'diff --git a/.git/pwned "b/.git/pwned" ', b'diff --git "x/.git/pwned" "y/.git/pwned"',
    b'diff --git x/.git/pwned y"z/.git/pwned"',  # git apply strips any first folder
])
def test_check_paths_refuses_paths_outside_the_repository(line: bytes) -> None:
    with pytest.raises(ConfigError, match="outside the repository") as e:
        diffs.check_paths(line + b"\n", "patches/0001-x.patch", 7)
    assert e.value.path == "patches/0001-x.patch"


@pytest.mark.parametrize("line", [
    b"diff --git a/docs/x .git b/docs/x .git", b"diff --git a/x /etc b/x /etc",
    b"diff --git a/x ../y b/x ../y", b"diff --git a/t\t.git b/t\t.git",
    b"diff --git a/d/.. b/y b/d/.. b/y", b"diff --git a/.git b/y b/.git b/y",
    b"diff --git a/.. b/y b/.. b/y",  # folders `.. b` and `.git b`: git reads no `..`
])
def test_check_paths_takes_names_with_spaces_as_git_reads_them(line: bytes) -> None:
    """A word after a space is no path of its own: `docs/x .git` is a file in docs/."""
    diffs.check_paths(line + b"\n", "patches/0001-x.patch", 7)


def test_check_paths_skips_hunk_bodies_by_count(repo: Path) -> None:
    diffs.check_paths(_diff(repo), "p", 1)
    body = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1,2 @@\n-x\n+++ b/../evil\n+y\n"
    diffs.check_paths(body, "p", 1)  # `+++ b/../evil` is an added line, not a header


@pytest.mark.parametrize("inside", [False, True], ids=["after-the-data", "among-the-data"])
@pytest.mark.parametrize("header", [b"--- a/../evil\n+++ b/../evil", b"diff --git a/.git/x b/.git/x",
                                    b"rename to ../x"])
def test_check_paths_reads_on_past_a_binary_patch(repo: Path, header: bytes, inside: bool
                                                  ) -> None:
    """A binary patch's base85 lines name no path (pq skips them at once); a header line
    after them, or in their midst (a hand edit), is checked all the same, and named at its
    own line."""
    diff = _diff(repo)
    diffs.check_paths(diff, "p", 1)
    data_at = re.search(rb"\n(?:literal|delta) [0-9]+\n", diff)
    assert data_at is not None
    at = data_at.end() if inside else diff.index(b"\n\n", data_at.end() - 1) + 2
    data = diff[:at] + header + b"\n" + diff[at:]
    with pytest.raises(ConfigError, match="outside the repository") as e:
        diffs.check_paths(data, "p", 5)
    assert e.value.line == 5 + data[:at].count(b"\n")
    if not header.startswith(b"diff --git "):  # (that one starts a section of its own)
        assert diffs.paths(data) == diffs.paths(diff)  # the file's own header names it


def test_diff_blocks_read_diff_tree_output(repo: Path) -> None:
    head = git(repo, "rev-parse", "HEAD")
    log = git_bytes(repo, "diff-tree", "--stdin", "-p", "-M", "--format=commit %H",
                    input=(head + "\n").encode())
    blocks = diff_blocks(dict(log_sections(log))[head])
    # Each run of changed lines, between the context lines around it (None: none shown).
    assert blocks["plain.txt"] == [(b"a", (b"b",), (b"B",), b"c"), (b"c", (), (b"d",), None)]
    assert blocks[QUOTED] == [(None, (), (b"q",), None)]
    assert blocks["crlf.txt"] == [(b"x", (b"y",), (b"Y",), None)]  # CRs as white space
    assert "sp ace.txt" not in blocks and "bin.dat" not in blocks


def test_without_line_numbers_equates_moved_hunks() -> None:
    a = b"diff --git a/f b/f\n--- a/f\n+++ b/f\n@@ -1 +1 @@ def f\n-x\n+y\n"
    b = a.replace(b"@@ -1 +1 @@ def f", b"@@ -9 +9 @@")
    assert diffs.without_line_numbers(a) == diffs.without_line_numbers(b)
    assert diffs.without_line_numbers(a) != diffs.without_line_numbers(a.replace(b"+y", b"+z"))


def test_binary_without_data_zero_context_and_blank_context_lines(
        repo: Path, tmp_path: Path) -> None:
    """`Binary files ... differ` (no --binary), `-U0` hunks, and the empty context lines
    `diff.suppressBlankEmpty` writes: counts and numbers still match git's."""
    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(repo), str(clone))
    write(clone, "blank.txt", b"a\n\nb\n")
    commit_all(clone, "blank")
    write(clone, "blank.txt", b"a\n\nB\n")
    write(clone, "long.txt", b"top\n" + git_bytes(clone, "show", "HEAD:long.txt"))
    commit_all(clone, "edit")
    for config, context in (("diff.suppressBlankEmpty=false", "-U0"),
                            ("diff.suppressBlankEmpty=true", "-U3")):
        data = git_bytes(clone, "-c", config, "diff", context, "HEAD~3", "HEAD")
        assert b"Binary files a/bin.dat and b/bin.dat differ" in data
        files = diffs.parse(data)
        counts = [("-", "-") if f.binary else (str(len(f.added())), str(len(f.removed())))
                  for f in files]
        assert [(*c, f.path) for c, f in zip(counts, files, strict=True)] == \
            _numstat(clone, data)
    blank = git_bytes(clone, "-c", "diff.suppressBlankEmpty=true", "diff", "HEAD~1", "HEAD",
                      "--", "blank.txt")
    assert b"\n\n-b\n" in blank  # the blank context line is an empty line
    (f,) = diffs.parse(blank)
    assert [(ln.kind, ln.old, ln.new, ln.raw) for ln in f.hunks[0].lines] == [
        (" ", 1, 1, b"a"), (" ", 2, 2, b""), ("-", 3, None, b"b"), ("+", None, 3, b"B")]


def test_a_patch_file_parses_its_diff_once(repo: Path) -> None:
    from pq.git.objects import Person
    from pq.model import patchfile
    written = patchfile.PatchFile(Person("A", "a@example.com", "0 +0000"), "change\n",
                                  _diff(repo))
    pf = patchfile.parse(patchfile.render(written), "patches/0001-change.patch")
    assert pf.files is pf.files and pf.files == diffs.parse(_diff(repo))


@pytest.mark.parametrize("value", [b"100755", b" 100755", b"+100755", b"100755 junk",
                                   b"100755\r", b"0100755", b"10o755", b"", b"abc", b"9",
                                   b"x100755"])
def test_a_mode_line_is_refused_exactly_when_git_apply_calls_it_invalid(
        tmp_path: Path, value: bytes) -> None:
    git(tmp_path, "init", "-q")
    write(tmp_path, "x", "a\n")
    commit_all(tmp_path, "x")
    diff = b"diff --git a/x b/x\nold mode 100644\nnew mode " + value + b"\n"
    applied = subprocess.run(["git", "apply", "--check", "-"], input=diff, cwd=tmp_path,
                             capture_output=True)
    git_refuses = b"invalid mode" in applied.stderr
    if not git_refuses:
        diffs.parse(diff, "p.patch")
        return
    with pytest.raises(ConfigError) as caught:
        diffs.parse(b"From 1\n\n---\n" + diff, "p.patch", first_line=1)
    assert (caught.value.path, caught.value.line) == ("p.patch", 6)  # the `new mode` line
    assert "invalid mode line" in caught.value.message and "`pq export --force`" in str(
        caught.value.hint)
