"""The text of the pre-push hook and of `pq check`: what `pq.push.hook`'s results say.

No click here: `python -m pq hook run`, the hook's fast path, prints these lines too.
"""

from __future__ import annotations

from collections.abc import Sequence

from pq.cli.common import ignored_hook_hints
from pq.push.hook import HookResult, RefReport
from pq.push.refs import SKIP_ENV
from pq.push.registry import CheckFailure, names, split_failures

UNREADABLE = "series.yaml has errors pq refuses"
GATE_MISSING = "no gate record shows the stages series.yaml requires for a push passed"


def ack_hint(policy: Sequence[CheckFailure]) -> str:
    """How to acknowledge a reviewed finding, with a rule the findings name."""
    rules = sorted({f.rule for f in policy if f.rule})
    return ("a finding you reviewed and keep: acknowledge it on the patch's entry in "
            f"series.yaml, `acknowledged: [{{rule: {rules[0] if rules else 'WA014'}, "
            "reason: \"...\"}]`")


def _n(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def skip_warnings(skip: frozenset[str], unknown: Sequence[str], subject: str) -> list[str]:
    """The warning lines for PQ_SKIP, the same from the hook and from `pq check`."""
    lines = []
    if skip:
        what = "every pq check" if "all" in skip else \
            ("the check " if len(skip) == 1 else "the checks ") + ", ".join(sorted(skip))
        lines.append(f"pq: WARNING: {SKIP_ENV}={','.join(sorted(skip | set(unknown)))}: "
                     f"skipping {what}; {subject} is NOT fully verified")
    if unknown:
        lines.append(f"pq: WARNING: {SKIP_ENV} names no check called {', '.join(unknown)}, "
                     f"and skips nothing for it (the checks: {', '.join(names())}; or all)")
    return lines


def consistent_summary(statuses: dict[str, str], how: str | None) -> str:
    """'series consistent (N checks passed[, M skipped][, how])'."""
    ran = sum(1 for s in statuses.values() if s == "passed")
    skipped = sum(1 for s in statuses.values() if s == "skipped")
    parts = [_n(ran, "check") + " passed"] + ([f"{skipped} skipped"] if skipped else []) + (
        [how] if how else [])
    if not ran:  # PQ_SKIP=all: nothing says it is consistent
        return "not checked" + (f" ({', '.join(parts[1:])})" if parts[1:] else "")
    return f"series consistent ({', '.join(parts)})"


# -- the hook (stderr, next to git's own push output) -------------------------------------


def hook_lines(result: HookResult) -> list[str]:
    """The hook's lines for stderr."""
    lines = ignored_hook_hints(result.ignored_hooks)
    if result.chained and result.chained[1]:
        path, rc = result.chained
        how = f"exit {rc}" if rc > 0 else f"killed by signal {-rc}"
        return [f"pq: the chained hook {path} failed ({how}); push refused"]
    managed = [r for r in result.reports if r.managed or r.state == "unmanaging"]
    if managed:
        lines += skip_warnings(result.skip, result.unknown_skip, "this push")
    for r in managed:
        lines.extend(_report_lines(r))
    if not result.ok:
        lines.append("pq: push refused; fix the problems above and push again "
                     "(`git push --no-verify` skips pq's hook)")
    return lines


def _report_lines(r: RefReport) -> list[str]:
    where = f"{r.update.label} {(r.commit or '')[:12]}"
    lines = [f"pq: notice: {n}" for n in r.notices]
    if r.ok:
        how = "cached" if r.state == "cached" else f"{r.seconds:.1f} s"
        lines.append(f"pq: {where}: {consistent_summary(r.statuses, how)}")
        return lines
    unreadable, mismatches, policy, stopped, gate = split_failures(r.failures)
    if r.state == "unmanaging":
        return [*lines, f"pq: {where}: the push takes a series off the remote:",
                *_failure_lines(r.failures)]
    what = "the tagged commit" if r.update.remote_ref.startswith("refs/tags/") else "the branch"
    if unreadable:
        lines.append(f"pq: {where}: {UNREADABLE}:")
        lines.extend(_failure_lines(unreadable))
    if mismatches:
        lines.append(f"pq: {where}: {what} does not match its series "
                     f"({_n(len(mismatches), 'problem')}):")
        lines.extend(_failure_lines(mismatches))
    elif not unreadable:
        lines.append(f"pq: {where}: {what} matches its series")
    if gate:
        lines.append(f"pq: {where}: {GATE_MISSING}:")
        lines.extend(_failure_lines(gate))
    if stopped:
        lines.append(f"pq: {where}: the workaround audit cannot read the series:")
        lines.extend(_failure_lines(stopped))
    if policy:
        lines.append(f"pq: {where}: {_n(len(policy), 'policy finding')} of the workaround "
                     "audit (`pq audit workarounds` shows them all):")
        lines.extend(_failure_lines(policy))
        lines.append(f"pq:   {ack_hint(policy)}")
    return lines


def _failure_lines(failures: Sequence[CheckFailure]) -> list[str]:
    lines = []
    for f in failures:
        lines.append(f"pq:   [{f.check}] {f.message}")
        lines.append(f"pq:   {' ' * (len(f.check) + 2)} fix: {f.fix_command}")
    return lines


# -- `pq check` (stdout) ----------------------------------------------------------------


def check_lines(rev: str, report: RefReport) -> list[str]:
    """`pq check REV`'s report: each check's status, the failures and their fixes."""
    unreadable, mismatches, policy, stopped, gate = split_failures(report.failures)
    lines = [f"{rev} {(report.commit or '')[:12] or '-'}:"]
    lines += [f"  {status:<11} {name}" for name, status in report.statuses.items()]
    for title, group in ((UNREADABLE, unreadable),
                         ("the branch does not match its series", mismatches),
                         (GATE_MISSING, gate),
                         ("the workaround audit cannot read the series", stopped),
                         ("policy findings of the workaround audit", policy)):
        if group:
            lines.append(f"{title}:")
        for f in group:
            lines.append(f"  [{f.check}] {f.message}")
            lines.append(f"    fix: {f.fix_command}")
    if policy:
        lines.append(ack_hint(policy))
    if not (unreadable or mismatches) and (policy or stopped or gate):
        why = [w for w, group in (("missing gate record", gate), ("policy findings", policy),
                                  ("audit problems", stopped)) if group]
        lines.append("the branch matches its series; the push is refused for the "
                     f"{' and '.join(why)} above")
    if report.ok:
        lines.append(consistent_summary(
            report.statuses, "cached" if report.state == "cached" else None))
    return lines
