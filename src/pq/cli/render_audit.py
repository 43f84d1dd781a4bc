"""The audit as people read it: the terminal table of `pq audit workarounds`, and Markdown
for a pull request (`--markdown`). The JSON (`--json`) is `pq.audit.report.data`.

The findings block, the acknowledgement block and the counts line are the one output format
of findings: `pq lint` prints them too (pq.cli.lint).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from pq.audit.api import Acknowledged, AuditReport, WorkaroundRow
from pq.audit.rules import ERROR, WARNING, Finding
from pq.cli import markdown as md
from pq.cli.common import plural
from pq.model.metadata import Acknowledgement


def _issue_short(row: WorkaroundRow) -> str:
    issue = row.workaround.issue
    if issue is None:
        return "-"
    if issue.url:
        m = re.search(r"/(?:issues|pull)/(\d+)", issue.url)
        if m:
            return f"#{m.group(1)}"
        return "search" if re.search(r"[?&]q=", issue.url) else "link"
    return "not-needed"


def _mre_short(row: WorkaroundRow) -> str:
    if not row.workaround.mre:
        return "-"
    if not row.mre_present:
        return "missing"
    run = row.mre_run
    if run is None:
        return "yes"
    if run.error:
        return "error"
    return "timeout" if run.timed_out else f"exit {run.exit_code}"


def counts(findings: Sequence[Finding], acknowledged: Sequence[Acknowledged]) -> str:
    n_err = sum(f.severity == ERROR for f in findings)
    n_warn = sum(f.severity == WARNING for f in findings)
    text = (f"{plural(len(findings), 'finding')} ({plural(n_err, 'error')}, "
            f"{plural(n_warn, 'warning')})")
    if acknowledged:
        text += f", {len(acknowledged)} acknowledged (not counted)"
    return text


def _summary(report: AuditReport) -> str:
    text = counts(report.findings, report.acknowledged)
    text += f"; {plural(len(report.removable), 'workaround')} removable"
    if report.strict:
        text += " (--strict)"
    return text


def _heading(report: AuditReport) -> str:
    tip = (f"{report.upstream_ref} tip {report.upstream_commit[:12]}" if report.upstream_commit
           else f"{report.upstream_ref} not found")
    paddle = f"paddle {report.paddle_version}" if report.paddle_version else "paddle unknown"
    src = "" if report.source == "worktree" else f" in {report.source[:12]}"
    return (f"{plural(len(report.workarounds), 'workaround')} in "
            f"{plural(report.patches, 'patch', 'patches')}{src} (base {report.base[:12]}; "
            f"{tip}; {paddle})")


def base_note(base: str, lost: str = "lines copied from upstream files count as the "
                                    "fork's own") -> str:
    """Said when the series' base commit is not in the repository: what that costs."""
    return (f"note: the base {base[:12]} is not a commit in this repository (a shallow "
            f"clone?): {lost}; fetch it first (`git fetch --unshallow` in a shallow clone, "
            f"else a fetch of the upstream series.yaml names)")


def finding_lines(findings: Sequence[Finding]) -> list[str]:
    """The `findings:` block: each finding, its message and its fix."""
    if not findings:
        return []
    lines = ["findings:"]
    for f in findings:
        where = f"  {f.location}" if f.location else ""
        lines.append(f"  {f.severity:<7}  {f.rule_id} {f.rule}  {f.patch}{where}")
        lines.append(f"           {f.message}")
        lines.append(f"           fix: {f.fix}")
    lines.append("")
    return lines


def ack_lines(acknowledged: Sequence[Acknowledged],
              unused: Sequence[Acknowledgement]) -> list[str]:
    lines = []
    if acknowledged:
        lines.append("acknowledged in series.yaml (reported, not counted):")
        for a in acknowledged:
            f = a.finding
            lines.append(f"  {f.severity:<7}  {f.rule_id} {f.rule}  {f.patch}  {a.location}")
            lines.append(f"           {f.message}")
            lines.append(f"           reason: {a.reason}")
        lines.append("")
    if unused:
        lines.append("acknowledgements that match no finding (remove them):")
        for u in unused:
            lines.append(f"  {u.rule}  {u.patch}  {u.location}")
        lines.append("")
    return lines


# -- the table -------------------------------------------------------------------------


def table(report: AuditReport) -> str:
    lines = [_heading(report), *([] if report.base_present else [base_note(report.base)]), ""]
    if report.workarounds:
        head = ("PATCH", "LAYER", "KIND", "REMOVAL", "ISSUE", "MRE", "FINDINGS")
        rows = [(w.patch, w.layer, w.workaround.kind or "-", w.removal, _issue_short(w),
                 _mre_short(w), ",".join(w.findings) or "-") for w in report.workarounds]
        widths = [max(len(r[i]) for r in rows + [head]) for i in range(len(head))]

        def fmt(r: tuple[str, ...]) -> str:
            return "  ".join(c.ljust(widths[i]) for i, c in enumerate(r)).rstrip()

        lines.append(fmt(head))
        cw = min(40, max((len(_one_line(s.condition.text)) for w in report.workarounds
                          for s in w.conditions), default=0))
        for w, r in zip(report.workarounds, rows):
            lines.append(fmt(r))
            covers = ", ".join(str(c) for c in w.workaround.covers or ()) or "-"
            lines.append(f"    covers {covers}")
            for s in w.conditions:
                detail = f"  {s.detail}" if s.detail else ""
                lines.append(f"    {_one_line(s.condition.text).ljust(cw)}  "
                             f"{s.state.ljust(7)}{detail}".rstrip())
        lines.append("")
    lines += finding_lines(report.findings)
    lines += ack_lines(report.acknowledged, report.unused_acknowledgements)
    lines.append(_summary(report))
    return "\n".join(lines)


def _one_line(text: str) -> str:
    """A condition written over several lines (a `manual:` note), in one line of a table."""
    return " ".join(text.split())


# -- Markdown ------------------------------------------------------------------------------


def markdown(report: AuditReport) -> str:
    out = ["### pq audit: workarounds", "", md.cell(_heading(report)), ""]
    if not report.base_present:
        out += [md.cell(base_note(report.base)), ""]
    if report.workarounds:
        out += ["| Patch | Layer | Kind | Covers | Removal | Conditions | Issue | MRE | Findings |",
                "|---|---|---|---|---|---|---|---|---|"]
        for w in report.workarounds:
            conds = "<br>".join(f"{md.code(s.condition.text)}: {s.state}"
                                for s in w.conditions) or "-"
            issue = w.workaround.issue
            issue_md = (f"[{_issue_short(w)}]({issue.url})" if issue and issue.url
                        else _issue_short(w))
            mre = f"`{w.workaround.mre}` ({_mre_short(w)})" if w.workaround.mre else "-"
            covers = "<br>".join(md.code(str(c)) for c in w.workaround.covers or ()) or "-"
            out.append(f"| `{w.patch}` | {w.layer} | {w.workaround.kind or '-'} | {covers} | "
                       f"**{w.removal}** | {conds} | {issue_md} | {mre} | "
                       f"{', '.join(w.findings) or '-'} |")
        out.append("")
    if report.findings:
        out += ["#### Findings", "", "| | Rule | Patch | Finding | Fix |", "|---|---|---|---|---|"]
        for f in report.findings:
            mark = "error" if f.severity == "error" else "warning"
            out.append(f"| {mark} | {f.rule_id} {f.rule} | `{f.patch}` | {md.cell(f.message)} | "
                       f"{md.cell(f.fix)} |")
        out.append("")
    else:
        out += ["No findings.", ""]
    if report.acknowledged:
        out += ["#### Acknowledged (reported, not counted)", "",
                "| | Rule | Patch | Finding | Reason |", "|---|---|---|---|---|"]
        for a in report.acknowledged:
            f = a.finding
            out.append(f"| {f.severity} | {f.rule_id} {f.rule} | `{f.patch}` | "
                       f"{md.cell(f.message)} | {md.cell(a.reason)} |")
        out.append("")
    if report.unused_acknowledgements:
        out += ["Acknowledgements that match no finding (remove them): "
                + ", ".join(f"{u.rule} on `{u.patch}` ({u.location})"
                            for u in report.unused_acknowledgements), ""]
    out.append(_summary(report) + ".")
    return "\n".join(out) + "\n"
