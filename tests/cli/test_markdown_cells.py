"""Table cells of `pq report` and `pq audit --markdown` render as the text they hold."""

from __future__ import annotations

import pytest

from pq.cli import markdown as md


@pytest.mark.parametrize("text,cell", [
    ("Include <torch/library.h> for TORCH_LIBRARY", "Include &lt;torch/library.h&gt; for "
                                                     "TORCH_LIBRARY"),  # no tag GitHub hides
    ("a | b\nc & d", "a \\| b c &amp; d"),
])
def test_a_cell_is_one_line_of_text(text: str, cell: str) -> None:
    assert md.cell(text) == cell


@pytest.mark.parametrize("text,span", [
    ("paddle >= 3.4", "`paddle >= 3.4`"),
    ("manual: ask | someone `now`", "`` manual: ask \\| someone `now` ``"),
    ("a ``b`` c", "```a ``b`` c```"),
])
def test_a_code_span_is_not_ended_by_a_backtick_it_holds(text: str, span: str) -> None:
    assert md.code(text) == span
