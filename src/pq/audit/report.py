"""The audit as JSON data: the shape documented in docs/audit.md, stable (`version` changes
if it must). The terminal table and the Markdown are `pq.cli.render_audit`'s.
"""

from __future__ import annotations

from typing import Any

from pq.audit.api import AuditReport, WorkaroundRow

JSON_VERSION = 1


# -- JSON ------------------------------------------------------------------------------


def _row_data(w: WorkaroundRow) -> dict[str, Any]:
    wa = w.workaround
    return {
        "patch": w.patch,
        "layer": w.layer,
        "kind": wa.kind,
        "covers": [str(c) for c in wa.covers] if wa.covers else None,
        "reason": wa.reason,
        "issue": str(wa.issue) if wa.issue else None,
        "mre": wa.mre,
        "mre_present": w.mre_present,
        "marker": wa.marker or (f"none: {wa.no_marker}" if wa.no_marker else None),
        "conditions": [{"condition": s.condition.text, "kind": s.condition.kind,
                        "state": s.state, "detail": s.detail} for s in w.conditions],
        "removal": w.removal,
        "mre_run": w.mre_run.to_data() if w.mre_run else None,
        "findings": list(w.findings),
    }


def data(report: AuditReport) -> dict[str, Any]:
    return {
        "version": JSON_VERSION,
        "source": report.source,
        "base": report.base,
        "base_present": report.base_present,
        "upstream": {"ref": report.upstream_ref, "commit": report.upstream_commit},
        "paddle": {"version": report.paddle_version, "source": report.paddle_source or None},
        "strict": report.strict,
        "ran_mre": report.ran_mre,
        "summary": {"patches": report.patches, "workarounds": len(report.workarounds),
                    "removable": len(report.removable), "errors": len(report.errors),
                    "warnings": len(report.warnings),
                    "acknowledged": len(report.acknowledged)},
        "workarounds": [_row_data(w) for w in report.workarounds],
        "findings": [f.to_data() for f in report.findings],
        "acknowledged": [a.to_data() for a in report.acknowledged],
        "unused_acknowledgements": [u.to_data() for u in report.unused_acknowledgements],
        "exit_code": report.exit_code,
    }
