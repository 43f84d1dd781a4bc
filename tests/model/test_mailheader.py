"""The plain forms mailheader reads and writes without the `email` package (an ASCII
`Name <mail>`, the dates `_rfc2822` writes) give exactly what the `email` package gives,
out-of-range fields and all; and a command that reads and writes only those forms does
not import it."""

from __future__ import annotations

import email.utils
import subprocess
import sys
from datetime import datetime

from hypothesis import event, given, settings
from hypothesis import strategies as st

from pq.model import mailheader

# Mostly ASCII digits; now and then Arabic-Indic or fullwidth ones, which `int()` reads too.
_OTHER_DIGITS = str.maketrans("0123456789", "٠١٢٣٤٥٦٧٨٩")
_WIDE_DIGITS = str.maketrans("0123456789", "０１２３４５６７８９")
digits2 = st.builds(lambda n, t: f"{n:02d}".translate(t), st.integers(0, 99),
                    st.sampled_from([{}] * 8 + [_OTHER_DIGITS, _WIDE_DIGITS]))
dates = st.builds(
    lambda wd, day, month, year, h, m, s, sign, zh, zm: (
        f"{wd}, {day} {month} {year} {h}:{m}:{s} {sign}{zh}{zm}"),
    st.sampled_from(["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"]),
    digits2, st.sampled_from(mailheader._MONTHS), st.integers(0, 9999).map(lambda y: f"{y:04d}"),
    digits2, digits2, digits2, st.sampled_from("+-"), digits2, digits2)


def email_reads(value: str) -> datetime | str:
    try:
        return email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError, OverflowError) as exc:
        return type(exc).__name__


def fast_reads(value: str) -> datetime | str | None:
    try:
        return mailheader._written_date(value)
    except (TypeError, ValueError, IndexError, OverflowError) as exc:
        return type(exc).__name__


@settings(max_examples=300, deadline=None)
@given(dates)
def test_a_written_date_reads_as_email_reads_it(value: str) -> None:
    fast = fast_reads(value)
    if fast is not None:  # None: a form left to email (a year before 1000, -0000)
        assert fast == email_reads(value)
        assert type(fast) is type(email_reads(value))
        if isinstance(fast, datetime):
            assert fast.utcoffset() == email_reads(value).utcoffset()  # type: ignore[union-attr]


def test_the_forms_left_to_email() -> None:
    assert mailheader.read_date("Mon, 01 Jan 2024 00:00:00 -٠٠٠٠") is None  # email's -0000
    assert mailheader.read_date("١٢٣ +0000") is None  # git's own form is ASCII: fsck badDate
    assert mailheader._written_date("Tue, 14 Nov 0050 22:13:20 +0000") is None  # 2050 there
    assert mailheader._written_date("Tue, 14 Nov 2023 22:13:20 -0000") is None  # no zone
    assert mailheader._written_date("Tue, 4 Nov 2023 22:13:20 +0000") is None
    assert mailheader.read_date("Tue, 14 Nov 2023 22:13:20 -0000") == "1700000000 +0000"
    assert mailheader.read_date("Tue, 14 Nov 2023 22:13:20 +0099") == "1699994060 +0139"
    assert mailheader.read_date("Tue, 14 Nov 2023 22:13:20 +2400") is None


# Half plain, half near it (specials, doubled spaces and dots, empty words).
names = st.lists(st.text("aZ09", min_size=1, max_size=6) | st.text("aZ09 .-_'\"\\", max_size=6),
                 min_size=1, max_size=3).map(" ".join)
mails = st.builds(lambda a, b: f"{a}@{b}",
                  st.from_regex(r"[a-z0-9_+-]+(\.[a-z0-9_+-]+)*", fullmatch=True)
                  | st.text("aZ9._+-", min_size=1, max_size=8),
                  st.from_regex(r"[a-z0-9-]+(\.[a-z0-9-]+)*", fullmatch=True)
                  | st.text("a9.-", min_size=1, max_size=8))


@settings(max_examples=300, deadline=None)
@given(names, mails)
def test_a_plain_address_reads_and_writes_as_email_does(name: str, mail: str) -> None:
    value = f"{name} <{mail}>"
    event("plain" if mailheader._PLAIN_ADDRESS.fullmatch(value) else "left to email")
    if mailheader._PLAIN_ADDRESS.fullmatch(value):
        assert email.utils.parseaddr(value) == (name, mail)
        assert email.utils.formataddr((name, mail)) == value
        assert mailheader.read_address(value) == (name, mail)
        assert mailheader.address(name, mail) == value


def test_reading_and_writing_plain_patches_never_imports_email() -> None:
    code = ("import sys\nfrom pq.model import mailheader as m\n"
            "assert m.address('Bench Author', 'a.b@example.com') == "
            "'Bench Author <a.b@example.com>'\n"
            "assert m.read_address('Bench Author <a.b@example.com>')\n"
            "assert m.read_date(m.date('1700000000 -0130')) == '1700000000 -0130'\n"
            "assert m.encode('fix: a plain subject') == 'fix: a plain subject'\n"
            "print(sorted(n for n in sys.modules if n == 'email' or n.startswith('email.')))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    assert out.strip() == "[]"
