"""Where a Paddle installation lives (found from package metadata, never by importing
paddle in-process) and what its Python proxy provides under `enable_compat` (asked of
the target interpreter in a child process: `import torch` yields Paddle's proxy).
"""

from __future__ import annotations

import inspect
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pq import toolchain
from pq.errors import ConfigError

COMPAT_DIR = "include/paddle/phi/api/include/compat"  # under the paddle package
# the public modules walked under the proxy; anything deeper is UNKNOWN
MODULES = ("torch", "torch.cuda", "torch.library", "torch.utils", "torch.utils.cpp_extension",
           "torch.utils.dlpack", "torch.utils.data", "torch.nn", "torch.nn.functional",
           "torch.distributed", "torch.testing", "torch._dynamo", "torch.profiler",
           "torch.ops", "torch.autograd", "torch.fx", "torch.amp", "torch.cuda.amp",
           "torch.linalg", "torch.fft", "torch.backends", "torch.backends.cudnn",
           "torch.__config__", "torch.version")


def locate() -> dict[str, Any]:
    """This interpreter's Paddle: version, package folder and sha256 of the wheel's RECORD.
    Runs in-process, or as source in another interpreter: keep it self-contained."""
    import hashlib
    import importlib.metadata as md
    import os

    for name in ("paddlepaddle", "paddlepaddle-gpu"):
        try:
            dist = md.distribution(name)
        except md.PackageNotFoundError:
            continue
        record = dist.read_text("RECORD") or ""
        root = os.path.realpath(str(dist.locate_file("paddle")))
        return {"version": dist.version, "dist": name, "root": root,
                "record_sha256": hashlib.sha256(record.encode()).hexdigest()}
    return {"error": "no paddlepaddle distribution is installed"}


def _located() -> dict[str, Any] | None:
    """`locate()`'s answer from the wheel's folder (toolchain.paddle_dist_info), without
    importing importlib.metadata; None when that finds no wheel."""
    import hashlib
    import os

    found = toolchain.paddle_dist_info()
    if found is None:
        return None
    name, version, info = found
    try:  # as importlib.metadata reads it: text, universal newlines
        with open(os.path.join(info, "RECORD"), encoding="utf-8") as f:
            record = f.read()
    except FileNotFoundError:
        record = ""
    except (OSError, UnicodeDecodeError):
        return None
    root = os.path.realpath(os.path.join(os.path.dirname(info), "paddle"))
    return {"version": version, "dist": name, "root": root,
            "record_sha256": hashlib.sha256(record.encode()).hexdigest()}


@dataclass(frozen=True)
class Installed:
    """One Paddle installation: `key` names its cache entry (version + wheel hash)."""

    version: str
    root: Path  # the `paddle` package folder
    key: str
    python: str  # the interpreter that imports it

    @property
    def compat_root(self) -> Path:
        return self.root / COMPAT_DIR


def _ask(python: str, source: str, what: str, timeout: float) -> dict[str, Any]:
    asked = toolchain.ask_source(python, source, timeout)
    if asked.facts is None:
        if not asked.ran:
            raise ConfigError(f"--paddle-python {python}: cannot run it ({asked.problem})",
                              hint="give the path of a Python interpreter")
        raise ConfigError(f"{python}: {what} failed: {asked.problem}")
    return asked.facts


def find_paddle(python: str | None = None, timeout: float = 60.0) -> Installed:
    """The Paddle of `python` (None: this interpreter, read without importing paddle)."""
    if python is None:
        facts = _located() or locate()
        python = sys.executable
    else:
        source = ("from __future__ import annotations\nfrom typing import Any\n"
                  + inspect.getsource(locate) + "\nimport json\nprint(json.dumps(locate()))\n")
        facts = _ask(python, source, "the Paddle lookup", timeout)
    if "error" in facts:
        raise ConfigError(f"{python}: {facts['error']}",
                          hint="pip install paddlepaddle, or pass --paddle-python")
    key = f"{facts['version']}-{str(facts['record_sha256'])[:16]}"
    return Installed(str(facts["version"]), Path(str(facts["root"])), key, python)


def _walk(modules: list[str]) -> dict[str, Any]:
    """Run in the target interpreter: the proxy's attributes per module."""
    import contextlib
    import importlib
    import io

    def attrs(mod: Any) -> list[str]:
        # dir() lists a proxy module's own names; those it serves from its overrides
        # (paddle.compat's `torch.nn.Linear`, `torch.relu`, ...) only its __getattr__ knows.
        # Dunders stay: `torch.__version__` is asked for as any other name.
        served = getattr(mod, "_overrides", None)
        own = {*dir(mod), *dir(type(mod))}  # (what every module has: __dict__, __class__)
        return sorted(own | {k for k in served if "." not in k} if isinstance(served, dict)
                      else own)

    out: dict[str, Any] = {}
    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
        try:
            import paddle
            paddle.enable_compat()
        except Exception as exc:  # noqa: BLE001 - reported, not raised
            first = (str(exc).splitlines() or [""])[0]
            return {"error": f"{type(exc).__name__}: {first}"}
        found: dict[str, Any] = {}
        for name in modules:
            try:
                mod = importlib.import_module(name)
            except Exception as exc:  # noqa: BLE001
                first = (str(exc).splitlines() or [""])[0]
                out[name] = {"error": f"{type(exc).__name__}: {first}"}
                parent, _, attr = name.rpartition(".")
                try:  # `torch.ops` is an attribute of the proxy, not an importable module
                    mod = getattr(found[parent], attr)
                except (KeyError, AttributeError):
                    continue
                out[name]["attrs"] = attrs(mod)
                continue
            found[name] = mod
            out[name] = {"attrs": attrs(mod)}
    return {"modules": out}


def probe_proxy(python: str, timeout: float = 120.0) -> dict[str, Any]:
    """{"modules": {module: {"attrs": [...]} | {"error": "..."}}} or {"error": "..."}."""
    source = ("from __future__ import annotations\nfrom typing import Any\n"
              + inspect.getsource(_walk) + "\nimport json\n"
              + f"print(json.dumps(_walk({list(MODULES)!r})))\n")
    try:
        return _ask(python, source, "the torch proxy probe", timeout)
    except ConfigError as exc:
        return {"error": exc.message}
