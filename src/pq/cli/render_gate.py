"""The text of `pq gate` and `pq gate --status`: what a `GateReport` or `GateStatus` says.

One line per stage, the failing stage's log tail, the result and the next step.
"""

from __future__ import annotations

from typing import Any

from pq.gate import NOTES_REF
from pq.gate import result as R
from pq.gate.api import GateReport, GateStatus


def report_text(report: GateReport) -> str:
    """What a person reads after `pq gate`."""
    if report.error is not None:
        return f"gate: error: {report.error.render()}"
    tip = (report.tip or "")[:12]
    lines = [f"gate at {tip} (tree {(report.tree or '')[:12]}): "
             f"{_env_line(report.fingerprint)}"]
    if report.cached:
        lines.append(f"  cached: a passing record from {report.time} for this tree and "
                     "environment (`pq gate --force` runs it again)")
    lines.extend(_stage_lines(report.stages))
    failed = next((s for s in report.stages if s.failed), None)
    if failed is not None and failed.tail:
        lines.append(f"--- {failed.name}: last lines of {failed.log} ---")
        lines.extend(failed.tail.splitlines())
        lines.append("---")
    lines.append(("result: " if not report.cached else "result (cached): ") + report.headline)
    lines.extend(f"warning: {w}" for w in report.warnings)
    if failed is not None:  # (a later stage alone would run without what those before make)
        upto = report.stages[:report.stages.index(failed) + 1]
        stages = " ".join(f"--stage {s.name}" for s in upto)
        lines.append(f"next: fix stage {failed.name} and run `pq gate` again ("
                     f"{'just this stage' if len(upto) == 1 else 'up to this stage'}: "
                     f"`pq gate {stages}`)")
    elif any(s.status == R.SKIPPED_NO_GPU for s in report.stages):
        lines.append(f"next: run `pq gate` where a GPU is visible, then `git push origin "
                     f"{NOTES_REF}`")
    return "\n".join(lines)


def status_text(status: GateStatus) -> str:
    """What `pq gate --status` says about the recorded result for the tip."""
    if status.record is None:
        return (f"no gate record for {status.tip[:12]} (tree {status.tree[:12]}): run `pq "
                f"gate`, or fetch the team's records with `git fetch origin "
                f"{NOTES_REF}:{NOTES_REF}`")
    rec = status.record
    head = f"gate record for {status.tip[:12]} (tree {status.tree[:12]})"
    if status.found_on and status.found_on != status.tip:
        head += f", found on {status.found_on[:12]} (same tree)"
    lines = [head + ":",
             f"  recorded {rec.get('time')} by pq {rec.get('pq')}"
             + (", a partial run (--stage)" if rec.get("partial") else ""),
             f"  environment: {_env_line(rec.get('fingerprint'))}"]
    stages = [R.StageResult.from_record(s) for s in rec.get("stages", [])
              if isinstance(s, dict)]
    lines.extend(_stage_lines(stages))
    lines.append("result: " + str(rec.get("summary") or rec.get("status")))
    whole = status.whole
    if rec.get("partial"):  # what the gate as a whole says: the exit code's answer
        lines.append("the whole gate: " + (
            f"{whole.get('summary') or whole.get('status')} (recorded {whole.get('time')})"
            if whole is not None else "not run for this tree (`pq gate` runs it)"))
    for old in status.history:
        lines.append(f"earlier: {old.get('time')}: {old.get('summary') or old.get('status')}"
                     f" ({_env_line(old.get('fingerprint'))})")
    return "\n".join(lines)


def _stage_lines(stages: list[R.StageResult]) -> list[str]:
    width = max([len(s.name) for s in stages] + [5])
    lines = []
    for s in stages:
        took = f"{s.duration_s:8.1f} s" if s.duration_s is not None else ""
        lines.append(f"  {s.name.ljust(width)}  {s.display()[:70].ljust(30)} {took}".rstrip())
    return lines


def _env_line(fp: dict[str, Any] | None) -> str:
    if not fp:
        return "environment unknown"
    parts = [f"python {fp.get('python')}"]
    parts += [f"{k} {fp[k]}" for k in ("torch", "paddle") if fp.get(k)]
    if fp.get("cuda"):
        parts.append(f"CUDA {fp['cuda']}")
    if fp.get("gpu"):
        parts.append(", ".join(fp["gpu"]) + (f" (driver {fp['driver']})" if fp.get("driver")
                                             else ""))
    else:
        parts.append("GPU visible" if fp.get("gpu_visible") else "no GPU")
    return ", ".join(parts)
