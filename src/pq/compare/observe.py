"""`pq.observe(name, value)`: an observation point for `pq compare`, a no-op elsewhere.

Under `pq compare` the child bootstrap (compare/child.py) replaces it with a recorder;
in any other run it returns `value` unchanged, so scripts may keep their observations.
"""

from __future__ import annotations

from typing import TypeVar

T = TypeVar("T")


def observe(name: str, value: T) -> T:
    """Record `value` under `name` when run by `pq compare`; otherwise return it as is."""
    del name
    return value
