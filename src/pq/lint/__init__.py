"""`pq lint`: the minimal-modification rules (LN...), checked per patch.

The rules live in the one registry pq.audit.rules (ids, severities, fixes); this package
gathers each patch's facts (pq.lint.context), checks them (pq.lint.shape: layers and file
shapes; pq.lint.code: the changed code) and reports (pq.lint.api, pq.lint.report).
"""
