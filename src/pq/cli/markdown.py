"""Text in a Markdown table cell as GitHub renders it (`pq report`, `pq audit --markdown`):
one line with its pipes escaped; prose with its HTML shown as text, code in a code span
whatever backticks it holds."""

from __future__ import annotations

import html
import re

_CODE_SPAN = re.compile(r"(`+)(?!`)(.+?)(?<!`)\1(?!`)", re.S)


def cell(text: str) -> str:
    """Prose for a cell: `<b>` in a summary is shown, not rendered. Its code spans (a
    message's `#include <torch/library.h>`) are left as they are: Markdown shows their
    text as written, an entity too (`&lt;` would show as such)."""
    out, at = [], 0
    for m in _CODE_SPAN.finditer(text):
        out += [html.escape(text[at:m.start()], quote=False), m.group()]
        at = m.end()
    out.append(html.escape(text[at:], quote=False))
    return "".join(out).replace("|", "\\|").replace("\n", " ")


def code(text: str) -> str:
    """A code span of `text`: fenced by more backticks than it holds in a row (and padded
    where it starts or ends with one), so that a backtick in it does not end it early."""
    text = text.replace("|", "\\|").replace("\n", " ")
    fence = "`" * (max(map(len, re.findall(r"`+", text)), default=0) + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"
