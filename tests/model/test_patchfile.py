"""pq.model.patchfile without a repository: render/parse round trips exactly, what
`git format-patch` writes reads as git means it, refusals name file and line, and the
Pq-Patch trailer round trips."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pq.errors import ConfigError
from pq.git.objects import Person
from pq.model import diff as diffs
from pq.model import mailheader, patchfile
from pq.model.patchfile import PatchFile

AUTHOR = Person("A U Thor", "author@example.com", "1700000000 +0100")
DIFF = (b"diff --git a/pkg/x.py b/pkg/x.py\n--- a/pkg/x.py\n+++ b/pkg/x.py\n"
        b"@@ -1 +1 @@\n-old\n+new\n")


def roundtrip(patch: PatchFile) -> PatchFile:
    return patchfile.parse(patchfile.render(patch), "patches/0001-x.patch")


@pytest.mark.parametrize("message", [
    "subject only\n",
    "subject\n\nbody line\n\nSigned-off-by: A <a@b>\n",
    "no final newline",
    "trailing spaces  \n\nbody  \n",
    "crlf\r\n\r\nbody\r\n",
    "two\nsubject lines\n",
    "dashes\n\n---\ndiff --git a/x b/x\nin the message\n",
    "umlauts äö\n\nbody ü\n",
    "bytes \udcff\udcfe not UTF-8\n",
    "[PATCH] looks like a prefix\n",
    "\n\nleading blank lines\n",
])
def test_messages_round_trip(message: str) -> None:
    patch = PatchFile(AUTHOR, message, DIFF)
    assert roundtrip(patch) == patch


@pytest.mark.parametrize("author", [
    Person("Müller, Jörg", "jm@example.com", "1700000000 -0530"),
    Person("", "", "0 +0000"),
    Person("名前", "ünicode@exämple.com", "1700000000 +1400"),
])
def test_authors_round_trip(author: Person) -> None:
    patch = PatchFile(author, "s\n", DIFF)
    assert roundtrip(patch).author == author


def test_empty_diff_headers_and_encoding_round_trip() -> None:
    patch = PatchFile(AUTHOR, "empty commit\n", b"", headers=(("X-Custom", "kept ü"),),
                      encoding="ISO-8859-1")
    assert roundtrip(patch) == patch


@settings(max_examples=200, deadline=None)
@given(message=st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1),
       name=st.text(st.characters(exclude_characters="<>\n\r\x00", codec="utf-8",
                                  exclude_categories=("Cs", "Cc")), max_size=20))
def test_any_message_and_name_round_trip(message: str, name: str) -> None:
    patch = PatchFile(Person(name, "a@b.c", "1700000000 +0000"), message, DIFF)
    assert roundtrip(patch) == patch


def test_plain_patch_is_plain_mail() -> None:
    data = patchfile.render(PatchFile(AUTHOR, "glue: scoped compat\n\nWhy.\n", DIFF))
    assert data == (patchfile.MBOX_FROM
                    + b"From: A U Thor <author@example.com>\n"
                      b"Date: Tue, 14 Nov 2023 23:13:20 +0100\n"
                      b"Subject: [PATCH] glue: scoped compat\n\nWhy.\n---\n" + DIFF)


def test_reads_what_git_format_patch_writes() -> None:
    data = (b"From 1234567890123456789012345678901234567890 Mon Sep 17 00:00:00 2001\n"
            b"From: =?UTF-8?q?J=C3=B6rg=20M=C3=BCller?= <jm@example.com>\n"
            b"Date: Tue, 14 Nov 2023 23:13:20 +0100\n"
            b"Subject: [PATCH 2/3] a subject that is long enough to be\n folded by git\n"
            b"MIME-Version: 1.0\nContent-Type: text/plain; charset=UTF-8\n"
            b"Content-Transfer-Encoding: 8bit\n\nThe body.\n---\n" + DIFF)
    patch = patchfile.parse(data, "p.patch")
    assert patch.author == Person("Jörg Müller", "jm@example.com", "1700000000 +0100")
    assert patch.message == "a subject that is long enough to be folded by git\n\nThe body.\n"
    assert patch.diff == DIFF and patch.headers == ()


def test_a_patch_saved_with_crlf_line_ends_reads_as_git_am_reads_it() -> None:
    """Every CR of a file converted to CRLF is the conversion's (pq writes LF headers), and
    git am strips them: the patch is the one written. A CRLF file's own CRs in a patch pq
    wrote (LF headers) stay."""
    crlf_file = b"diff --git a/w.bat b/w.bat\n--- a/w.bat\n+++ b/w.bat\n@@ -1 +1 @@\n" \
                b"-old\r\n+new\r\n"
    for diff in (DIFF, crlf_file):
        written = patchfile.render(PatchFile(AUTHOR, "glue: scoped compat\n\nWhy.\n", diff))
        assert patchfile.parse(written, "p.patch").diff == diff
    converted = patchfile.render(PatchFile(AUTHOR, "glue: scoped compat\n\nWhy.\n", DIFF)
                                 ).replace(b"\n", b"\r\n")
    patch = patchfile.parse(converted, "p.patch")
    assert (patch.author, patch.message, patch.diff) == (AUTHOR, "glue: scoped compat\n\n"
                                                         "Why.\n", DIFF)


@pytest.mark.parametrize("data,expected", [
    (b"garbage", "p.patch:1: no mail header"),
    (b"From: a <a@b>\nSubject: s\n\n---\n", "p.patch:1: missing `Date:` header"),
    (b"From: a <a@b>\nDate: yesterday\nSubject: s\n\n", "p.patch:2: bad Date: header"),
    (b"From: a <a@b>\nDate: Thu, 01 Jan 1970 00:00:00 +0100\nSubject: s\n\n",
     "p.patch:2: bad Date: header"),  # an hour before 1970: no commit can carry it
    (b"From: a <a@b>\nDate: Mon, 01 Jan 1900 00:00:00 +0000\nSubject: s\n\n",
     "p.patch:2: bad Date: header"),
    # git's own form, as git fsck refuses it in a commit (badDateOverflow, zeroPaddedDate)
    (b"From: a <a@b>\nDate: 18446744073709551615 +0000\nSubject: s\n\n",
     "p.patch:2: bad Date: header"),
    (b"From: a <a@b>\nDate: " + b"9" * 5000 + b" +0000\nSubject: s\n\n",
     "p.patch:2: bad Date: header"),
    (b"From: a <a@b>\nDate: 01700000000 +0000\nSubject: s\n\n",
     "p.patch:2: bad Date: header"),
    # a line break would end the commit's author line (git fsck: missingEmail)
    (b"From: =?utf-8?q?a=0Ab?= <a@b>\nDate: 1700000000 +0000\nSubject: s\n\n",
     "p.patch:1: bad From: header '=?utf-8?q?a=0Ab?= <a@b>': its name or e-mail holds a "
     "line break"),
    (b"From: =?utf-8?q?a?= <=?utf-8?q?a=0A@b?=>\nDate: 1700000000 +0000\nSubject: s\n\n",
     "p.patch:1: bad From: header '=?utf-8?q?a?= <=?utf-8?q?a=0A@b?=>': its name or e-mail "
     "holds a line break"),
    # the commit's `encoding` header line: a line break in it would add header lines
    (b"From: a <a@b>\nDate: 1700000000 +0000\nSubject: s\n"
     b"X-Pq-Encoding: =?utf-8?q?latin1=0Aauthor_x?=\n\n---\n"
     b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n",
     "p.patch:4: bad X-Pq-Encoding: header '=?utf-8?q?latin1=0Aauthor_x?=': a line break"),
    (b"From: a <a@b>\nnot a header\n\n", "p.patch:2: bad header line 'not a header'"),
    # the line of the header, after a `From <id> <date>` line as pq writes them
    (b"From 0000000000000000000000000000000000000000 Mon Sep 17 00:00:00 2001\n"
     b"From: a <a@b>\nSubject: s\nDate: yesterday\n\n", "p.patch:4: bad Date: header"),
    (b"From 0 Mon Sep 17 00:00:00 2001\nFrom: a <a@b>\nnot a header\n\n",
     "p.patch:3: bad header line 'not a header'"),
    (b"From: a <a@b>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: s\n\nbody\n",
     "p.patch:5: no diff found"),
    (b"From: a <a@b>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: s\nX-Pq-Message: 99\n"
     b"\nshort\n---\n", "p.patch:6: the message is not 99 bytes"),
    (b"From: a <a@b>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: s\n\n---\n"
     b"diff --git a/x b/x\n--- a/x\n+++ b/../x\n@@ -1 +1 @@\n-a\n+b\n",
     "p.patch:8: "),
])
def test_refusals_name_the_line(data: bytes, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        patchfile.parse(data, "p.patch")
    assert str(info.value).startswith(expected), str(info.value)


@pytest.mark.parametrize("size,hint", [
    ("53", "`X-Pq-Message: 14` counts its bytes up to the first `---` line now"),
    ("\u00b2", "`X-Pq-Message: 14` counts"),  # a digit to str.isdigit, not to int()
])
def test_a_message_whose_x_pq_message_is_wrong_says_the_count(size: str, hint: str) -> None:
    """A message edited by hand: the hint gives the count that makes it read (`pq export`
    would throw the edit away, and refuses a hand edit anyway)."""
    data = (b"From: a <a@b>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: s\n"
            + f"X-Pq-Message: {size}\n".encode() + b"\n\nsecond line!\n---\n"
            b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    with pytest.raises(ConfigError) as info:
        patchfile.parse(data, "p.patch")
    assert str(info.value).startswith(f"p.patch:6: the message is not {size} bytes"), \
        str(info.value)
    assert info.value.hint is not None and hint in info.value.hint, info.value.hint
    fixed = data.replace(f"X-Pq-Message: {size}".encode(), b"X-Pq-Message: 14")
    assert patchfile.parse(fixed, "p.patch").message == "s\nsecond line!\n"


def test_an_x_pq_message_of_thousands_of_digits_is_refused_in_one_line() -> None:
    """int() refuses more than 4300 digits (a ValueError): the count is wrong, as any
    other, and the line shows its first digits."""
    data = (b"From: a <a@b>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: s\n"
            b"X-Pq-Message: " + b"9" * 5000 + b"\n\n\nsecond line!\n---\n"
            b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-a\n+b\n")
    with pytest.raises(ConfigError) as info:
        patchfile.parse(data, "p.patch")
    assert str(info.value).startswith("p.patch:6: the message is not 999999999999... "
                                      "(5000 digits) bytes"), str(info.value)


def test_escaping_path_is_refused() -> None:
    data = (b"From: a <a@b>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: s\n\n---\n"
            b'diff --git "a/\\056\\056/x" "b/\\056\\056/x"\nnew file mode 100644\n')
    with pytest.raises(ConfigError, match="outside the repository"):
        patchfile.parse(data, "p.patch")


@pytest.mark.parametrize("message", [
    "s\n", "s", "s\n\nbody\n", "s\n\nSigned-off-by: a <b>\n", "s\n\nbody\n\n",
    "s\n\nAcked-by: x\nSigned-off-by: y\n",
])
def test_trailer_round_trips(message: str) -> None:
    with_trailer = patchfile.add_trailer(message, "0001-x.patch")
    assert with_trailer.rstrip("\n").endswith("Pq-Patch: 0001-x.patch")
    assert patchfile.strip_trailer(with_trailer) == (message, "0001-x.patch")
    assert patchfile.strip_trailer(message) == (message, None)


def test_trailer_joins_a_trailer_paragraph() -> None:
    assert patchfile.add_trailer("s\n\nSigned-off-by: y\n", "n.patch") == \
        "s\n\nSigned-off-by: y\nPq-Patch: n.patch\n"
    assert patchfile.strip_trailer("s\n\nPq-Patch: n.patch\nSigned-off-by: y\n") == \
        ("s\n\nSigned-off-by: y\n", "n.patch")
    # `git cherry-pick -x` of a commit `pq apply` made: its line is in the trailer block, as
    # git reads it. Left in the message, the trailer made `pq apply` of the picked commit's
    # own entry refuse it as two patches squashed.
    picked = "s\n\nPq-Patch: n.patch\n(cherry picked from commit 0123abc)\n"
    assert patchfile.strip_trailer(picked) == ("s\n\n(cherry picked from commit 0123abc)\n",
                                               "n.patch")


def test_index_lines_go_except_on_binary_diffs() -> None:
    text = b"diff --git a/x b/x\nindex 1234567..89abcde 100644\n--- a/x\n+++ b/x\n" \
           b"@@ -1 +1 @@\n-index a\n+index b\n"
    binary = b"diff --git a/y b/y\nindex 1111111..2222222 100644\nGIT binary patch\nliteral 1\n"
    assert patchfile.strip_index_lines(text + binary) == (
        b"diff --git a/x b/x\n--- a/x\n+++ b/x\n@@ -1 +1 @@\n-index a\n+index b\n" + binary)
    assert diffs.split_sections(text + binary) == [text, binary]


@pytest.mark.parametrize("raw,path", [
    (b"plain/name", "plain/name"),
    (b'"tab\\there"', "tab\there"),
    (b'"\\303\\244"', "ä"),
    (b'"quote\\"d"', 'quote"d'),
])
def test_unquote_path_reads_git_quoting(raw: bytes, path: str) -> None:
    assert diffs.unquote_path(raw) == path


@pytest.mark.parametrize("date,expected", [
    ("Tue, 14 Nov 2023 22:13:20 +0530 (IST)", "1699980200 +0530"),  # a comment after it
    ("Tue, 14 Nov 2023 22:13:20 EST", "1700018000 -0500"),  # a zone by its name
    ("Tue, 14 Nov 2023 22:13:20 -0000", "1700000000 +0000"),  # RFC 2822's unknown offset
    ("14 Nov 2023 22:13:20 -0130", "1700005400 -0130"),
    ("Tue, 14 Nov 2023 22:13:20 +1400", "1699949600 +1400"),
    ("1700000000 -0130", "1700000000 -0130"),  # git's own form
    ("Tue, 14 Nov 2023 22:13:20", None),  # no zone: refused, not guessed
])
def test_a_date_header_reads_as_git_am_reads_it(date: str, expected: str | None) -> None:
    """The dates `git am` takes from a hand-edited Date: header (checked against git am
    2.39): the zone comes from the date itself, not from a `+hhmm` at the line's end."""
    from pq.model.mailheader import read_date

    assert read_date(date) == expected


@pytest.mark.parametrize("options", [[], ["--no-stat"], ["--stat", "--signature=sig"]])
@pytest.mark.parametrize("body", ["", "\n\nWhy it is so.\n\nSigned-off-by: A <a@b>\n"])
def test_a_patch_as_git_format_patch_writes_it_reads_as_git_am_reads_it(
        tmp_path: Path, options: list[str], body: str) -> None:
    """`git format-patch`'s diffstat (or, with --no-stat, no `---` line at all) and its
    signature: the message and the diff are the commit's, as `git am` takes them."""
    import subprocess

    def git(*args: str) -> bytes:
        return subprocess.run(["git", "-C", str(tmp_path), *args], check=True,
                              capture_output=True).stdout

    git("init", "-q")
    (tmp_path / "a.txt").write_text("one\n")
    git("add", "a.txt")
    git("-c", "user.name=A U Thor", "-c", "user.email=a@b", "commit", "-q", "-m", "base")
    (tmp_path / "a.txt").write_text("one\ntwo\n")
    (tmp_path / "b.txt").write_text("new\n")
    git("add", "a.txt", "b.txt")
    git("-c", "user.name=A U Thor", "-c", "user.email=a@b", "commit", "-q", "-m",
        "edit a, add b" + body)
    data = git("format-patch", "-1", "--stdout", *options, "HEAD")
    patch = patchfile.parse(data, "p.patch")
    assert patch.message == git("log", "-1", "--format=%B", "HEAD").decode().rstrip("\n") + "\n"
    assert patch.diff.startswith(b"diff --git a/a.txt b/a.txt\n")
    assert b"\ndiff --git a/b.txt b/b.txt\nnew file mode 100644\n" in patch.diff
    assert b"|" not in patch.diff.split(b"\ndiff --git")[0]  # no diffstat line in it


@pytest.mark.parametrize("data,line", [
    (b"From: a <a@b>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: s\n\nbo\0dy\n---\n"
     + DIFF, 5),
    (b"From 0 Mon Sep 17 00:00:00 2001\nFrom: a\0b <a@b>\nDate: Tue, 14 Nov 2023 23:13:20 "
     b"+0100\nSubject: s\n\n---\n" + DIFF, 2),
])
def test_a_nul_byte_in_the_message_or_author_reads_but_makes_no_commit(data: bytes,
                                                                        line: int) -> None:
    """git refuses such a commit (`git am` too): pq reads the file (`pq series` lists it)
    but refuses to commit it (`pq apply` made a commit git cannot)."""
    assert "\0" in (p := patchfile.parse(data, "p.patch")).message + p.author.name
    with pytest.raises(ConfigError) as info:
        patchfile.parse_committable(data, "p.patch")
    assert str(info.value).startswith(f"p.patch:{line}: a NUL byte in the author or the "
                                      "message"), str(info.value)


def test_a_hunk_whose_counts_are_wrong_names_its_line_in_the_patch_file() -> None:
    """A line added to a hunk by hand: the error named the file alone."""
    data = (b"From: a <a@b>\nDate: Tue, 14 Nov 2023 23:13:20 +0100\nSubject: s\n\n---\n"
            b"diff --git a/pkg/x.py b/pkg/x.py\n--- a/pkg/x.py\n+++ b/pkg/x.py\n"
            b"@@ -1,3 +1,3 @@\n x\n-old\n+new\n+more\n y\n")
    pf = patchfile.parse(data, "p.patch")
    with pytest.raises(ConfigError) as info:
        _ = pf.files
    at = data.split(b"\n").index(b"@@ -1,3 +1,3 @@") + 1
    assert str(info.value).startswith(f"p.patch:{at}: the diff of pkg/x.py"), str(info.value)


def test_a_patch_file_too_large_to_read_back_names_the_limit_and_the_fix() -> None:
    """`pq export` refuses to write a patch file `pq apply` would refuse to read (and
    says why, with the fix); reading one names the limit too."""
    author = Person("A", "a@b", "0 +0000")
    assert patchfile.unreadable("s\n", author, b"x" * patchfile.MAX_PATCH_BYTES) is None
    too_large = b"x" * (patchfile.MAX_PATCH_BYTES + 1)
    why = patchfile.unreadable("s\n", author, too_large)
    assert why is not None and why[0] == (
        f"a patch of {len(too_large)} bytes, more than the 64 MiB pq reads")
    assert "Git LFS" in why[1]
    with pytest.raises(ConfigError, match="more than the 64 MiB pq reads") as refused:
        patchfile.parse(too_large, "patches/0001-x.patch")
    assert refused.value.hint == patchfile.TOO_LARGE
    assert patchfile.unreadable("s\0\n", author, b"")[0].startswith("a NUL byte in its message")


def test_a_date_past_gits_signed_time_is_refused() -> None:
    """git fsck refuses a commit date of 2**63 and above (badDateOverflow: a signed time)."""
    for epoch in (2**63, 2**64 - 2):
        with pytest.raises(ConfigError, match="bad Date: header"):
            patchfile.parse(f"From: a <a@b>\nDate: {epoch} +0000\nSubject: s\n\n".encode(),
                            "p.patch")


def test_a_bare_from_address_and_an_empty_message_read_as_git_am_reads_them(
        tmp_path: Path) -> None:
    """`From: dev@example.com` (the form many mail clients write) and `<dev@example.com>`:
    `git am` takes the address for the name, where pq read an empty name (a commit git then
    refuses to rewrite: "empty ident name"); `git format-patch` of a commit with an empty
    message: `git am` gives it back empty, pq gave "\\n"."""
    import subprocess

    for value in ("dev@example.com", "<dev@example.com>"):
        assert mailheader.read_address(value) == ("dev@example.com", "dev@example.com")
    subprocess.run(["git", "-C", str(tmp_path), "init", "-q"], check=True)
    (tmp_path / "a.txt").write_text("one\n")
    subprocess.run(["git", "-C", str(tmp_path), "add", "a.txt"], check=True)
    subprocess.run(["git", "-C", str(tmp_path), "-c", "user.name=A", "-c", "user.email=a@b",
                    "commit", "-q", "--allow-empty-message", "-m", ""], check=True)
    data = subprocess.run(["git", "-C", str(tmp_path), "format-patch", "--root", "-1",
                           "--stdout", "HEAD"], check=True, capture_output=True).stdout
    assert patchfile.parse(data, "p.patch").message == ""
