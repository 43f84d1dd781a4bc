"""pq's own code as installed, for the keys of pq's caches (the export cache, the pre-push
hook's verdicts): an upgrade, or an edited checkout, whose version number did not change
may decide otherwise, and must miss every entry the code before it wrote."""

from __future__ import annotations

import hashlib
import os
from functools import cache


@cache
def code_digest() -> bytes:
    """A digest of each of pq's modules' path, size and modification time (stat alone: no
    module is read)."""
    h = hashlib.sha256()
    folders = [os.path.dirname(os.path.abspath(__file__))]
    while folders:
        with os.scandir(folders.pop()) as found:
            for entry in sorted(found, key=lambda e: e.name):
                if entry.is_dir(follow_symlinks=False) and entry.name != "__pycache__":
                    folders.append(entry.path)
                elif entry.name.endswith(".py"):
                    st = entry.stat()
                    h.update(b"%s\0%d\0%d\0" % (os.fsencode(entry.path), st.st_size,
                                                   st.st_mtime_ns))
    return h.digest()
