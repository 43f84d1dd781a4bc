"""The answer to "does Paddle's compat layer provide this name?": one `Coverage` per name,
and the `Surface` protocol every reader of the measured compat surface asks through.

Pure data: `pq.compat.surface` builds a `Surface` from an installed Paddle; `pq drift` and
`pq compat-surface` only ask it questions.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Protocol


class Status(StrEnum):
    """How a name stands against the compat surface, worst first (the drift sort order)."""

    NOT_EXPORTED = "declared but not exported"  # compiles and links, dies at load
    HEADER_MISSING = "header missing"  # the #include fails: no such compat header
    NOT_DECLARED = "not declared"  # header present, name absent: a compile error
    MISSING = "missing"  # a Python attribute the proxy does not provide
    UNKNOWN = "unknown"  # the index cannot tell (outside what was measured)
    COVERED = "covered"

    @property
    def rank(self) -> int:
        return list(Status).index(self)

    @property
    def breaks(self) -> bool:
        return self not in (Status.COVERED, Status.UNKNOWN)


@dataclass(frozen=True)
class Coverage:
    name: str  # as asked: "c10/cuda/CUDAGuard.h", "at::cuda::CUDAGuard", "torch.cuda.Stream"
    kind: str  # "header" | "cxx" | "method" | "macro" | "python"
    status: Status
    header: str | None = None  # compat header (relative to the compat root) declaring it
    declaration: str | None = None  # the declaring line, stripped
    exported: bool | None = None  # None where export does not apply (class, macro, inline)
    detail: str = ""  # one line: why this status


class Surface(Protocol):
    """The measured compat surface of one Paddle installation."""

    @property
    def paddle_version(self) -> str: ...

    def header(self, include: str) -> Coverage:
        """An `#include` path as written in source: "c10/cuda/CUDAGuard.h"."""
        ...

    def cxx(self, qualified: str) -> Coverage:
        """A qualified C++ name: "at::cuda::CUDAGuard", "at::Tensor::const_data_ptr",
        "c10::Device", or a macro "TORCH_LIBRARY"."""
        ...

    def method(self, name: str) -> Coverage:
        """A tensor method as called on a tensor, `x.const_data_ptr<float>()` -> name
        "const_data_ptr" (looked up on at::Tensor and its bases)."""
        ...

    def python(self, dotted: str) -> Coverage:
        """A Python attribute path under the proxy: "torch.cuda.Stream"."""
        ...
