"""pq.model.yamldoc without a repository: located values, the refusals (each with its
file:line:column), and the deterministic dump."""

from __future__ import annotations

import pytest

from pq.errors import ConfigError
from pq.model import yamldoc


def error_of(text: bytes) -> str:
    with pytest.raises(ConfigError) as info:
        yamldoc.load(text, "f.yaml")
    return str(info.value)


def test_values_and_their_positions() -> None:
    doc = yamldoc.load(b"a: 1\nb:\n  - x\n  - {c: true, d: null}\n", "f.yaml")
    assert doc.data == {"a": 1, "b": ["x", {"c": True, "d": None}]}
    assert doc.marks[("a",)] == (1, 4)
    assert doc.marks[("b", 0)] == (3, 5)
    assert doc.marks[("b", 1, "d")] == (4, 18)
    assert doc.where(("b", 1, "missing", "deeper")) == (4, 5)  # the nearest located parent
    assert doc.text.startswith("a: 1\n") and doc.filename == "f.yaml"


def test_empty_document_is_none() -> None:
    assert yamldoc.load(b"", "f.yaml").data is None
    assert yamldoc.load(b"# only a comment\n", "f.yaml").data is None


def test_dates_and_binary_stay_text() -> None:
    assert yamldoc.load(b"d: 2024-01-02\n", "f.yaml").data == {"d": "2024-01-02"}


def test_located_error_names_file_line_column() -> None:
    doc = yamldoc.load(b"a:\n  b: 2\n", "f.yaml")
    err = doc.error(("a", "b"), "bad b", hint="fix b")
    assert str(err) == "f.yaml:2:6: bad b" and err.hint == "fix b"
    assert (err.path, err.line, err.column) == ("f.yaml", 2, 6)


@pytest.mark.parametrize("text,expected", [
    (b"a: &x 1\nb: *x\n", "f.yaml:1:4: invalid YAML: anchors and aliases are not allowed"),
    (b"a: 1\na: 2\n", "f.yaml:2:1: duplicate key 'a'"),
    (b"base: {x: 1}\nother:\n  <<: {y: 2}\n", "f.yaml:3:3: YAML merge keys (<<)"),
    (b"? [a]\n: 1\n", "f.yaml:1:3: mapping keys must be plain strings"),
    (b"a: [1, 2\n", "f.yaml:2:1: invalid YAML:"),
    (b"a: 1\n---\nb: 2\n", "f.yaml:2:1: invalid YAML:"),
    (b"ok: 1\nbad: \xff\n", "f.yaml:2:6: not valid UTF-8 (byte 0xff)"),
    (b"a: !!int x\n", "f.yaml:1:4: bad value:"),
    (b"a: !!float y\n", "f.yaml:1:4: bad value:"),
    (b"a: !!bool maybe\n", "f.yaml:1:4: bad value:"),
    # Past 4300 digits Python's own refusal named a Python setting and an `int` tag.
    (b"x-note: " + b"9" * 5000 + b"\n", "f.yaml:1:9: a number of 5000 characters, more than "
                                        "any value pq reads"),
])
def test_refusals_are_located(text: bytes, expected: str) -> None:
    assert error_of(text).startswith(expected)


def test_depth_limit_is_exact() -> None:
    def nested(n: int) -> bytes:
        return b"[" * n + b"]" * n

    assert yamldoc.load(nested(yamldoc.MAX_DEPTH), "f.yaml").data is not None
    assert f"nested deeper than {yamldoc.MAX_DEPTH} levels" in error_of(
        nested(yamldoc.MAX_DEPTH + 1))


def test_size_limits() -> None:
    assert "more than pq reads" in error_of(b"#" * (yamldoc.MAX_BYTES + 1))
    assert f"more than {yamldoc.MAX_NODES} YAML nodes" in error_of(b"- a\n" * yamldoc.MAX_NODES)


def test_dump_is_deterministic_block_yaml_that_loads_back() -> None:
    shared = {"k": "v"}
    data = {"z": 1, "a": [shared, shared], "text": "two\nlines\n", "u": "ümlaut"}
    out = yamldoc.dump(data)
    assert out == ("z: 1\na:\n  - k: v\n  - k: v\ntext: |\n  two\n  lines\nu: ümlaut\n")
    assert yamldoc.load(out.encode(), "f.yaml").data == data


def test_dump_keeps_every_character_a_path_or_message_can_hold() -> None:
    """Every character outside the surrogates, alone, inside a line and after a line break,
    loads back as it was: NEL (U+0085), a line break to YAML, folded to a space or a line
    break in any style but double quotes (an upstream file renamed to hold one reached
    series.yaml through a workaround's `covers`)."""
    chars = [chr(c) for c in (*range(0x3100), 0xFEFF, 0xFFFD, 0xFFFE, 0x1F600)
             if not 0xD800 <= c < 0xE000]
    values = [v for ch in chars for v in (ch, f"a{ch}b", f"a\n{ch}b", f"{ch}\nx", f"x {ch}")]
    data = {"covers": values}
    assert yamldoc.load(yamldoc.dump(data).encode(), "f.yaml").data == data
    assert yamldoc.dump({"mre": "mre/a\x85b"}) == 'mre: "mre/a\\Nb"\n'


def test_a_committed_file_that_is_not_utf8_is_named_with_its_commit_and_a_command_that_works(
        ) -> None:
    """The error names the committed version ("series.yaml (in <commit>)"); the suggested
    `iconv` names the file alone, so that it can be pasted."""
    with pytest.raises(ConfigError) as caught:
        yamldoc.load("a: caf\xe9\n".encode("latin-1"), "series.yaml (in 0c7307fa1b2c)")
    assert caught.value.path == "series.yaml (in 0c7307fa1b2c)"
    assert "`iconv -f latin1 -t utf-8 series.yaml`" in str(caught.value.hint)
