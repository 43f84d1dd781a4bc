"""A rebase's write of series.yaml, where only `upstream.base` changed: the new id takes the
old one's characters in place (pq.model.yamldoc.with_id), which reads back as the new id,
as PyYAML reads it, is the text the comment-keeping editor would write, and needs no
PyYAML; where that is not certain, the editor writes it."""

from __future__ import annotations

import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest
from gitrepo import git, one_patch_fork, pq
from hypothesis import given
from hypothesis import strategies as st

from pq.model import series, yamlcache, yamldoc, yamledit

TEMPLATE = """\
# the fork's series
version: 1
upstream:
  ref: upstream/main{pad}
  base: {written}{tail}
patches:
  - name: 0001-build-fix.patch   # café
    layer: build
    summary: "Build against the compat layer"
"""


def text(base: str, quote: str = "", tail: str = "", pad: str = "", crlf: bool = False
         ) -> str:
    out = TEMPLATE.format(written=quote + base + quote, tail=tail, pad=pad)
    return out.replace("\n", "\r\n") if crlf else out


def moved(old_text: str, new_base: str) -> tuple[bytes, bool]:
    loaded = series.loads(old_text.encode("utf-8"))
    return loaded.with_base(new_base).render()


ids = st.one_of(st.text("0123456789abcdef", min_size=40, max_size=40),
                st.sampled_from(["0" * 40, "1" * 40, "0b" + "01" * 19, "0" + "7" * 39,
                                 "9" * 40, "0" + "8" * 39, "e" + "1" * 39]))


@given(old=ids, new=ids, quote=st.sampled_from(["", "'", '"']),
       tail=st.sampled_from(["", "   # the fork point", " "]), crlf=st.booleans())
def test_a_moved_base_reads_back_as_the_new_id_and_is_what_the_editor_writes(
        old: str, new: str, quote: str, tail: str, crlf: bool) -> None:
    if not quote and (old.isdigit() or old.startswith("0b")):
        quote = "'"  # (written plain, such an id is no string: no series holds it so)
    before = text(old, quote, tail, crlf=crlf)
    written, kept_layout = moved(before, new)
    assert kept_layout
    again = yamldoc.load(written, "series.yaml")  # through PyYAML: no cache
    assert again.data["upstream"]["base"] == new
    assert again.data["patches"] == [{"name": "0001-build-fix.patch", "layer": "build",
                                      "summary": "Build against the compat layer"}]
    old_doc = yamldoc.load(before.encode("utf-8"), "series.yaml")
    by_editor = yamledit.rewrite(before, old_doc.data, again.data)
    assert by_editor is not None and written == by_editor.encode("utf-8")


@pytest.mark.parametrize("new", ["1" * 40, "0" * 40, "0b" + "1" * 38, "0" + "7" * 39])
def test_a_plain_id_that_would_read_as_a_number_is_left_to_the_editor(new: str) -> None:
    before = text("ab" * 20)
    doc = yamldoc.load(before.encode(), "series.yaml")
    assert yamldoc.with_id(doc, ("upstream", "base"), new) is None
    written, _ = moved(before, new)  # the editor quotes it
    assert yamldoc.load(written, "series.yaml").data["upstream"]["base"] == new
    quoted = text("ab" * 20, "'")
    swapped = yamldoc.with_id(yamldoc.load(quoted.encode(), "x"), ("upstream", "base"), new)
    assert swapped == text(new, "'")  # in quotes it is a string: swapped in place


@pytest.mark.parametrize("before", [
    text("ab" * 20).replace("  base: ", "  base: !!str "),  # a tag: the value's text moved
    text("ab" * 20, '"').replace('"' + "ab" * 20, '"\\x61b' + "ab" * 19),  # an escape
    text("ab" * 20).replace("upstream:\n  ref: upstream/main\n  base: " + "ab" * 20,
                            "upstream: {ref: upstream/m\u00e4in, base: " + "ab" * 20 + "}"),
    text("ab" * 20).replace("the compat layer", "the\u2028compat\x85layer"),  # breaks
])
def test_where_the_swap_is_not_certain_the_editor_writes_the_file(before: str) -> None:
    doc = yamldoc.load(before.encode("utf-8"), "series.yaml")
    new = "cd" * 20
    swapped = yamldoc.with_id(doc, ("upstream", "base"), new)
    written, _ = moved(before, new)
    assert yamldoc.load(written, "series.yaml").data["upstream"]["base"] == new
    assert yamldoc.load(written, "series.yaml").data["patches"] == doc.data["patches"]
    if swapped is not None:  # (certain after all: then it is what was written)
        assert swapped.encode("utf-8") == written


def test_a_change_beyond_the_base_is_the_editors() -> None:
    before = series.loads(text("ab" * 20).encode())
    other = before.with_base("cd" * 20)
    data = other.to_data()
    data["upstream"]["ref"] = "upstream/next"
    assert other._base_swapped(data) is None
    assert other._base_swapped(other.to_data()) == text("cd" * 20)


def test_a_rebases_write_of_a_series_read_before_imports_no_yaml(tmp_path: Path) -> None:
    """The second command that reads this series.yaml (its parse kept) and writes it with a
    new base runs without PyYAML."""
    (tmp_path / "series.yaml").write_text(text("ab" * 20))
    code = ("import sys; from pathlib import Path; from pq.model import series; "
            "d = Path(sys.argv[1]); s = series.loads((d / 'series.yaml').read_bytes(), "
            "'series.yaml', d); out = s.with_base('cd' * 20).dumps(); "
            "print(out.count(b'cdcd'), 'yaml' in sys.modules)")
    said = [subprocess.run([sys.executable, "-c", code, str(tmp_path)], check=True,
                           capture_output=True, text=True).stdout.split() for _ in range(2)]
    assert said == [["10", "True"], ["10", "False"]]  # (cdcd... : 10 times in 40)


def test_the_swapped_files_parse_is_kept_as_a_parse_would_give_it(tmp_path: Path) -> None:
    before = text("ab" * 20, "'", "   # the fork point", crlf=True)
    moved_series = series.loads(before.encode()).with_base("cd" * 20)
    moved_series.keep(tmp_path)
    written = moved_series.dumps()
    kept = yamlcache.get(tmp_path, written)
    parsed = yamldoc.load(written, "series.yaml")
    assert kept == (parsed.data, parsed.marks)
    assert list(kept[1]) == list(parsed.marks)  # in the parse's order too
    edited = moved_series.with_base("ef" * 20)
    edited = replace(edited, patches=edited.patches[:0])  # more than the base: not kept
    edited.keep(tmp_path)
    assert yamlcache.get(tmp_path, edited.dumps()) is None


def test_the_command_after_a_rebase_reads_its_series_without_yaml(tmp_path: Path) -> None:
    fork = one_patch_fork(tmp_path, {"pkg/__init__.py": "import torch\n\n\ndef op(x):\n"
                                     "    return x  # glue\n"}, {"README.md": "moved\n"})
    pq(fork, "rebase", "upstream/main")
    code = ("import sys; from pathlib import Path; from pq.model import series; "
            "s = series.loads(Path('series.yaml').read_bytes(), 'series.yaml', "
            "Path('.git/pq')); print(s.base[:12], 'yaml' in sys.modules)")
    said = subprocess.run([sys.executable, "-c", code], cwd=fork, check=True,
                          capture_output=True, text=True).stdout.split()
    assert said == [git(fork, "rev-parse", "upstream/main")[:12], "False"]
