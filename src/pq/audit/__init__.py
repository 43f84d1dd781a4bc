"""`pq audit`: hold every workaround in the queue to the workaround policy.

The metadata, removal conditions, rules, reproducer runs and renderings live in their own
modules; `pq.audit.api.run_audit` ties them together for the CLI and the pre-push hook.
"""
