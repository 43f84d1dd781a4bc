"""What a gate run found: one `StageResult` per stage and the overall status they add up to.

A GPU stage on a machine without a GPU is `skipped-no-gpu`, never `passed`; with no
failure the overall status is then `owed` (exit 0, but the GPU part is still to be run).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

PASSED = "passed"
FAILED = "failed"
TIMED_OUT = "timed-out"
SKIPPED_NO_GPU = "skipped-no-gpu"
NOT_AVAILABLE = "not-available"
NOT_RUN = "not-run"
REUSED = "reused"  # a passing run with the same input fingerprint; its artifacts restored
STAGE_STATUSES = (PASSED, FAILED, TIMED_OUT, SKIPPED_NO_GPU, NOT_AVAILABLE, NOT_RUN, REUSED)
STAGE_OK = (PASSED, REUSED)

# Overall statuses.
GATE_PASSED = "passed"
GATE_OWED = "owed"
GATE_FAILED = "failed"
GATE_ERROR = "error"
PASSING = (GATE_PASSED, GATE_OWED)


@dataclass
class StageResult:
    name: str
    status: str
    requires: tuple[str, ...] = ()
    duration_s: float | None = None
    exit_code: int | None = None
    detail: str = ""
    log: str | None = None
    log_sha256: str | None = None
    tail: str = field(default="", compare=False)
    inputs: str | None = None  # the input fingerprint of a reusable stage (gate/inputs)
    reused_from: str | None = None  # the commit whose passing run was reused

    @property
    def failed(self) -> bool:
        return self.status in (FAILED, TIMED_OUT)

    @property
    def owed(self) -> bool:
        return self.status in (SKIPPED_NO_GPU, NOT_AVAILABLE)

    def display(self) -> str:
        """The status as a person reads it: `failed (exit 2)`, `skipped (no GPU)`."""
        if self.status == SKIPPED_NO_GPU:
            return "skipped (no GPU)"
        if self.status == NOT_AVAILABLE:
            return "not available"
        if self.status == NOT_RUN:
            return "not run"
        if self.status == REUSED:
            return f"reused from {(self.reused_from or '?')[:12]}"
        if self.status == TIMED_OUT:
            return self.detail or "timed out"
        if self.status == FAILED:
            first = self.detail.splitlines()[0] if self.detail else ""
            if first.startswith("undefined symbol"):
                return "failed (undefined symbol)"
            return f"failed ({first})" if first and len(first) <= 40 else "failed"
        return self.status

    def to_record(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "duration_s": self.duration_s,
            "exit_code": self.exit_code,
            "detail": self.detail,
            "log_sha256": self.log_sha256,
            "requires": list(self.requires),
            "inputs": self.inputs,
            "reused_from": self.reused_from,
        }

    @classmethod
    def from_record(cls, data: dict[str, Any]) -> StageResult:
        duration = data.get("duration_s")
        return cls(
            name=str(data.get("name", "?")),
            status=str(data.get("status", NOT_RUN)),
            requires=tuple(str(r) for r in data.get("requires") or ()),
            duration_s=float(duration) if isinstance(duration, (int, float)) else None,
            exit_code=data.get("exit_code") if isinstance(data.get("exit_code"), int) else None,
            detail=str(data.get("detail") or ""),
            log_sha256=data.get("log_sha256") if isinstance(data.get("log_sha256"), str)
            else None,
            inputs=_text(data.get("inputs")),
            reused_from=_text(data.get("reused_from")),
        )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def overall(stages: list[StageResult]) -> str:
    if any(s.failed for s in stages):
        return GATE_FAILED
    if any(s.owed for s in stages):
        return GATE_OWED
    return GATE_PASSED


def owed_names(stages: list[StageResult]) -> list[str]:
    return [s.name for s in stages if s.owed]


def describe(status: str, stages: list[StageResult]) -> str:
    """One line: `passed`, `passed (GPU stages owed: gpu-tests)`, `failed at stage build`."""
    if status == GATE_FAILED:
        first = next((s for s in stages if s.failed), None)
        if first is None:
            return "failed"
        return f"failed at stage {first.name}: {first.detail or first.display()}"
    if status == GATE_OWED:
        gpu = [s.name for s in stages if s.status == SKIPPED_NO_GPU]
        other = [s.name for s in stages if s.status == NOT_AVAILABLE]
        parts = []
        if gpu:
            parts.append("GPU stages owed: " + ", ".join(gpu))
        if other:
            parts.append("not available here: " + ", ".join(other))
        return "passed (" + "; ".join(parts) + ")"
    return status
