"""pq.model.dep3: the DEP-3 headers mirror a series entry, whatever shape its block has."""

from __future__ import annotations

from typing import Any

import pytest

from pq.model import dep3
from pq.model.series import PatchEntry


def headers(workaround: Any = None, summary: str = "enable  compat\nfor\tpaddle") -> list[
        tuple[str, str]]:
    return dep3.headers(PatchEntry("0001-x.patch", "build", summary, workaround))


def test_plain_entry() -> None:
    assert headers() == [("Description", "enable compat for paddle"), ("X-Pq-Layer", "build")]
    assert headers(summary="") == [("X-Pq-Layer", "build")]


def test_full_workaround_block() -> None:
    wa = {"kind": " compat-gap ", "issue": " https://example.com/i/1 ",
          "covers": ["tests/a.py::t", "", {"symbol": "at::x"}],
          "remove_when": [{"paddle": ">= 3.4"}, "upstream-contains: abc"],
          "mre": "mre/gap/"}
    assert headers(wa)[2:] == [
        ("Bug", "https://example.com/i/1"), ("Forwarded", "https://example.com/i/1"),
        ("X-Pq-Workaround", "compat-gap"), ("X-Pq-Covers", "tests/a.py::t, symbol: at::x"),
        ("X-Pq-Remove-When", "paddle: >= 3.4; upstream-contains: abc"),
        ("X-Pq-Reproducer", "mre/gap")]


@pytest.mark.parametrize("issue,forwarded", [
    ("not-needed: upstream has it", "not-needed"),
    ({"not-needed": "why"}, "not-needed"),
    (None, "no"),
    ("see chat", "no"),
    (42, "no"),
])
def test_forwarded(issue: Any, forwarded: str) -> None:
    assert ("Forwarded", forwarded) in headers({"issue": issue})
    assert not any(k == "Bug" for k, _ in headers({"issue": issue}))


@pytest.mark.parametrize("block", [["not", "a", "mapping"], "text", 3])
def test_malformed_block_gives_only_the_entry_headers(block: Any) -> None:
    assert headers(block) == headers()


def test_every_header_is_a_known_key() -> None:
    wa = {"kind": "k", "issue": "https://x", "covers": "c", "remove_when": "r", "mre": "m"}
    emitted = [k for k, _ in headers(wa)]
    assert emitted == [k for k in dep3.KEYS if k != "Applied-Upstream"]
