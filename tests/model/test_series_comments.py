"""series.yaml rewrites keep the user's comments and layout (issue 10, issue 18 item 6):
through `pq export`, `pq rebase` and `pq init --force` on real repositories, for every kind
of edit pq makes, and for random comment placements and random edits (hypothesis)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from gitrepo import commit_all, git, make_fork, pq, write
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pq.model import series as series_mod
from pq.model import yamledit
from pq.model.series import LAYERS, PatchEntry, Series

BASE1 = "a1" * 20
BASE2 = "b2" * 20


def annotate(text: str) -> str:
    """The user's edits of a pq-written series.yaml: comments everywhere, a flow list,
    quoted values, blank lines between entries, an unknown field."""
    out = ["# Our Paddle fork of the ops.\n"]
    for line in text.splitlines(keepends=True):
        if line.startswith("  ref:"):
            line = line.rstrip("\n") + "   # the ref the fork follows\n"
        if line.startswith("patches:"):
            out.append("queue_paths: [mre, notes]   # flow list\n")
            out += [line, "  # head of the list\n"]
            continue
        if line.startswith("  - name:") and out[-1] != "  # head of the list\n":
            out += ["\n", "  # about " + line.split()[-1] + "\n"]
        out.append(line)
    out.append("# end of file\n")
    return "".join(out)


def fork_with_two(tmp_path: Path) -> Path:
    fork = make_fork(tmp_path)
    write(fork, "setup.py", "import paddle\n")
    commit_all(fork, "build: enable compat")
    write(fork, "pkg/__init__.py", "import paddle\n")
    commit_all(fork, "glue: import paddle")
    pq(fork, "init", "--upstream", "upstream/main")
    (fork / "series.yaml").write_text(annotate((fork / "series.yaml").read_text()))
    commit_all(fork, "pq: annotate the series")
    return fork


def test_export_keeps_comments_and_adds_entry_in_style(tmp_path: Path) -> None:
    fork = fork_with_two(tmp_path)
    before = (fork / "series.yaml").read_text()
    write(fork, "csrc/ops.cc", "#include <torch/extension.h>\nTORCH_LIBRARY(x, m) {}\n")
    commit_all(fork, "register op")
    pq(fork, "export")
    after = (fork / "series.yaml").read_text()
    # Everything the user wrote is there, unchanged, followed by the new entry.
    head, tail = before.rsplit("# end of file\n", 1)
    assert after.startswith(head.rstrip("\n") + "\n\n  - name: 0003-register-op.patch\n")
    assert after.endswith("    summary: 'register op'\n# end of file\n")  # siblings quote
    assert "queue_paths: [mre, notes]   # flow list\n" in after
    assert "ref: upstream/main   # the ref the fork follows\n" in after
    # Idempotent: a second export changes nothing.
    pq(fork, "export")
    assert (fork / "series.yaml").read_text() == after


def test_export_without_changes_keeps_the_file_byte_for_byte(tmp_path: Path) -> None:
    fork = fork_with_two(tmp_path)
    before = (fork / "series.yaml").read_bytes()
    pq(fork, "export")
    assert (fork / "series.yaml").read_bytes() == before


def test_dropped_commit_takes_its_comments(tmp_path: Path) -> None:
    fork = fork_with_two(tmp_path)
    git(fork, "rebase", "-q", "--onto", "HEAD~3", "HEAD~2")  # drop `build: enable compat`
    pq(fork, "export")
    after = (fork / "series.yaml").read_text()
    assert "0001-" not in after
    assert "# about 0002-glue-import-paddle.patch\n  - name: 0002" in after
    assert "  # head of the list\n" in after and after.endswith("# end of file\n")


def test_rebase_changes_only_the_base(tmp_path: Path) -> None:
    fork = fork_with_two(tmp_path)
    before = (fork / "series.yaml").read_text()
    up = tmp_path / "upstream"
    write(up, "README.md", "upstream, improved\n")
    new = commit_all(up, "upstream: docs")
    git(fork, "fetch", "-q", "upstream")
    old = git(fork, "merge-base", "HEAD", "upstream/main")
    pq(fork, "rebase", "upstream/main")
    assert (fork / "series.yaml").read_text() == before.replace(old, new)


def test_init_force_keeps_comments(tmp_path: Path) -> None:
    fork = fork_with_two(tmp_path)
    before = (fork / "series.yaml").read_text()
    pq(fork, "init", "--upstream", "upstream/main", "--force")
    assert (fork / "series.yaml").read_text() == before


SAMPLE = f"""\
# top
version: 1
upstream:
  ref: upstream/main  # eol ref
  base: '{BASE1}'
patches:
  # head
  - name: 0001-a.patch  # eol a
    layer: kernel
    summary: "do a"

  # above b
  - name: 0002-b.patch
    # inside b
    layer: build
    summary: "do b"
    owner: team   # unknown field
    # after b
  - name: 0003-c.patch
    layer: build
    summary: "do c"
# end
"""


def sample() -> Series:
    return series_mod.loads(SAMPLE.encode())


def render(s: Series) -> str:
    data, kept = s.render()
    assert kept
    assert yamledit.same(series_mod.loads(data).to_data(), s.to_data())
    return data.decode()


def test_removed_entry_takes_its_comments_head_and_end_stay() -> None:
    s = sample()
    out = render(replace(s, patches=(s.patches[0], s.patches[2])))
    assert out == SAMPLE.replace(SAMPLE[SAMPLE.index("  # above b"):
                                        SAMPLE.index("  - name: 0003")], "")


def test_reorder_moves_comments_with_entries() -> None:
    s = sample()
    a, b, c = s.patches
    out = render(replace(s, patches=(c, b, a)))
    assert out.index("0003-c") < out.index("# above b") < out.index("0002-b") < out.index(
        "# after b") < out.index("0001-a.patch  # eol a")
    assert out.startswith(SAMPLE[:SAMPLE.index("  - name: 0001")])
    assert out.endswith('    summary: "do a"\n# end\n')


def test_new_entry_uses_the_quoting_of_its_siblings_and_values_change_in_place() -> None:
    s = sample()
    a, b, c = s.patches
    d = PatchEntry("0004-d.patch", "kernel", "do d")
    out = render(replace(s, base=BASE2, patches=(a, replace(b, layer="kernel"), c, d)))
    assert f"  base: '{BASE2}'\n" in out
    assert "    # inside b\n    layer: kernel\n" in out
    assert out.endswith('  - name: 0004-d.patch\n    layer: kernel\n    summary: "do d"\n'
                        "# end\n")


def test_new_block_added_to_entry_and_list_emptied() -> None:
    s = sample()
    a, b, c = s.patches
    out = render(replace(s, patches=(a, b, replace(c, workaround={"reason": "1.2"}))))
    assert out.endswith('    summary: "do c"\n    workaround:\n      reason: \'1.2\'\n# end\n')
    out = render(replace(s, patches=()))
    assert out == SAMPLE[:SAMPLE.index("  - name: 0001")] + "  []\n# end\n"


def test_empty_list_gets_block_entries_and_keeps_its_comment() -> None:
    s = series_mod.loads(f"version: 1\nupstream:\n  ref: u\n  base: {BASE1}\n"
                         "patches: []  # none yet\nowners: [a, b]\n".encode())
    out = render(replace(s, patches=(PatchEntry("0001-n.patch", "kernel", "n"),)))
    assert out.endswith("patches: []  # none yet\nowners: [a, b]\n".replace(
        "patches: []  # none yet\n", "patches:  # none yet\n  - name: 0001-n.patch\n"
        "    layer: kernel\n    summary: n\n"))


def test_crlf_file_stays_crlf() -> None:
    s = series_mod.loads(SAMPLE.replace("\n", "\r\n").encode())
    d = PatchEntry("0004-d.patch", "kernel", "do d")
    out = render(replace(s, patches=(s.patches[2], d)))
    assert "\n" not in out.replace("\r\n", "")
    assert "# end\r\n" in out and "# eol ref\r\n" in out


def test_what_cannot_be_edited_is_dumped_plainly_and_exactly() -> None:
    s = series_mod.loads(("{version: 1, upstream: {ref: up, base: '" + BASE1 + "'},  # flow\n"
                          " patches: []}\n").encode())
    data, kept = replace(s, base=BASE2).render()
    assert not kept
    assert data.startswith(b"# pq series:")
    assert yamledit.same(series_mod.loads(data).to_data(), replace(s, base=BASE2).to_data())
    assert yamledit.rewrite("a: [1,\n  2]\n", {"a": [1, 2]}, {"a": [1, 2]}) is not None


def test_new_series_is_the_plain_dump() -> None:
    data, kept = series_mod.new_series("upstream/main", BASE1).render()
    assert kept and data.startswith(b"# pq series:")


# -- random comment placements and random edits ----------------------------------

WORDS = st.sampled_from(["fix", "ops", "compat", "a: b", "x#y", "it's", "naïve", "- z"])


@st.composite
def commented_series(draw: st.DrawFn) -> tuple[str, dict[str, set[str]]]:
    """A series file with comments at random places; `owners` maps each comment to the
    entry it belongs to ("" for comments that belong to no entry)."""
    n = draw(st.integers(1, 5))
    quote = draw(st.sampled_from(["", "'", '"']))
    owners: dict[str, str] = {}
    counter = iter(range(10_000))

    def c(owner: str, maybe: bool = True) -> str:
        if maybe and not draw(st.booleans()):
            return ""
        tag = f"c{next(counter)}"
        owners[tag] = owner
        return f"# {tag}"

    def eol(owner: str) -> str:
        text = c(owner)
        return "  " + text if text else ""

    d = draw(st.sampled_from(["", "  "]))  # `-` under the key, or indented
    lines = [c(""), "version: 1", "upstream:", f"  ref: upstream/main{eol('')}",
             f"  base: {BASE1}{eol('')}", f"patches:{eol('')}", d + c("")]
    for i in range(n):
        name = f"{i + 1:04d}-p{i}.patch"
        if i and draw(st.booleans()):
            lines.append("<blank>")
        if i:
            lines.append(d + c(name))
        summary = " ".join(draw(st.lists(WORDS, min_size=1, max_size=3)))
        rendered = yamledit._scalar(summary, quote or None)
        lines += [f"{d}- name: {name}{eol(name)}", f"{d}  " + c(name),
                  f"{d}  layer: {draw(st.sampled_from(LAYERS))}{eol(name)}",
                  f"{d}  summary: {rendered}{eol(name)}", f"{d}  " + c(name)]
    if draw(st.booleans()):
        lines += [c(""), f"owners: [a, b]{eol('')}"]
    lines.append(c(""))
    text = "".join(("" if line == "<blank>" else line) + "\n"
                   for line in lines if line.strip())
    by_owner: dict[str, set[str]] = {}
    for tag, owner in owners.items():
        by_owner.setdefault(owner, set()).add(tag)
    return text, by_owner


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(commented_series(), st.data())
def test_random_comments_survive_random_edits(case: tuple[str, dict[str, set[str]]],
                                              data: st.DataObject) -> None:
    text, owners = case
    s = series_mod.loads(text.encode())
    kept = data.draw(st.permutations(list(s.patches)))
    kept = kept[:data.draw(st.integers(0, len(kept)))]
    entries = []
    for e in kept:
        entries.append(replace(e, layer=data.draw(st.sampled_from(LAYERS)),
                               summary=data.draw(st.sampled_from([e.summary, "changed", "a: b"]))))
    for j in range(data.draw(st.integers(0, 2))):
        entries.insert(data.draw(st.integers(0, len(entries))),
                       PatchEntry(f"{j + 10:04d}-new.patch", "build", f"new {j}"))
    target = replace(s, base=data.draw(st.sampled_from([BASE1, BASE2])),
                     patches=tuple(entries))
    out = render(target)
    names = {e.name for e in entries}
    for owner, tags in owners.items():
        for tag in tags:
            assert (f"# {tag}\n" in out or f"# {tag}\r" in out) == (owner == "" or owner in names)
    # Deterministic, and a second rewrite of the result with nothing to change is a no-op.
    assert render(target) == out
    again = series_mod.loads(out.encode())
    assert render(again) == out


def test_queue_paths_are_kept_as_written_trailing_slash_and_all(tmp_path: Path) -> None:
    """`queue_paths: [notes/]` reads as `notes`; pq writes it back as the user wrote it, and
    `pq export` with nothing to export writes nothing."""
    fork = fork_with_two(tmp_path)
    text = (fork / "series.yaml").read_text().replace("[mre, notes]", "[mre/, notes/]")
    write(fork, "series.yaml", text)
    commit_all(fork, "pq: queue paths as folders")
    result = pq(fork, "export")
    assert "already up to date" in result.output
    assert (fork / "series.yaml").read_text() == text
    loaded = series_mod.loads(text.encode(), "series.yaml")
    assert loaded.queue_extra == ("mre", "notes")
    assert "queue_paths: [mre/, notes/]" in loaded.dumps().decode()
    moved = replace(loaded, queue_extra=("notes",))  # a real change is written as pq has it
    assert "queue_paths: [notes]" in moved.dumps().decode()


def test_an_empty_queue_paths_list_stays() -> None:
    text = series_mod.new_series("upstream/main", BASE1).dumps().decode().replace(
        "patches:", "queue_paths: []\npatches:")
    loaded = series_mod.loads(text.encode(), "series.yaml")
    assert loaded.dumps().decode() == text
