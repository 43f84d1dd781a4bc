"""DEP-3 headers: a patch file's mirror of its series entry, for Debian and quilt tooling.

`series.yaml` is the source of truth; these headers are generated from it on every export
so that tools that read patch headers (quilt, gbp, lintian) see the same metadata.
"""

from __future__ import annotations

from typing import Any

from pq.model.series import PatchEntry

# The order pq writes them in, and the only keys it writes (and `pq audit` compares).
KEYS = ("Description", "X-Pq-Layer", "Bug", "Forwarded", "Applied-Upstream",
        "X-Pq-Workaround", "X-Pq-Covers", "X-Pq-Remove-When", "X-Pq-Reproducer")


def headers(entry: PatchEntry) -> list[tuple[str, str]]:
    """The DEP-3 headers for `entry`; tolerant of malformed blocks (the audit reports those)."""
    out: list[tuple[str, str]] = []
    if entry.summary:
        out.append(("Description", _one_line(entry.summary)))
    out.append(("X-Pq-Layer", entry.layer))
    wa = entry.workaround
    if not isinstance(wa, dict):
        return out
    issue = wa.get("issue")
    if isinstance(issue, dict) and "not-needed" in issue:
        issue = "not-needed"
    if isinstance(issue, str) and issue.strip().startswith(("http://", "https://")):
        out.append(("Bug", issue.strip()))
        out.append(("Forwarded", issue.strip()))
    elif isinstance(issue, str) and issue.strip().startswith("not-needed"):
        out.append(("Forwarded", "not-needed"))
    else:
        out.append(("Forwarded", "no"))
    kind = wa.get("kind")
    if isinstance(kind, str) and kind.strip():
        out.append(("X-Pq-Workaround", kind.strip()))
    covers = _texts(wa.get("covers"))
    if covers:
        out.append(("X-Pq-Covers", ", ".join(covers)))
    remove_when = _texts(wa.get("remove_when"))
    if remove_when:
        out.append(("X-Pq-Remove-When", "; ".join(remove_when)))
    mre = wa.get("mre")
    if isinstance(mre, str) and mre.strip():
        out.append(("X-Pq-Reproducer", mre.strip().rstrip("/")))
    return out


def _texts(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    out = []
    for item in items:
        if isinstance(item, dict) and len(item) == 1:
            key, val = next(iter(item.items()))
            item = f"{key}: {val}"
        if isinstance(item, str) and item.strip():
            out.append(_one_line(item))
    return out


def _one_line(text: str) -> str:
    return " ".join(text.split())
