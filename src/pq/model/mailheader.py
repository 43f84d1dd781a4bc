"""Mail header values that read back exactly: names, e-mail addresses, dates, subjects.

`encode` writes a value as plain text where a mail reader gives it back unchanged, else as
RFC 2047 words of its exact bytes (`unknown-8bit` where they are not UTF-8); `decode` is
its inverse and also reads what `git format-patch` writes. Text is a commit's bytes read
as UTF-8 with surrogateescape, so any bytes round trip.

The plain forms pq writes itself (an ASCII `Name <mail>`, the date `_rfc2822` writes) are
read by a pattern that gives what the `email` package gives for them; everything else goes
through the `email` package, imported then (~6 ms that most commands need not pay).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta, timezone
from functools import lru_cache

_ENC = ("utf-8", "surrogateescape")


def is_ascii(text: str) -> bool:
    try:
        text.encode("ascii")
        return True
    except UnicodeEncodeError:
        return False


_ENCODED_WORD = re.compile(r"=\?([^?\s]*)\?([bBqQ])\?([^?\s]*)\?=")


def encode(value: str) -> str:
    """`value` as a header value that `decode` reads back exactly."""
    # git's mailinfo takes any `=?` for the start of an encoded word and refuses the mail
    # when none follows, so a plain value never holds one (git format-patch encodes it too).
    if is_ascii(value) and "=?" not in value and decode(value) == value \
            and value == value.strip() and all(" " <= c <= "~" or c == "\t" for c in value):
        return value
    import email.header

    try:
        value.encode("utf-8")
        encoded = email.header.Header(value, "utf-8", maxlinelen=1_000_000).encode()
        if "\n" not in encoded and decode(encoded) == value:
            return encoded
    except UnicodeEncodeError:
        pass
    return _b_word(value)


def _b_word(value: str) -> str:
    """One RFC 2047 word holding the exact bytes; `unknown-8bit` where they are not UTF-8."""
    import base64

    raw = value.encode(*_ENC)
    try:
        raw.decode("utf-8")
        charset = "UTF-8"
    except UnicodeDecodeError:
        charset = "unknown-8bit"
    return f"=?{charset}?B?{base64.b64encode(raw).decode('ascii')}?="


# An ASCII name of plain words and an address of plain dot-separated parts: read and
# written as they stand (email.utils.parseaddr and formataddr give the same).
_PLAIN_ADDRESS = re.compile(r"((?:[A-Za-z0-9]+ )*[A-Za-z0-9]+) "
                            r"<([A-Za-z0-9_+-]+(?:\.[A-Za-z0-9_+-]+)*"
                            r"@[A-Za-z0-9-]+(?:\.[A-Za-z0-9-]+)*)>")


@lru_cache(maxsize=1024)  # a series has few authors: each is written once
def address(name: str, mail: str) -> str:
    if _PLAIN_ADDRESS.fullmatch(plain := f"{name} <{mail}>"):
        return plain
    if is_ascii(name) and is_ascii(mail) and "=?" not in name:  # see encode
        import email.utils

        plain = email.utils.formataddr((name, mail))
    else:
        plain = f"{encode(name)} <{mail}>"
    if "\n" not in plain and "=?" not in mail and plain == plain.strip() \
            and read_address(plain) == (name, mail):
        return plain
    return f"{_b_word(name)} <{_b_word(mail)}>"


@lru_cache(maxsize=1024)  # ... and read once
def read_address(value: str) -> tuple[str, str] | None:
    """(name, e-mail) of a From: header; None if it names no address."""
    if plain := _PLAIN_ADDRESS.fullmatch(value):
        return plain.group(1), plain.group(2)
    m = re.fullmatch(r"(=\?[^?\s]*\?[bBqQ]\?[^?\s]*\?=) <(.*)>", value)
    if m:
        mail = m.group(2)
        return decode(m.group(1)), decode(mail) if _ENCODED_WORD.fullmatch(mail) else mail
    if "@" not in value and not re.search(r"<[^>]*>", value):
        return None  # git's mailinfo finds no sender in it either: `git am` refuses it
    import email.utils

    name, mail = email.utils.parseaddr(value)
    if not mail and not re.search(r"<\s*>\s*$", value):
        return None
    if not name.strip() and not mail:
        return None  # git refuses an empty identity
    # A bare address (`From: dev@example.com`, `<dev@example.com>`): the address is the
    # name too, as `git am` reads it (an empty name is no identity git writes).
    return (decode(name) if name.strip() else mail), mail


def date(raw_date: str) -> str:
    """RFC 2822 where it carries the git date exactly, else git's own `<epoch> <+hhmm>`."""
    try:
        text = _rfc2822(raw_date)
        if read_date(text) == raw_date:
            return text
    except (ValueError, OverflowError, OSError, IndexError):
        pass
    return raw_date


def _rfc2822(raw_date: str) -> str:
    epoch, tz = raw_date.split()
    sign = -1 if tz[0] == "-" else 1
    offset = timedelta(hours=int(tz[1:3]), minutes=int(tz[3:5])) * sign
    when = datetime.fromtimestamp(int(epoch), timezone(offset))
    return when.strftime("%a, %d %b %Y %H:%M:%S ") + tz


def decode(value: str) -> str:
    """A header value with its RFC 2047 words decoded; the exact inverse of `_header_value`.

    Words in UTF-8 or `unknown-8bit` give their bytes back as they were (surrogateescaped
    where they are not UTF-8); other charsets are decoded as they say."""
    if "=?" not in value:
        return value
    import email.header

    try:
        parts = email.header.decode_header(value)
    except Exception:
        return value
    out = []
    for chunk, charset in parts:
        if isinstance(chunk, str):
            out.append(chunk)
        elif charset is None:
            out.append(chunk.decode("raw-unicode-escape"))
        elif charset.lower() in ("utf-8", "utf8", "unknown-8bit", "us-ascii"):
            out.append(chunk.decode(*_ENC))
        else:
            try:
                out.append(chunk.decode(charset))
            except (LookupError, UnicodeDecodeError):
                out.append(chunk.decode(*_ENC))
    return "".join(out)


def read_date(value: str) -> str | None:
    """git's `<epoch> <+hhmm>` for a Date: header (RFC 2822, or git's own form)."""
    if (raw := re.fullmatch(r"(\d+) [+-]\d{4}", value, re.ASCII)) is not None:
        # What git fsck refuses in a commit is refused here: a zero-padded date, or one
        # past git's signed 64-bit time (badDateOverflow; thousands of digits are past
        # int() too).
        epoch = raw.group(1)
        return None if (epoch[0] == "0" and epoch != "0") or len(epoch) > 20 \
            or int(epoch) >= 2**63 else value
    try:
        when = _written_date(value) or _email_date(value)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None
    if when is None:
        return None
    if when.tzinfo is None:
        # `-0000` (RFC 2822: UTC, local offset unknown) reads as +0000, as `git am` reads
        # it; no zone, or a name Python does not know, is refused.
        if not re.search(r"\s-0000(?:\s*\(.*\))?\s*$", value):
            return None
        when = when.replace(tzinfo=UTC)
    if when.timestamp() < 0:
        return None  # before 1970: no commit can carry it (`git am` refuses it too)
    offset = when.utcoffset()
    assert offset is not None
    minutes = int(offset.total_seconds()) // 60
    sign = "-" if minutes < 0 else "+"
    return f"{int(when.timestamp())} {sign}{abs(minutes) // 60:02d}{abs(minutes) % 60:02d}"


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")
# The form `_rfc2822` writes, in ASCII digits, with a year from 1000 (email reads "0050" as
# 2050) and a zone other than -0000 (which email reads as no zone).
_WRITTEN_DATE = re.compile(r"(?:Mon|Tue|Wed|Thu|Fri|Sat|Sun), (\d\d) (" + "|".join(_MONTHS)
                           + r") ([1-9]\d{3}) (\d\d):(\d\d):(\d\d) ([+-])(\d\d)(\d\d)",
                           re.ASCII)  # `-٠٠٠٠` reads as -0000 to email: no zone


def _written_date(value: str) -> datetime | None:
    """What email.utils.parsedate_to_datetime gives for a date in the form `_rfc2822`
    writes (its errors too: a day, hour or zone out of range); None for any other form."""
    m = _WRITTEN_DATE.fullmatch(value)
    if m is None or value.endswith("-0000"):
        return None
    day, month, year, hour, minute, second, sign, tz_h, tz_m = m.groups()
    offset = (int(tz_h) * 3600 + int(tz_m) * 60) * (-1 if sign == "-" else 1)
    return datetime(int(year), _MONTHS.index(month) + 1, int(day), int(hour), int(minute),
                    int(second), tzinfo=timezone(timedelta(seconds=offset)))


def _email_date(value: str) -> datetime | None:
    import email.utils

    return email.utils.parsedate_to_datetime(value)
