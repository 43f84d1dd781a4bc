"""pq.model.yamlcache: a located parse kept under .git/pq is read back as the parse itself,
only for the very bytes it was made of, never for a broken file, and a damaged entry is a
miss."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from pq.errors import ConfigError
from pq.model import series, yamlcache, yamldoc
from pq.model.yamledit import same

SERIES = b"""\
# the fork's series
version: 1
upstream:
  ref: upstream/main   # where it goes
  base: '0123456789abcdef0123456789abcdef01234567'
patches:
  - name: 0001-build-fix.patch
    layer: build
    summary: "caf\\u00e9 \\U0001F600 and a tab\\t"
    odd: [1.5, .inf, -.inf, .nan, -0.0, 123456789012345678901234567890, true, null, '1']
"""


def entries(pq_dir: Path) -> list[Path]:
    folder = pq_dir / yamlcache.FOLDER
    return sorted(folder.iterdir()) if folder.is_dir() else []


def keep(pq_dir: Path, text: bytes) -> yamldoc.Located:
    """`text` parsed, and kept as a series that loads keeps it."""
    doc = yamldoc.load(text, "f.yaml")
    yamlcache.put(pq_dir, text, doc.data, doc.marks)
    return doc


def test_a_kept_parse_is_the_parse(tmp_path: Path) -> None:
    assert series.loads(SERIES, "series.yaml", tmp_path) == series.loads(SERIES)
    assert len(entries(tmp_path)) == 1
    fresh = yamldoc.load(SERIES, "series.yaml")
    kept = yamldoc.load(SERIES, "other.yaml", tmp_path)
    assert kept.kept and not fresh.kept
    assert same(kept.data, fresh.data) and list(kept.marks.items()) == list(fresh.marks.items())
    assert kept.text == SERIES.decode() and kept.filename == "other.yaml"
    assert kept.data["patches"][0]["summary"] == "caf\u00e9 \U0001F600 and a tab\t"
    assert str(kept.error(("patches", 0, "layer"), "bad")) == "other.yaml:8:12: bad"
    again = series._loads_cached.__wrapped__(SERIES, "series.yaml", tmp_path)  # no lru_cache
    assert again == series.loads(SERIES) and again.doc is not None and again.doc.kept


def test_other_bytes_are_never_served_an_entry(tmp_path: Path) -> None:
    keep(tmp_path, b"a: 1\n")
    assert yamldoc.load(b"a: 2\n", "f.yaml", tmp_path).data == {"a": 2}
    assert not yamldoc.load(b"a: 2\n", "f.yaml", tmp_path).kept
    assert yamldoc.load(b"a: 1\n", "f.yaml", tmp_path).kept


@pytest.mark.parametrize("text,error", [
    (b"a: 1\na: 2\n", r"f\.yaml:2:1: duplicate key 'a'"),  # not YAML pq reads
    (b"version: 2\n", r"f\.yaml:1:10: unsupported series version 2"),  # YAML, no series
])
def test_a_refused_series_is_read_and_reported_every_time_and_never_kept(
        tmp_path: Path, text: bytes, error: str) -> None:
    for _ in range(2):
        with pytest.raises(ConfigError, match=error):
            series.loads(text, "f.yaml", tmp_path)
    assert entries(tmp_path) == []


@pytest.mark.parametrize("damage", [
    b"", b"{\"data\": 1", b"[]", b"{\"data\": {}, \"marks\": [[\"a\", 1, 2]]}",
    b"{\"data\": {}, \"marks\": [[[\"a\"], \"1\", 2]]}", b"{\"marks\": []}", b"\xff",
])
def test_a_damaged_entry_is_a_miss_and_is_written_again(tmp_path: Path, damage: bytes) -> None:
    series.loads(SERIES, "series.yaml", tmp_path)
    (entry,) = entries(tmp_path)
    good = entry.read_bytes()
    entry.write_bytes(damage)
    again = series._loads_cached.__wrapped__(SERIES, "series.yaml", tmp_path)
    assert again == series.loads(SERIES) and again.doc is not None and not again.doc.kept
    assert entry.read_bytes() == good


def test_at_most_entries_are_kept_the_oldest_go_first(tmp_path: Path) -> None:
    for i in range(yamlcache.ENTRIES + 3):
        keep(tmp_path, b"n: %d\n" % i)
        (kept,) = [e for e in entries(tmp_path) if json.loads(e.read_bytes())["data"] == {"n": i}]
        os.utime(kept, ns=(i * 10**9, i * 10**9))  # a clock that ticks between loads
    kept_values = sorted(json.loads(e.read_bytes())["data"]["n"] for e in entries(tmp_path))
    assert kept_values == list(range(3, yamlcache.ENTRIES + 3))


def test_a_folder_that_takes_no_file_only_costs_time(tmp_path: Path) -> None:
    (tmp_path / yamlcache.FOLDER).write_text("a file where the folder goes\n")
    assert series.loads(SERIES, "series.yaml", tmp_path) == series.loads(SERIES)


def test_a_series_read_again_needs_no_yaml_parser(tmp_path: Path) -> None:
    """The point of the cache: a second command reading the same series.yaml imports no
    PyYAML (each load runs in a fresh interpreter, as each pq command does)."""
    (tmp_path / "series.yaml").write_bytes(SERIES)
    code = ("import sys; from pathlib import Path; from pq.model import series; "
            "d = Path(sys.argv[1]); s = series.loads((d / 'series.yaml').read_bytes(), "
            "'series.yaml', d); print(s.base[:7], s.patches[0].name, 'yaml' in sys.modules)")
    said = [subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True,
                           capture_output=True, text=True).stdout.split() for _ in range(2)]
    assert said == [["0123456", "0001-build-fix.patch", "True"],
                    ["0123456", "0001-build-fix.patch", "False"]]
    assert series.loads(SERIES, "series.yaml", tmp_path) == series.loads(SERIES)


plain = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(), inner, max_size=4),
    max_leaves=20)


@settings(max_examples=150, deadline=None)
@given(data=st.dictionaries(st.text(min_size=1), plain, min_size=1, max_size=4))
def test_any_dumped_document_reads_back_the_same_from_its_entry(data: object) -> None:
    text = yamldoc.dump(data).encode()
    with tempfile.TemporaryDirectory() as folder:
        fresh = keep(Path(folder), text)
        kept = yamldoc.load(text, "f.yaml", Path(folder))
    assert kept.kept and same(kept.data, fresh.data)
    assert list(kept.marks.items()) == list(fresh.marks.items())
