"""One test per audit rule: plant exactly that violation in a real series, see exactly that
finding; the clean series gives none."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from fixtures.audit.auditfork import (
    COMPILE,
    ISSUE,
    KERNEL,
    M_COMPILE,
    Spec,
    audit_json,
    build_fork,
    clean_specs,
    edit_series,
    patch_names,
    rule_ids,
)
from gitrepo import commit_all, git, write

from pq.audit import rules
from pq.audit.api import UpstreamCopies
from pq.audit.signals import broad_excepts
from pq.git.repo import Git
from pq.model.diff import parse

Change = Callable[[list[Spec]], None]
P_LIBRARY, P_TESTING, P_SCOPED, P_COMPILE, P_BUILD = 1, 2, 4, 5, 6


def plant(tmp_path: Path, change: Change) -> tuple[Path, list[str]]:
    specs = clean_specs()
    change(specs)
    fork = build_fork(tmp_path, specs)
    return fork, patch_names(fork)


def only(tmp_path: Path, change: Change, rule_id: str, patch: int,
         *args: str) -> dict[str, object]:
    """Plant, audit, and check that the one finding is `rule_id` on patch number `patch`."""
    fork, names = plant(tmp_path, change)
    data = audit_json(fork, *args)
    assert rule_ids(data) == [(rule_id, names[patch])], data["findings"]
    assert data["exit_code"] == 1
    finding: dict[str, object] = data["findings"][0]
    rule = rules.BY_ID[rule_id]
    assert (finding["rule"], finding["severity"]) == (rule.name, rule.severity)
    assert finding["fix"] and finding["message"]
    return finding


def test_clean_series_has_no_findings(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    data = audit_json(fork)
    assert data["findings"] == []
    assert data["exit_code"] == 0
    assert [w["patch"] for w in data["workarounds"]] == [
        n for i, n in enumerate(patch_names(fork)) if i in (1, 2, 3, 5, 6)]


def test_rule_ids_are_unique_and_stable() -> None:
    ids = [r.id for r in rules.RULES]
    assert ids == [f"WA{i:03d}" for i in range(1, len(ids) + 1)]
    assert len({r.name for r in rules.RULES}) == len(ids)
    assert all(r.severity in (rules.ERROR, rules.WARNING) and r.fix for r in rules.RULES)


@pytest.mark.parametrize("field", ["kind", "covers", "reason", "remove_when", "marker"])
def test_wa001_missing_field(tmp_path: Path, field: str) -> None:
    def change(specs: list[Spec]) -> None:
        assert specs[P_LIBRARY].workaround
        del specs[P_LIBRARY].workaround[field]

    f = only(tmp_path, change, "WA001", P_LIBRARY)
    assert f"`{field}`" in str(f["message"])
    assert str(f["location"]).startswith("series.yaml:")


@pytest.mark.parametrize("field", ["covers", "reason", "remove_when"])
def test_wa001_an_empty_field_is_a_missing_one(tmp_path: Path, field: str) -> None:
    """`covers: ""` (or `remove_when: ""`) stopped the audit with exit 2."""
    def change(specs: list[Spec]) -> None:
        assert specs[P_LIBRARY].workaround
        specs[P_LIBRARY].workaround[field] = ""

    f = only(tmp_path, change, "WA001", P_LIBRARY)
    assert f"`{field}`" in str(f["message"])


def test_wa001_missing_issue_outside_compat_gap(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        assert specs[P_COMPILE].workaround
        del specs[P_COMPILE].workaround["issue"]

    only(tmp_path, change, "WA001", P_COMPILE)


@pytest.mark.parametrize("issue", [None, "not-needed: nobody will look at it"])
def test_wa002_compat_gap_without_issue(tmp_path: Path, issue: str | None) -> None:
    def change(specs: list[Spec]) -> None:
        wa = specs[P_LIBRARY].workaround
        assert wa
        if issue is None:
            del wa["issue"]
        else:
            wa["issue"] = issue

    only(tmp_path, change, "WA002", P_LIBRARY)


def test_wa003_compat_gap_without_mre(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        wa = specs[P_TESTING].workaround
        assert wa
        del wa["mre"]
        wa["remove_when"] = ["paddle >= 3.4"]

    only(tmp_path, change, "WA003", P_TESTING)


@pytest.mark.parametrize("how", ["none", "no-run-sh"])
def test_wa004_mre_missing(tmp_path: Path, how: str) -> None:
    def change(specs: list[Spec]) -> None:
        specs[P_LIBRARY].mre = how

    f = only(tmp_path, change, "WA004", P_LIBRARY)
    assert "mre/torch-library-include" in str(f["message"])


def test_wa004_mre_passes_without_mre(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        assert specs[P_COMPILE].workaround
        specs[P_COMPILE].workaround["remove_when"] = ["mre-passes"]

    only(tmp_path, change, "WA004", P_COMPILE)


def test_wa005_build_entry_with_issue(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        assert specs[P_BUILD].workaround
        specs[P_BUILD].workaround["issue"] = ISSUE.format(1)

    only(tmp_path, change, "WA005", P_BUILD)


def test_wa006_marker_missing(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        assert specs[P_LIBRARY].workaround
        specs[P_LIBRARY].workaround["marker"] = "TODO(paddle#1): not what the code says"

    only(tmp_path, change, "WA006", P_LIBRARY)


def test_wa006_marker_waived_with_a_reason(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        assert specs[P_LIBRARY].workaround
        specs[P_LIBRARY].workaround["marker"] = "none: valid PyTorch code, offered upstream"

    fork, _ = plant(tmp_path, change)
    data = audit_json(fork)
    assert data["findings"] == []
    # --json says the marker was waived, and why (as `issue` keeps "not-needed: <why>").
    markers = [w["marker"] for w in data["workarounds"]]
    assert "none: valid PyTorch code, offered upstream" in markers, markers


def test_wa007_outside_covers(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        specs[P_TESTING].files["README.md"] = "tinyop, ported to Paddle\n"

    f = only(tmp_path, change, "WA007", P_TESTING)
    assert "README.md" in str(f["message"])


def test_covers_reads_dot_slash_and_doubled_slashes_as_git_does(tmp_path: Path) -> None:
    """`covers: ./tests/x.py` was accepted and matched nothing: WA007 named the file as
    outside a `covers` that lists it; git's pathspec matches it."""
    def change(specs: list[Spec]) -> None:
        wa = specs[P_TESTING].workaround
        assert wa
        covers = wa["covers"] if isinstance(wa["covers"], list) else [wa["covers"]]
        wa["covers"] = [f"./{c}".replace("/", "//", 1) if "/" in c else f"./{c}"
                        for c in covers]

    fork, _ = plant(tmp_path, change)
    assert "./" in (fork / "series.yaml").read_text()
    data = audit_json(fork)
    assert rule_ids(data) == [] and data["exit_code"] == 0, data["findings"]
    series = yaml.safe_load((fork / "series.yaml").read_text())
    next(e for e in series["patches"] if e.get("workaround"))["workaround"]["covers"] = "./"
    (fork / "series.yaml").write_text(yaml.safe_dump(series, sort_keys=False, width=1000))
    from gitrepo import pq

    refused = pq(fork, "audit", "workarounds", ok=False)
    assert refused.exit_code == 2 and "covers './' is the whole repository" in refused.output


def _try(handler: str, indent: str = "    ") -> str:
    return (f"{indent}# {M_COMPILE}\n{indent}try:\n{indent * 2}return torch.compile(fn)\n"
            f"{indent}{handler}{indent}return fn\n")


@pytest.mark.parametrize("body", [_try("except:\n        pass\n"),
                                  _try("except Exception as exc:  # why not\n        pass\n"),
                                  _try("except BaseException: pass\n"),
                                  _try("except (Exception):\n        ...\n"),
                                  _try("except Exception:\n\t\tpass\n", "\t"),  # tabs
                                  _try("except (ImportError, Exception):\n        pass\n"),
                                  _try("except (OSError, BaseException,) as e: pass\n")])
def test_wa008_broad_except(tmp_path: Path, body: str) -> None:
    def change(specs: list[Spec]) -> None:
        specs[P_COMPILE].files["tinyop/compile.py"] = COMPILE.replace(
            "    return torch.compile(fn)\n", body)

    only(tmp_path, change, "WA008", P_COMPILE)


@pytest.mark.parametrize(("code", "found"), [
    ("try { f(); } catch (...) {}", True),
    ("try { f(); } catch (...) {\n}", True),
    ("try {\n  f();\n} catch (...) { /* ignore */ }", True),
    ("try { f(); } catch (...) {\n  // nothing to do\n}", True),
    ("try { f(); } catch (...) { g(); }", False),
    ("try { f(); } catch (...) {\n  throw;\n}", False),
    ("try { f(); } catch (const std::exception& e) {}", False),
])
def test_wa008_an_empty_catch_all_over_several_lines(code: str, found: bool) -> None:
    from pq.audit.signals import broad_excepts
    from pq.model import diff as diffs

    lines = code.split("\n")
    body = "".join(f"+{x}\n" for x in lines)
    text = f"diff --git a/k.cc b/k.cc\n--- a/k.cc\n+++ b/k.cc\n@@ -0,0 +1,{len(lines)} @@\n{body}"
    assert bool(broad_excepts(diffs.parse(text.encode(), "p")[0])) is found


def test_wa008_a_tuple_of_narrow_exceptions_is_fine() -> None:
    from pq.audit.signals import _EXCEPT

    assert _EXCEPT.match("except (ImportError, AttributeError):") is None
    assert _EXCEPT.match("except ExceptionGroup:") is None


def test_wa008_narrow_except_is_fine(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        specs[P_COMPILE].files["tinyop/compile.py"] = COMPILE.replace(
            "    return torch.compile(fn)\n",
            f"    # {M_COMPILE}\n    try:\n        return torch.compile(fn)\n"
            "    except AttributeError:\n        return fn\n")

    fork, _ = plant(tmp_path, change)
    assert audit_json(fork)["findings"] == []


def test_wa009_unbounded_monkey_patch(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        specs[P_COMPILE].files["tinyop/compile.py"] = (
            f"import torch\n\n# {M_COMPILE}\ntorch.compile = lambda fn: fn\n\n\n"
            "def maybe_compile(fn):\n    return torch.compile(fn)\n")
        wa = specs[P_COMPILE].workaround
        assert wa
        del wa["covers"], wa["remove_when"]

    f = only(tmp_path, change, "WA009", P_COMPILE)
    assert "torch.compile = lambda" in str(f["message"])


@pytest.mark.parametrize("call", ["paddle.enable_compat()", "paddle.enable_compat(scope=None)",
                                  "paddle.enable_compat(\n    blocked_modules={'x'},\n)",
                                  "paddle.compat.enable_torch_proxy()",
                                  "import paddle as pd\npd.enable_compat()"])
def test_wa010_global_compat_outside_build(tmp_path: Path, call: str) -> None:
    def change(specs: list[Spec]) -> None:
        specs[P_SCOPED].files["tinyop/__init__.py"] = f"import paddle\n\n{call}\n\n" + \
            "import torch\n"

    only(tmp_path, change, "WA010", P_SCOPED)


def test_wa010_scoped_or_build_entry_is_fine(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        specs[P_SCOPED].files["tinyop/__init__.py"] = (
            "import paddle\n\npaddle.enable_compat(\n    scope={'tinyop'},\n)\n"
            "class Op:\n    def on(self):\n        self.enable_compat()  # the object's own\n"
            '"""Not `paddle.enable_compat()` here:\n  paddle.enable_compat() is global.\n"""\n'
            "HINT = 'call paddle.enable_compat() with a scope'\n")
        specs[P_SCOPED].files["scripts/build_wheel.py"] = "import paddle\npaddle.enable_compat()\n"

    fork, _ = plant(tmp_path, change)
    assert audit_json(fork)["findings"] == []


def test_wa011_pattern_spread(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        spec = specs[P_TESTING]
        body = spec.files["tests/test_tinyop.py"]
        assert body
        for name in ("test_a.py", "test_b.py"):
            spec.files[f"tests/{name}"] = body
        assert spec.workaround
        spec.workaround["covers"] = ["tests/"]

    f = only(tmp_path, change, "WA011", P_TESTING)
    assert "3 files" in str(f["message"])


def test_wa011_is_located_in_a_file_of_the_patch_it_is_reported_on() -> None:
    """The line is added to pkg/ops.py by the first patch, to pkg/__init__.py (first in
    name order) and tests/test_x.py by the others: the finding, on the first patch, names
    pkg/ops.py, a file of that patch."""
    from pq.audit.rules import PatchInput, check_spread
    from pq.model import diff as diffs
    from pq.model.series import PatchEntry

    line = "X_SHIM = paddle_shim_function(1)"
    inputs = []
    for i, path in enumerate(["pkg/ops.py", "pkg/__init__.py", "tests/test_x.py"]):
        text = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n@@ -1 +1,2 @@\n x\n+{line}\n"
        inputs.append(PatchInput(PatchEntry(f"000{i + 1}-p.patch", "python-glue", "s"), i,
                                 object(), tuple(diffs.parse(text.encode(), "p")),  # type: ignore[arg-type]
                                 (), None, lambda path: ""))
    (f,) = check_spread(inputs)
    assert (f.patch, f.location) == ("0001-p.patch", "pkg/ops.py")


def test_wa012_kernel_edit(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        spec = specs[P_LIBRARY]
        spec.files["csrc/kernel/scale_add.cc"] = KERNEL.replace(
            "  for", "  // Paddle's float accumulates differently\n  for")
        assert spec.workaround
        spec.workaround["covers"] = ["csrc/ops.cc", "csrc/kernel/scale_add.cc"]

    f = only(tmp_path, change, "WA012", P_LIBRARY)
    assert f["severity"] == "warning"


def test_wa012_goes_by_the_files_not_a_layer_they_do_not_bear_out(tmp_path: Path) -> None:
    """A python-glue workaround declared `layer: kernel` by mistake edits no kernel file:
    WA012 said it "edits kernel code (its files)", a fix with nothing to act on; lint's
    LN001 names the wrong layer."""
    import json

    from gitrepo import pq

    fork, names = plant(tmp_path, lambda specs: None)
    data = yaml.safe_load((fork / "series.yaml").read_text())
    (entry,) = [e for e in data["patches"] if e["name"] == names[P_TESTING]]
    assert entry["layer"] == "python-glue"
    entry["layer"] = "kernel"
    (fork / "series.yaml").write_text(yaml.safe_dump(data, sort_keys=False, width=1000))
    data = audit_json(fork)
    assert "WA012" not in [rule for rule, _ in rule_ids(data)], data["findings"]
    lint = json.loads(pq(fork, "lint", "--json", ok=False).output)
    assert ("LN001", names[P_TESTING]) in [(f["rule_id"], f["patch"]) for f in lint["findings"]]


@pytest.mark.parametrize("line", [
    "_place = paddle.base.core.CPUPlace()\n",
    "from paddle import _C_ops  # the fast path\n",
    "from paddle.base import core\n",
    "from paddle import nn, fluid\n",
    "from paddle.framework import core\n",
])
def test_wa013_paddle_private_api(tmp_path: Path, line: str) -> None:
    def change(specs: list[Spec]) -> None:
        specs[P_SCOPED].files["tinyop/__init__.py"] = (
            'import paddle\n\npaddle.enable_compat(scope={"tinyop"})\n' + line)

    only(tmp_path, change, "WA013", P_SCOPED)


@pytest.mark.parametrize("code", [
    "# TODO: drop once compat catches up\nX = 1\n",
    "# Work around the proxy's missing attribute\nX = 1\n",
    "import torch\nHAS_LIBRARY = hasattr(torch, 'library')\n",
    "try:\n    import torch._dynamo as dynamo\nexcept ImportError:\n    dynamo = None\n",
    "import numpy\nimport torch\ntorch.testing = numpy.testing\n",
    "import torch\nsetattr(torch, 'testing', None)\n",
])
def test_wa014_undeclared_workaround(tmp_path: Path, code: str) -> None:
    def change(specs: list[Spec]) -> None:
        specs[P_SCOPED].files["tinyop/shim.py"] = code

    f = only(tmp_path, change, "WA014", P_SCOPED)
    assert str(f["location"]).startswith("tinyop/shim.py:")


def test_wa015_dep3_headers_disagree_with_series(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    names = patch_names(fork)
    block = dict(clean_specs()[P_LIBRARY].workaround or {})
    block["issue"] = ISSUE.format(99999)
    edit_series(fork, {names[P_LIBRARY]: block})  # series.yaml edited, no `pq export`
    data = audit_json(fork)
    assert rule_ids(data) == [("WA015", names[P_LIBRARY])]
    assert "Bug" in data["findings"][0]["message"]


def test_wa015_hand_edited_patch_header(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    name = patch_names(fork)[P_TESTING]
    path = fork / "patches" / name
    path.write_bytes(path.read_bytes().replace(b"X-Pq-Workaround: compat-gap\n", b""))
    data = audit_json(fork)
    assert rule_ids(data) == [("WA015", name)]
    assert "X-Pq-Workaround" in data["findings"][0]["message"]


def test_wa016_manual_removal_only(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        assert specs[P_COMPILE].workaround
        specs[P_COMPILE].workaround["remove_when"] = [{"manual": "ask upstream about it"}]

    only(tmp_path, change, "WA016", P_COMPILE)


def test_wa017_removable_only_with_strict(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        assert specs[P_LIBRARY].workaround
        specs[P_LIBRARY].workaround["remove_when"] = ["paddle >= 3.4"]

    fork, names = plant(tmp_path, change)
    relaxed = audit_json(fork, "--paddle-version", "3.4.0")
    assert relaxed["findings"] == [] and relaxed["exit_code"] == 0
    assert relaxed["summary"]["removable"] == 1
    assert relaxed["workarounds"][0]["removal"] == "met"
    strict = audit_json(fork, "--paddle-version", "3.4.0", "--strict")
    assert rule_ids(strict) == [("WA017", names[P_LIBRARY])]
    assert strict["exit_code"] == 1
    # Acknowledged, WA017 is used by --strict; a plain audit, which does not check that
    # rule, does not call the acknowledgement unused (removing it failed --strict).
    data = yaml.safe_load((fork / "series.yaml").read_text())
    entry = next(e for e in data["patches"] if e["name"] == names[P_LIBRARY])
    entry["acknowledged"] = [{"rule": "WA017", "reason": "kept until the 3.4 rollout"}]
    (fork / "series.yaml").write_text(yaml.safe_dump(data, sort_keys=False, width=1000))
    acked = audit_json(fork, "--paddle-version", "3.4.0", "--strict")
    assert (acked["findings"], acked["unused_acknowledgements"]) == ([], [])
    plain = audit_json(fork, "--paddle-version", "3.4.0")
    assert (plain["findings"], plain["unused_acknowledgements"]) == ([], [])


def test_dep3_round_trip_of_non_ascii_and_long_metadata(tmp_path: Path) -> None:
    def change(specs: list[Spec]) -> None:
        spec = specs[P_LIBRARY]
        spec.message = "cpp-compat: inclure <torch/library.h> — Größe  und  Ümlaut " + "x" * 200
        assert spec.workaround
        spec.workaround["covers"] = ["csrc/ops.cc::scale_add", "csrc/ops.cc::TORCH_LIBRARY"]
        spec.workaround["remove_when"] = ["paddle >= 3.4", "mre-passes",
                                          {"manual": "vérifier sur GPU: CUDA 12"}]

    fork, names = plant(tmp_path, change)
    assert audit_json(fork)["findings"] == []
    text = (fork / "patches" / names[P_LIBRARY]).read_bytes()
    assert b"X-Pq-Remove-When: =?utf-8?" in text  # RFC 2047, as mail headers want


def test_a_copied_upstream_line_counts_in_every_section_of_its_file(tmp_path: Path) -> None:
    """Upstream's own `except Exception:` copied into a fork file is not a workaround signal,
    in whichever of a patch's two sections of that file it is added."""
    write(tmp_path, "pkg/b.py", "try:\n    run()\nexcept Exception:\n    pass\n")
    git(tmp_path, "init", "-q")
    base = commit_all(tmp_path, "upstream")
    section = b"diff --git a/pkg/b.py b/pkg/b.py\n--- a/pkg/b.py\n+++ b/pkg/b.py\n"
    files = tuple(parse(section + b"@@ -1 +1 @@\n-try:\n+try:  # fork\n" + section
                        + b"@@ -3,2 +3,4 @@\n except Exception:\n     pass\n"
                          b"+except Exception:\n+    pass\n"))
    signalled = [(s.path, s.line) for f in files for s in broad_excepts(f)]
    assert signalled == [("pkg/b.py", 5)]
    copies = UpstreamCopies(Git.open(tmp_path), base)
    assert copies.is_copied(0, files, "pkg/b.py", 5)
    assert not copies.is_copied(0, files, "pkg/b.py", 1)  # the fork's own line


def test_a_copied_upstream_line_is_matched_byte_for_byte(tmp_path: Path) -> None:
    """An upstream file with CRLF endings, a form feed or U+2028 in a line: its lines copied
    as they are count as upstream's (a line ends at LF only, as in the diff)."""
    upstream = "# TODO upstream\r\nexcept Exception:\r\n# a\x0cb\n# c\u2028d\n"
    write(tmp_path, "tests/test_x.py", upstream.encode())
    git(tmp_path, "init", "-q")
    base = commit_all(tmp_path, "upstream")
    added = b"".join(b"+" + line + b"\n" for line in upstream.encode().split(b"\n")[:-1])
    files = tuple(parse(b"diff --git a/paddle_tests/test_x.py b/paddle_tests/test_x.py\n"
                        b"new file mode 100644\n--- /dev/null\n+++ b/paddle_tests/test_x.py\n"
                        b"@@ -0,0 +1,5 @@\n" + added + b"+# the fork's own\n"))
    copies = UpstreamCopies(Git.open(tmp_path), base)
    assert [copies.is_copied(0, files, "paddle_tests/test_x.py", n) for n in range(1, 6)] == [
        True, True, True, True, False]


def _signals_of(path: str, code: str, detector: Callable[..., list[object]]) -> int:
    from pq.model import diff as diffs

    lines = code.split("\n")
    body = "".join(f"+{x}\n" for x in lines)
    text = f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n" \
           f"@@ -0,0 +1,{len(lines)} @@\n{body}"
    return len(detector(diffs.parse(text.encode(), "p")[0]))


@pytest.mark.parametrize("path,code,found", [
    ("pkg/x.py", 'LABEL = "see issue #3 on the workaround board"', 0),  # `#` in a string
    ("csrc/x.cc", 'const char* url = "https://example.com/TODO/list";', 0),  # `//` in one
    ("csrc/x.cc", "char c = '/'; int y = 0;  // TODO(paddle): drop", 1),
    ("pkg/x.py", 's = "it\'s"  # TODO: drop with Paddle 3.4', 1),
    ("CMakeLists.txt", 'set(X "a#b")  # workaround for the compat build', 1),
    ("CMakeLists.txt", 'message("FIXME is not a comment here")', 0),
    ("pkg/x.py", "x = 1  # WORKAROUND: Paddle lacks torch.testing", 1),  # in capitals too
    ("csrc/x.cc", "int y = 0;  // WORK-AROUND for the compat layer", 1),
    # A docstring the hunk shows is a string: its `# TODO` line is text, no comment.
    ("pkg/x.py", 'def helper():\n    """Explain.\n\n    # TODO: docstring text\n    """\n'
                 '    return 1  # TODO: a real one', 1),
])
def test_wa014_a_todo_counts_in_a_comment_only(path: str, code: str, found: int) -> None:
    from pq.audit.signals import todo_comments

    assert _signals_of(path, code, todo_comments) == found


@pytest.mark.parametrize("code,found", [
    ("try: import triton\nexcept ImportError: triton = None", 1),  # one line
    ("try:\n    import cupy\nexcept ImportError:\n    cupy = None", 1),
    ("fn = getattr(torch.ops.tinyop, name)", 0),  # a lookup, no test: fails without it
    ("fn = getattr(torch.ops.tinyop, name, None)", 1),  # a default: a feature test
    ("ok = hasattr(torch, 'compile')", 1),
    ("fn = getattr(paddle,\n    'compat', None)", 1),  # its arguments over two lines
    ('def f():\n    """Use hasattr(torch, \'compile\') to test.\n    """\n    return 1', 0),
])
def test_wa014_guards(code: str, found: int) -> None:
    from pq.audit.signals import guards

    assert _signals_of("pkg/x.py", code, guards) == found


@pytest.mark.parametrize("code,found", [
    ("import torch as th\nth.Tensor.fancy = lambda self: self", 1),  # through an alias
    ("import paddle as pd\nsetattr(pd, 'x', 1)", 1),
    ("import torch\ntorch.Tensor.fancy = lambda self: self", 1),
    ("import numpy as np\nnp.x = 1", 0),
    ("th = object()\nth.x = 1", 0),  # not an alias of torch
])
def test_monkey_patches_through_an_alias(code: str, found: int) -> None:
    from pq.audit.signals import monkey_patches

    assert _signals_of("pkg/x.py", code, monkey_patches) == found
