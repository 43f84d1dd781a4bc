"""pq under a locale whose encoding is not UTF-8: git's paths are bytes, and pq prints
them as their bytes (UTF-8 here) whatever the locale says, as git does; it never dies on
a name the locale's charset cannot write."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from gitrepo import one_patch_fork

NAME = "数据.txt"
LOCALES = {
    "latin1-stdio": {"PYTHONIOENCODING": "iso-8859-1"},
    "c-locale-uncoerced": {"LC_ALL": "C", "LANG": "C", "PYTHONUTF8": "0",
                           "PYTHONCOERCECLOCALE": "0"},
}


def _pq(fork: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run([sys.executable, "-m", "pq", *args], cwd=fork, capture_output=True,
                          check=False, env={**os.environ, **env})


@pytest.mark.parametrize("locale", sorted(LOCALES))
def test_a_conflict_in_a_file_the_locale_cannot_name(tmp_path: Path, locale: str) -> None:
    fork = one_patch_fork(tmp_path, {NAME: "a\nB\nc\n"}, {NAME: "a\nX\nc\n"})
    env = LOCALES[locale]
    rebase = _pq(fork, env, "rebase", "upstream/main")
    assert rebase.returncode == 1, rebase.stderr
    assert f"conflicts in {NAME}".encode() in rebase.stderr
    status = _pq(fork, env, "status", "--json")
    assert status.returncode == 0, status.stderr
    data = json.loads(status.stdout.decode("utf-8"))
    assert NAME in json.dumps(data, ensure_ascii=False)
    text = _pq(fork, env, "-C", ".", "status")  # through click too
    assert text.returncode == 0 and NAME.encode() in text.stdout, text.stderr
    assert _pq(fork, env, "rebase", "--abort").returncode == 0
