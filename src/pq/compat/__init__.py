"""The compat surface: what the installed Paddle's torch-compat layer really provides
(headers, declared C++ names, exported symbols, the Python proxy's attributes).

Where measured surfaces are cached is said here, where it costs nothing to ask: a rebase's
drift scan asks it of every run, and `probe` loads the toolchain's modules.
"""

from __future__ import annotations

import os
from pathlib import Path


def cache_dir() -> Path:
    """Where measured surfaces are cached, one file per Paddle build (pq.compat.surface)."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "pq" / "compat-surface"
