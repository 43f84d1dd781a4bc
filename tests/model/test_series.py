"""pq.model.series without a repository: what a valid series loads to, every refusal at
its file:line:column, the file check, and rewrites (unknown fields and comments kept)."""

from __future__ import annotations

import pytest

from pq.errors import ConfigError
from pq.model import series
from pq.model import yamldoc as series_yamldoc
from pq.model.series import PatchEntry

BASE = "a" * 40
VALID = f"""\
# the fork's queue
version: 1
upstream:
  ref: upstream/main  # the ref the fork follows
  base: {BASE}
patches:
  - name: 0001-build.patch
    layer: build
    summary: enable compat
    owner: me
  - name: 0002-glue.patch
    layer: python-glue
    summary: scoped compat
    workaround:
      kind: compat-gap
extra: kept
""".encode()


def loads_error(text: bytes) -> str:
    with pytest.raises(ConfigError) as info:
        series.loads(text)
    return str(info.value)


def edited(old: str, new: str) -> bytes:
    text = VALID.decode()
    assert old in text
    return text.replace(old, new, 1).encode()


def test_valid_series_loads() -> None:
    s = series.loads(VALID)
    assert (s.upstream_ref, s.base) == ("upstream/main", BASE)
    assert [e.name for e in s.patches] == ["0001-build.patch", "0002-glue.patch"]
    assert s.patches[0] == PatchEntry("0001-build.patch", "build", "enable compat")
    assert s.patches[1].workaround == {"kind": "compat-gap"}
    assert s.patches[1].number == 2 and s.index_of("0002-glue.patch") == 1
    assert s.entry("nope") is None
    assert s.queue_paths == series.DEFAULT_QUEUE_PATHS


def test_sha256_base_and_empty_patches() -> None:
    s = series.loads(f"version: 1\nupstream: {{ref: u, base: {'b' * 64}}}\n".encode())
    assert s.base == "b" * 64 and s.patches == ()


@pytest.mark.parametrize("old,new,expected", [
    ("version: 1", "version: 2", "series.yaml:2:10: unsupported series version 2"),
    ("version: 1", "version: '1'", "series.yaml:2:10: `version` must be an integer"),
    ("version: 1", "version: true", "series.yaml:2:10: `version` must be an integer"),
    ("version: 1\n", "", "series.yaml:2:1: missing `version`"),
    ("  ref: upstream/main", "  ref: ''", "series.yaml:4:8: `upstream.ref` must be a non-empty"),
    (f"base: {BASE}", "base: abc", "series.yaml:5:9: `upstream.base` must be a full commit"),
    (f"base: {BASE}", f"base: {BASE.upper()}", "series.yaml:5:9: `upstream.base` must be"),
    # An id with a line end after it names no commit (a block scalar keeps one).
    (f"base: {BASE}", f"base: |\n    {BASE}", "series.yaml:5:9: `upstream.base` must be a full"),
    (f"base: {BASE}", f'base: "{BASE}\\n"', "series.yaml:5:9: `upstream.base` must be a full"),
    ("patches:\n", "patches: 3\nnone:\n", "series.yaml:6:10: `patches` must be a list"),
    ("  - name: 0002-glue.patch", "  - name: 0001-build.patch",
     "series.yaml:11:11: duplicate patch name '0001-build.patch' (also entry 1)"),
    ("  - name: 0002-glue.patch", "  - name: sub/0002.patch",
     "series.yaml:11:11: bad patch name 'sub/0002.patch'"),
    # Longer than a file name may be, with pq's temporary name around it (`.N.xxxxxxxx.tmp`).
    ("  - name: 0002-glue.patch", f"  - name: {'x' * 195}.patch",
     f"series.yaml:11:11: bad patch name '{'x' * 195}.patch'"),
    ("  - name: 0002-glue.patch", "  - name: \"0002-glue.patch\\n\"",
     "series.yaml:11:11: bad patch name '0002-glue.patch\\n'"),
    ("layer: build", "layer: kernal", "series.yaml:8:12: patch 0001-build.patch: unknown layer"),
    ("    layer: build\n", "", "series.yaml:7:5: patch 0001-build.patch: missing `layer`"),
    ("summary: enable compat", "summary: [a]", "series.yaml:9:14: patch 0001-build.patch: "
     "`summary` must be a string"),
    ("    workaround:\n      kind: compat-gap\n", "    workaround: [x]\n",
     "series.yaml:14:17: patch 0002-glue.patch: `workaround` must be a mapping"),
    ("patches:\n", "queue_paths: [../up]\npatches:\n",
     "series.yaml:6:15: queue path '../up' is not a folder of the working tree"),
    ("patches:\n", "queue_paths: [.git/x]\npatches:\n",
     "series.yaml:6:15: queue path '.git/x' is not a folder of the working tree"),
    ("patches:\n", "queue_paths: ['']\npatches:\n",
     "series.yaml:6:14: `queue_paths` must be a list of paths"),
    ("patches:\n", "\0patches:\n", "series.yaml:6:1: invalid YAML: character U+0000 is not "
     "allowed"),
])
def test_refusals_name_file_line_column(old: str, new: str, expected: str) -> None:
    assert loads_error(edited(old, new)).startswith(expected)


def test_yamls_own_line_breaks_do_not_move_a_line_number() -> None:
    """YAML 1.1 breaks a line at U+2028 (and U+0085, U+2029), editors and git do not: a
    pasted one moved every later line number by one; in a comment, it broke the file at
    a line with nothing wrong, naming no character."""
    in_summary = edited("summary: enable compat", "summary: \"enable\u2028compat\"")
    assert loads_error(in_summary.replace(b"layer: build", b"layer: kernal")).startswith(
        "series.yaml:8:12: patch 0001-build.patch: unknown layer")
    text = VALID.decode().replace("patches:\n", "# a note\u2028: x\npatches:\n", 1).encode()
    with pytest.raises(ConfigError) as info:
        series.loads(text)
    assert "the file holds U+2028 at line 6, column 9" in str(info.value)
    assert "remove the line break characters YAML reads" in (info.value.hint or "")


def test_a_document_of_too_many_nodes_is_named_where() -> None:
    text = VALID + b"x-notes: [" + b"1," * (series_yamldoc.MAX_NODES + 5) + b"1]\n"
    with pytest.raises(ConfigError) as info:
        series.loads(text)
    lines = VALID.count(b"\n")
    assert str(info.value).startswith(f"series.yaml:{lines + 1}:")
    assert f"more than {series_yamldoc.MAX_NODES} YAML nodes" in str(info.value)
    assert "is this really a series file?" in (info.value.hint or "")


def test_a_queue_path_whose_name_starts_with_git_is_the_forks() -> None:
    """`.github/` is a folder of the working tree: it was refused as escaping the
    repository (any name starting with `.git` was)."""
    loaded = series.loads(edited("patches:\n", "queue_paths: [.github, .gitlab-notes]\n"
                                 "patches:\n"), "series.yaml")
    assert loaded.queue_paths[-2:] == (".github", ".gitlab-notes")


def test_the_longest_patch_name_is_200_characters() -> None:
    name = "x" * 194 + ".patch"
    assert series.loads(edited("  - name: 0002-glue.patch", f"  - name: {name}")
                        ).patches[1].name == name


@pytest.mark.parametrize("text,expected", [
    (b"- 1\n", "series.yaml:1:1: a series file must be a mapping"),
    (b"", "series.yaml: a series file must be a mapping"),
    (b"version: 1\nupstream: main\n", "series.yaml:2:11: `upstream` must be a mapping"),
    (b"version: 1\n", "series.yaml:1:1: `upstream` must be a mapping"),
    (f"version: 1\nupstream: {{ref: u, base: {BASE}}}\npatches: [x]\n".encode(),
     "series.yaml:3:11: patch entry 1 must be a mapping"),
    (f"version: 1\nupstream: {{ref: u, base: {BASE}}}\npatches: [{{layer: build}}]\n".encode(),
     "series.yaml:3:11: patch entry 1 needs a `name`"),
])
def test_refusals_of_the_shape(text: bytes, expected: str) -> None:
    assert loads_error(text).startswith(expected)


def test_check_files_both_ways() -> None:
    s = series.loads(VALID)
    series.check_files(s, ["0001-build.patch", "0002-glue.patch", "README"])
    with pytest.raises(ConfigError) as info:
        series.check_files(s, ["0001-build.patch"])
    assert str(info.value).startswith("series.yaml:11:11: patch 0002-glue.patch is listed but "
                                      "patches/0002-glue.patch does not exist")
    with pytest.raises(ConfigError) as info:
        series.check_files(s, ["0001-build.patch", "0002-glue.patch", "0003-stray.patch"])
    assert "patches/0003-stray.patch is not listed in series.yaml" in str(info.value)
    assert "git rm -f patches/0003-stray.patch" in (info.value.hint or "")


def test_unchanged_series_rewrites_to_the_same_bytes() -> None:
    assert series.loads(VALID).dumps() == VALID


def test_rewrite_keeps_comments_and_unknown_fields() -> None:
    s = series.loads(VALID)
    moved = s.with_base("c" * 40)
    out, kept = moved.render()
    assert kept
    assert out == VALID.replace(BASE.encode(), b"c" * 40)
    again = series.loads(out)
    assert again.base == "c" * 40 and again.raw["extra"] == "kept"
    assert again.patches[0].raw["owner"] == "me"


def test_new_series_dumps_with_header_and_loads_back() -> None:
    s = series.new_series("upstream/main", BASE)
    out, kept = s.render()
    assert kept and out.startswith(b"# pq series:")
    assert series.loads(out) == s
    entry = PatchEntry("0001-x.patch", "kernel", "a kernel", workaround={"kind": "compat-gap"})
    from dataclasses import replace
    with_entry = replace(s, patches=(entry,))
    assert series.loads(with_entry.dumps()).patches == (entry,)


def test_a_bad_patch_name_says_which_characters_a_name_may_hold() -> None:
    with pytest.raises(ConfigError) as info:
        series.loads(edited("  - name: 0002-glue.patch", "  - name: 0002-été.patch"))
    assert str(info.value).startswith("series.yaml:11:11: bad patch name '0002-été.patch'")
    assert info.value.hint is not None and "ASCII letters, digits and . _ + -" in info.value.hint
