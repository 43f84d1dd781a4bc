"""pq.model.yamledit: edits of a YAML file's own text. Each expected text is written out;
what the edit must load to is checked with PyYAML, independently of pq's loader."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from pq.model import yamldoc, yamledit

TEXT = """\
# top comment
version: 1
upstream:
  ref: 'upstream/main'  # the ref the fork follows
  base: aaaa
tags: [a, b]  # flow list

patches:
  # first
  - name: one.patch
    layer: build
  - name: two.patch  # second
    layer: kernel
"""


def data(text: str) -> Any:
    return yaml.safe_load(text)


def rewrite(new: Any, text: str = TEXT) -> str:
    out = yamledit.rewrite(text, yamldoc.load(text.encode(), "f").data, new)
    assert out is not None
    assert data(out) == new
    return out


def test_same_data_is_the_same_text() -> None:
    assert yamledit.rewrite(TEXT, data(TEXT), data(TEXT)) == TEXT


def test_scalar_keeps_its_quoting_and_comment() -> None:
    new = data(TEXT)
    new["upstream"]["ref"] = "upstream/next"
    new["upstream"]["base"] = "bbbb"
    assert rewrite(new) == TEXT.replace("'upstream/main'", "'upstream/next'").replace(
        "base: aaaa", "base: bbbb")


def test_reorder_and_drop_items_keep_their_comments() -> None:
    new = data(TEXT)
    new["patches"] = [new["patches"][1]]
    # a comment above the first item opens the list: it stays where the list starts
    assert rewrite(new) == TEXT.replace("  - name: one.patch\n    layer: build\n", "")
    new = data(TEXT)
    new["patches"].reverse()
    out = rewrite(new)
    assert "  - name: two.patch  # second\n    layer: kernel\n" in out
    assert "# top comment\n" in out and "tags: [a, b]  # flow list\n" in out


SECTIONS = """\
patches:
  - name: one.patch
    layer: build

  # ==== team X owns what follows ====

  - name: two.patch
    layer: kernel
  - name: three.patch
    layer: kernel
"""


def test_a_section_comment_goes_with_the_item_it_heads() -> None:
    """A comment between two items, blank lines around it, heads the item below: dropping
    the item above deleted it, and a reorder dragged it along with the item above."""
    new = data(SECTIONS)
    new["patches"] = new["patches"][1:]
    assert rewrite(new, SECTIONS) == SECTIONS.replace(
        "  - name: one.patch\n    layer: build\n\n", "")
    new = data(SECTIONS)
    new["patches"] = [new["patches"][2], new["patches"][0], new["patches"][1]]
    out = rewrite(new, SECTIONS)
    assert "  # ==== team X owns what follows ====\n\n  - name: two.patch\n" in out
    assert out.index("one.patch") < out.index("team X") < out.index("two.patch")


def test_new_item_is_rendered_like_its_siblings() -> None:
    new = data(TEXT)
    new["patches"].append({"name": "three.patch", "layer": "build"})
    assert rewrite(new) == TEXT + "  - name: three.patch\n    layer: build\n"


def test_new_key_keeps_the_rest() -> None:
    new = data(TEXT)
    new["gate"] = {"stages": ["x"]}
    out = rewrite(new)
    assert out.startswith(TEXT.rstrip("\n"))


def test_crlf_file_stays_crlf() -> None:
    text = TEXT.replace("\n", "\r\n")
    new = data(text)
    new["upstream"]["base"] = "cccc"
    out = rewrite(new, text)
    assert "\n" not in out.replace("\r\n", "")


@pytest.mark.parametrize("text", ["[1, 2]\n", "{a: 1}\n"])
def test_unsafe_shapes_give_none(text: str) -> None:
    assert yamledit.rewrite(text, data(text), {"a": 2}) is None


def test_same_is_strict_about_types_and_order() -> None:
    assert yamledit.same({"a": 1, "b": 2}, {"a": 1, "b": 2})
    assert not yamledit.same({"a": 1, "b": 2}, {"b": 2, "a": 1})
    assert not yamledit.same(1, True) and not yamledit.same(1, 1.0)


scalars = st.one_of(st.integers(-5, 5), st.booleans(), st.none(),
                    st.text("abc: #-'\"", max_size=6))


@settings(max_examples=60, deadline=None)
@given(ref=scalars, base=scalars, layer=scalars, drop=st.booleans())
def test_any_edit_loads_to_the_new_data_or_is_refused(ref: Any, base: Any, layer: Any,
                                                      drop: bool) -> None:
    new = data(TEXT)
    new["upstream"]["ref"] = ref
    new["upstream"]["base"] = base
    new["patches"][0]["layer"] = layer
    if drop:
        del new["tags"]
    out = yamledit.rewrite(TEXT, data(TEXT), new)
    if out is not None:
        assert yamldoc.load(out.encode(), "f").data == new
        assert "# top comment\n" in out and "# the ref the fork follows" in out
