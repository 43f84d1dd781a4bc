"""DEP-3 headers: a patch file's mirror of its series entry, for Debian and quilt tooling.

`series.yaml` is the source of truth; these headers are generated from it on every export
so that tools that read patch headers (quilt, gbp, lintian) see the same metadata.
"""

from __future__ import annotations

from pq.series import PatchEntry

# The order pq writes them in, and the only keys it writes.
KEYS = ("Description", "X-Pq-Layer", "Bug", "Forwarded", "Applied-Upstream")


def headers(entry: PatchEntry) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = [("X-Pq-Layer", entry.layer)]
    if entry.summary:
        out.insert(0, ("Description", entry.summary))
    wa = entry.workaround
    if isinstance(wa, dict):
        issue = wa.get("issue")
        if isinstance(issue, str) and issue.startswith(("http://", "https://")):
            out.append(("Bug", issue))
            out.append(("Forwarded", issue))
        elif isinstance(issue, str) and issue.startswith("not-needed"):
            out.append(("Forwarded", "not-needed"))
        elif isinstance(issue, dict) and "not-needed" in issue:
            out.append(("Forwarded", "not-needed"))
        else:
            out.append(("Forwarded", "no"))
    return out
