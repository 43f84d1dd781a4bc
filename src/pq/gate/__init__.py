"""The build/test gate: the series' stages run in a throwaway worktree of the branch tip.

`config` reads the `gate` block of series.yaml, `runner` runs the stages (`reuse` restores
unchanged ones, as `inputs` fingerprints them; `ccache` caches compilers), `symbols` checks
built extension modules, `record` keeps the result as a git note, `api` ties them together.
"""

# Where the records are kept (pq.gate.record); the pre-push hook keys its verdicts on it.
NOTES_REF = "refs/notes/pq-gate"
