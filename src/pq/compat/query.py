"""One name asked of a compat surface, its kind read from its spelling: a header path
(`c10/cuda/CUDAGuard.h`), a Python path (`torch.cuda.Stream`), a C++ name or macro
(`at::cuda::CUDAGuard`, `TORCH_LIBRARY`), a tensor method (`Tensor.const_data_ptr`).
"""

from __future__ import annotations

import re

from pq.compat.coverage import Coverage, Surface
from pq.errors import ConfigError

_HEADER_SUFFIXES = (".h", ".hpp", ".cuh", ".hh")
_MACRO = re.compile(r"[A-Z][A-Z0-9_]*")


def kind_of(name: str) -> str | None:
    """"header", "python", "cxx" or "method"; None when the spelling says nothing."""
    s = name.strip().strip("<>\"")
    if "/" in s or s.endswith(_HEADER_SUFFIXES):
        return "header"
    if s.startswith("torch.") or s == "torch":
        return "python" if all(s.split(".")) else None  # no empty part: `torch.`, `a..b`
    if "::" in s:
        parts = s.split("::")
        parts = parts[1:] if parts[0] == "" else parts  # `::at::Tensor`: the global scope
        return "cxx" if parts and all(parts) else None
    if _MACRO.fullmatch(s):
        return "cxx"
    if s.startswith((".", "Tensor.")) and all(s.split(".")[1:]):
        return "method"
    return None


def ask(surface: Surface, name: str) -> Coverage:
    """The coverage of one name; ConfigError (exit 2) when its kind cannot be told."""
    kind = kind_of(name)
    if kind == "header":
        return surface.header(name)
    if kind == "python":
        return surface.python(name.strip())
    if kind == "cxx":
        return surface.cxx(name)
    if kind == "method":
        return surface.method(name)
    raise ConfigError(f"{name!r}: cannot tell what this name is",
                      hint="give a header like c10/cuda/CUDAGuard.h, a C++ name like "
                           "at::cuda::CUDAGuard, a macro like TORCH_LIBRARY, a tensor method "
                           "like Tensor.const_data_ptr or a Python path like torch.cuda.Stream")
