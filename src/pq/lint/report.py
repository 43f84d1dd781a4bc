"""`pq lint --json`: the shape documented in docs/lint.md, stable (`version` changes if it
must). Findings and acknowledgements have the same fields as in `pq audit --json`."""

from __future__ import annotations

from typing import Any

from pq.audit.rules import ERROR, WARNING
from pq.lint.api import LintReport

JSON_VERSION = 1


def data(report: LintReport) -> dict[str, Any]:
    return {
        "version": JSON_VERSION,
        "base": report.base,
        "base_present": report.base_present,
        "patches": list(report.patches),
        "settings": {"max_patch_lines": report.settings.max_patch_lines},
        "summary": {"patches": len(report.patches),
                    "errors": sum(f.severity == ERROR for f in report.findings),
                    "warnings": sum(f.severity == WARNING for f in report.findings),
                    "acknowledged": len(report.acknowledged)},
        "findings": [f.to_data() for f in report.findings],
        "acknowledged": [a.to_data() for a in report.acknowledged],
        "unused_acknowledgements": [u.to_data() for u in report.unused_acknowledgements],
        "exit_code": report.exit_code,
    }
