"""pq's caches in .git/pq are only caches: a damaged one (truncated, another shape, JSON
nested deeper than the parser recurses) is ignored, the work is done in full, and no
command ends in an internal error."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from gitrepo import pq, series_fork

DEEP = "[" * 100_000 + "]" * 100_000


@pytest.fixture
def fork(tmp_path: Path) -> Path:
    return series_fork(tmp_path, ("glue: scoped compat",
                                  {"pkg/__init__.py": "import torch  # scoped\n"}))


@pytest.mark.parametrize("content", [DEEP, '{"verified": [', "[1, 2]", '{"passed": 5}'])
@pytest.mark.parametrize(("cache", "args"), [
    ("export-cache.json", ["export", "--json"]),
    ("hook-cache.json", ["check", "--json"]),
])
def test_a_damaged_cache_is_ignored(fork: Path, cache: str, args: list[str],
                                    content: str) -> None:
    (fork / ".git" / "pq").mkdir(exist_ok=True)
    (fork / ".git" / "pq" / cache).write_text(content)
    result = pq(fork, *args, ok=False)
    assert result.exit_code == 0, result.output
    assert "internal error" not in result.output
    assert "error" not in json.loads(result.output) or \
        json.loads(result.output)["error"] is None
