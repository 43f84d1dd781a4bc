"""Markdown table cells as GitHub renders them (`pq report`, `pq audit --markdown`)."""

from __future__ import annotations

from pq.cli.markdown import cell, code


def test_a_cell_shows_html_in_prose_as_text_and_leaves_code_spans_as_written() -> None:
    """A code span shows its text as written, an entity too: the WA010 fix's
    `scope={"<package>"}` read `&lt;package&gt;` in a pull request."""
    text = 'use `paddle.enable_compat(scope={"<package>"})` for <b>this</b> | that'
    assert cell(text) == ('use `paddle.enable_compat(scope={"<package>"})` for '
                          "&lt;b&gt;this&lt;/b&gt; \\| that")
    assert cell("``a`<b>`` and `unclosed <i>") == "``a`<b>`` and `unclosed &lt;i&gt;"
    assert cell("`#include <x.h>`\n`<y>`") == "`#include <x.h>` `<y>`"
    assert code("a`b") == "``a`b``"
