"""The installed Paddle wheel found from its folder (toolchain.paddle_dist_info, and the
compat probe's `_located` built on it) answers as importlib.metadata does, on wheels
planted in temporary site folders."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from pq import toolchain
from pq.compat import probe


def wheel(site: Path, folder: str, version: str, record: bytes = b"paddle/__init__.py,,\n"
          ) -> Path:
    info = site / folder
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: x\nVersion: {version}\n"
                                   "Summary: Version: 0.0 in the body\n\nVersion: 9.9\n")
    (info / "RECORD").write_bytes(record)
    (site / "paddle").mkdir(exist_ok=True)
    return info


@pytest.fixture
def sites(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    folders = [tmp_path / "a", tmp_path / "b"]
    for f in folders:
        f.mkdir()
    monkeypatch.setattr(sys, "path", [str(f) for f in folders])
    return folders


def test_each_name_in_turn_then_each_folder(sites: list[Path]) -> None:
    # paddlepaddle-gpu sits in the first folder, paddlepaddle in the second: the plain
    # wheel wins, as `locate()` asks for it first across the whole path.
    wheel(sites[0], "paddlepaddle_gpu-3.2.0.dist-info", "3.2.0")
    info = wheel(sites[1], "PaddlePaddle-3.3.1.dist-info", "3.3.1",
                 b"paddle/a.py,sha256=x,1\r\npaddle/b.py,,\r\n")  # CRLF: read as text
    assert toolchain.paddle_dist_info() == ("paddlepaddle", "3.3.1", str(info))
    assert probe._located() == probe.locate()
    assert probe.find_paddle().version == "3.3.1"


def test_the_header_version_not_the_folder_name(sites: list[Path]) -> None:
    wheel(sites[0], "paddlepaddle_gpu-3.0.0b2.dist-info", "3.0.0-beta2")
    assert toolchain.paddle_dist_info() is not None
    assert probe._located() == probe.locate()
    assert probe.locate()["version"] == "3.0.0-beta2"


def test_an_egg_info_first_is_left_to_importlib_metadata(sites: list[Path]) -> None:
    egg = sites[0] / "paddlepaddle-2.6.0.egg-info"
    egg.mkdir()
    (egg / "PKG-INFO").write_text("Metadata-Version: 2.1\nName: paddlepaddle\nVersion: 2.6.0\n")
    wheel(sites[1], "paddlepaddle-3.3.1.dist-info", "3.3.1")
    assert toolchain.paddle_dist_info() is None
    assert probe.find_paddle().version == "2.6.0"  # importlib.metadata's answer


def test_no_wheel(sites: list[Path]) -> None:
    assert toolchain.paddle_dist_info() is None
    assert probe._located() is None


@pytest.mark.parametrize("metadata", [
    "Metadata-Version: 2.1\nName: x\nVersion: 3.0.0 \n\n",      # trailing space kept there
    "Metadata-Version: 2.1\nName: x\nVersion:\t3.0.0\t\n\n",
    "Metadata-Version: 2.1\nName: x\nVersion: 3.0\n .0\n\n",    # folded
    "\ufeffMetadata-Version: 2.1\nVersion: 3.0.0\n\n",           # a BOM
    "Metadata-Version: 2.1\nstray line\nVersion: 3.0.0\n\n",    # the header ended there
    "Metadata-Version: 2.1\nVersion : 3.0.0\n\n",
])
def test_a_metadata_header_of_another_shape_is_left_to_importlib(
        sites: list[Path], metadata: str) -> None:
    info = wheel(sites[0], "paddlepaddle-3.0.0.dist-info", "3.0.0")
    (info / "METADATA").write_text(metadata)
    assert toolchain.paddle_dist_info() is None
    assert probe._located() is None


def test_a_dist_info_without_a_version_in_its_name_and_eggs(
        sites: list[Path], monkeypatch: pytest.MonkeyPatch) -> None:
    wheel(sites[0], "paddlepaddle.dist-info", "2.0.0")
    wheel(sites[1], "paddlepaddle-3.3.1.dist-info", "3.3.1")
    assert probe._located() == probe.locate()
    assert probe.find_paddle().version == "2.0.0"
    for name in ("paddlepaddle-2.6.0-py3.11.egg", "paddlepaddle-2.6.0-py3.11.EGG"):
        egg = sites[0].parent / name
        egg.mkdir()
        monkeypatch.setattr(sys, "path", [str(egg), *map(str, sites)])
        assert toolchain.paddle_dist_info() is None  # an egg on sys.path: importlib answers
    monkeypatch.setattr(sys, "path", [*sites])  # path objects, which importlib also reads
    assert toolchain.paddle_dist_info() is None
    assert probe.find_paddle().version == "2.0.0"
