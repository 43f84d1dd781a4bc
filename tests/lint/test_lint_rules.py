"""One test per lint rule: plant exactly that violation as the last patch of a clean series
(a real fork, `pq init`, `pq export`), run `pq lint --json`, see exactly that finding."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from fixtures.audit.auditfork import INIT, KERNEL, OPS, Spec, build_fork, clean_specs, patch_names
from gitrepo import commit_all, git, pq, write

from pq.audit import rules
from pq.demo.build import UPSTREAM_TREE, series_source

AFTER_INIT = 'import paddle\n\npaddle.enable_compat(scope={"tinyop"})\n\n' + INIT
AFTER_OPS = OPS.replace("#include <torch/extension.h>\n", "#include <torch/extension.h>\n"
                        "// TODO(paddle#77012): remove after Paddle compat supports "
                        "TORCH_LIBRARY in <torch/extension.h>\n#include <torch/library.h>\n")


def lint_json(fork: Path, *args: str) -> dict[str, Any]:
    result = pq(fork, "lint", "--json", *args, ok=False)
    data: dict[str, Any] = json.loads(result.output)
    assert data["exit_code"] == result.exit_code
    return data


def plant(tmp_path: Path, files: dict[str, str | None]) -> tuple[Path, str]:
    fork = build_fork(tmp_path, [*clean_specs(), Spec("planted", files)])
    return fork, patch_names(fork)[-1]


def only(fork: Path, patch: str, rule_id: str, location: str) -> dict[str, Any]:
    data = lint_json(fork)
    assert [(f["rule_id"], f["patch"], f["location"]) for f in data["findings"]] == \
        [(rule_id, patch, location)], data["findings"]
    assert data["exit_code"] == 1
    f: dict[str, Any] = data["findings"][0]
    rule = rules.BY_ID[rule_id]
    assert (f["rule"], f["severity"]) == (rule.name, rule.severity) and f["fix"]
    return f


def test_clean_series_lints_clean(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    data = lint_json(fork)
    assert (data["findings"], data["exit_code"]) == ([], 0)
    assert data["settings"] == {"max_patch_lines": 300}


def test_shipped_example_series_lints_clean(tmp_path: Path) -> None:
    up, fork = tmp_path / "upstream", tmp_path / "fork"
    shutil.copytree(UPSTREAM_TREE, up, ignore=shutil.ignore_patterns(
        "__pycache__", "*.so", "build", "*.egg-info"))
    git(up, "init", "-q", "-b", "main")
    v1 = commit_all(up, "tinyop v1")
    git(tmp_path, "clone", "-q", "-o", "upstream", str(up), str(fork))
    source = series_source()
    for folder in ("patches", "mre"):
        shutil.copytree(source / folder, fork / folder)
    write(fork, "series.yaml", re.sub(r"(?m)^(  base: )[0-9a-f]{40}$", rf"\g<1>{v1}",
                                      (source / "series.yaml").read_text()))
    data = lint_json(fork)
    assert (data["findings"], data["exit_code"], len(data["patches"])) == ([], 0, 5)


def test_lint_ids_are_unique_and_in_the_one_registry() -> None:
    ids = [r.id for r in rules.LINT_RULES]
    assert ids == [f"LN{i:03d}" for i in range(1, len(ids) + 1)]
    assert len({r.name for r in rules.REGISTRY}) == len(rules.REGISTRY) == len(rules.BY_ID)
    assert set(ids) | {"WA010"} == rules.LINT_IDS


def _set_layer(fork: Path, patch: str, layer: str) -> None:
    data = yaml.safe_load((fork / "series.yaml").read_text())
    for entry in data["patches"]:
        if entry["name"] == patch:
            entry["layer"] = layer
    (fork / "series.yaml").write_text(yaml.safe_dump(data, sort_keys=False, width=1000))
    pq(fork, "export")


def test_ln001_layer_mismatch(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {"tinyop/extra.py": "def helper(x):\n    return x\n"})
    _set_layer(fork, name, "build")
    line = next(i for i, t in enumerate((fork / "series.yaml").read_text().splitlines(), 1)
                if t.strip() == "layer: build" and name in (fork / "series.yaml").read_text()
                .splitlines()[i - 2])
    f = only(fork, name, "LN001", f"series.yaml:{line}:10")
    assert "`python-glue`" in f["message"]


def test_ln002_mixed_layers(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {
        "csrc/ops.cc": AFTER_OPS.replace("TORCH_LIBRARY(", "// Registered for both.\n"
                                         "TORCH_LIBRARY("),
        "tinyop/extra.py": "def helper(x):\n    return x\n"})
    f = only(fork, name, "LN002", f"patches/{name}")
    assert f["fix"] == f"split it: `pq split {name} --by-layer`"


def test_ln003_formatting_only(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {"tinyop/__init__.py": AFTER_INIT.replace(
        "return torch.ops.tinyop.scale_add(x, y, alpha)",
        "return torch.ops.tinyop.scale_add( x, y,  alpha )")})
    only(fork, name, "LN003", "tinyop/__init__.py:11")


def test_ln003_a_python_reindent_that_moves_a_statement_is_no_layout_change() -> None:
    """Indentation is Python's syntax: dedenting a statement out of a block changes what
    runs; the same nesting written with tabs instead of spaces does not."""
    from pq.lint.shape import _formatting_only
    from pq.model import diff as diffs

    def hunk(old: str, new: str) -> diffs.Hunk:
        body = "".join(f"-{x}\n" for x in old.split("\n")) + "".join(
            f"+{x}\n" for x in new.split("\n"))
        n = old.count("\n") + 1
        text = f"diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,{n} +1,{n} @@\n{body}"
        return diffs.parse(text.encode(), "p")[0].hunks[0]

    moved = hunk("if x:\n    a()\n    b()", "if x:\n    a()\nb()")
    assert not _formatting_only(moved, indented=True)
    assert _formatting_only(moved, indented=False)  # in C, say, it would be layout
    tabs = hunk("if x:\n    a()", "if x:\n\ta()")
    assert _formatting_only(tabs, indented=True)
    # as git writes it: one line moved, the block's other lines as context
    text = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,3 +1,3 @@\n"
            " if x:\n     a = 1\n-    b = 2\n+b = 2\n")
    assert not _formatting_only(diffs.parse(text.encode(), "p")[0].hunks[0], indented=True)
    # A call's arguments broken over two lines: no statement moved, only the layout.
    text = ("diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n@@ -1,2 +1,3 @@\n"
            " def f(x, a):\n-    y = torch.mul(x, a)\n+    y = torch.mul(\n+        x, a)\n")
    assert _formatting_only(diffs.parse(text.encode(), "p")[0].hunks[0], indented=True)


@pytest.mark.parametrize("how", ["delete", "rename"])
def test_ln004_upstream_file_moved(tmp_path: Path, how: str) -> None:
    files: dict[str, str | None] = {"README.md": None}
    if how == "rename":
        files["docs/README.md"] = "tinyop\n"
    fork, name = plant(tmp_path, files)
    f = only(fork, name, "LN004", "README.md")
    assert ("moves" if how == "rename" else "deletes") in f["message"]


@pytest.mark.parametrize("how", ["python", "schema"])
def test_ln005_public_api_change(tmp_path: Path, how: str) -> None:
    if how == "python":
        files = {"tinyop/__init__.py": AFTER_INIT.replace("def scale_add(", "def scale_add2(")}
        where = "tinyop/__init__.py:10"
    else:
        files = {"csrc/ops.cc": AFTER_OPS.replace("float alpha=1.0", "float alpha")}
        where = "csrc/ops.cc:15"
    fork, name = plant(tmp_path, files)  # type: ignore[arg-type]
    only(fork, name, "LN005", where)


def test_ln006_kernel_layer_edit(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {"csrc/kernel/scale_add.cc": KERNEL.replace(
        "x[i] + alpha * y[i]", "alpha * y[i] + x[i]")})
    only(fork, name, "LN006", "csrc/kernel/scale_add.cc")


def test_wa010_global_compat_through_the_shared_registry(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {"tinyop/extra.py": "import paddle\n\npaddle.enable_compat()\n"})
    only(fork, name, "WA010", "tinyop/extra.py:3")


def test_ln007_mass_translation(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {"tinyop/__init__.py": AFTER_INIT.replace(
        "return torch.ops", "return paddle.ops")})
    only(fork, name, "LN007", "tinyop/__init__.py:11")


def test_ln008_patch_too_large(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {"tinyop/table.py": "".join(f"X{i} = {i}\n"
                                                             for i in range(301))})
    f = only(fork, name, "LN008", f"patches/{name}")
    assert "301 lines" in f["message"] and "(300)" in f["message"]


@pytest.mark.parametrize("where,files", [
    ("csrc/ops.cc:4", {"csrc/ops.cc": AFTER_OPS.replace(
        "#include <torch/library.h>\n", "#include <torch/library.h>\n"
        "// #include <ATen/Parallel.h>\n")}),
    ("tinyop/__init__.py:11", {"tinyop/__init__.py": AFTER_INIT.replace(
        "    return torch.ops", "    # x = x.contiguous()\n    return torch.ops")}),
])
def test_ln009_commented_out_code(tmp_path: Path, where: str, files: dict[str, str]) -> None:
    fork, name = plant(tmp_path, dict(files))
    only(fork, name, "LN009", where)


def test_ln010_debug_print(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {"tinyop/__init__.py": AFTER_INIT.replace(
        "    return torch.ops", "    print(\"scale_add\", x)\n    return torch.ops")})
    only(fork, name, "LN010", "tinyop/__init__.py:11")


@pytest.mark.parametrize("path,line,found", [
    ("tinyop/extra.py", "if True: print('debug', x)", True),  # not first on its line
    ("tinyop/extra.py", "MSG = 'pipe the result to print(x)'", False),  # in a string
    ("tinyop/extra.py", "x = 1  # print(x) to see it", False),
    ("csrc/extra.cc", 'const char* kHelp = "pipe the result to std::cout";', False),
    ("csrc/extra.cc", "void f(int x) { std::cout << x; }", True),
])
def test_ln010_reads_code_not_strings(tmp_path: Path, path: str, line: str,
                                      found: bool) -> None:
    fork, name = plant(tmp_path, {path: line + "\n"})
    ln010 = [f["location"] for f in lint_json(fork)["findings"] if f["rule_id"] == "LN010"]
    assert ln010 == ([f"{path}:1"] if found else []), ln010


@pytest.mark.parametrize("path", ["tinyop/scale_add_test.py", "tinyop/test/helpers.py",
                                  "tinyop/tests/helpers.py"])
def test_ln010_leaves_test_modules_alone(path: str) -> None:
    from pq.lint.code import is_package_module

    assert not is_package_module(path)
    assert is_package_module("tinyop/contest.py") and is_package_module("tinyop/testing.py")


@pytest.mark.parametrize("path", ["tinyop.egg-info/PKG-INFO", "tinyop/__pycache__/x.txt",
                                  "tinyop/_C.so", "build/lib/tinyop/ops.py"])
def test_ln011_build_product(tmp_path: Path, path: str) -> None:
    fork, name = plant(tmp_path, {path: "Name: tinyop\n"})
    only(fork, name, "LN011", path)


def test_ln012_deprecated_compat_spelling(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {"tinyop/extra.py": "import paddle\n\n"
                                  "paddle.compat.enable_torch_proxy(scope={\"tinyop\"})\n"})
    f = only(fork, name, "LN012", "tinyop/extra.py:3")
    assert "paddle.enable_compat" in f["message"]


def test_ln013_lazy_torch_import(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {"tinyop/extra.py": "def relu(x):\n    import torch\n\n"
                                  "    return torch.relu(x)\n"})
    only(fork, name, "LN013", "tinyop/extra.py:2")


def test_acknowledged_lint_finding_and_patch_option(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {"csrc/kernel/scale_add.cc": KERNEL.replace(
        "x[i] + alpha * y[i]", "alpha * y[i] + x[i]")})
    first = patch_names(fork)[0]
    assert lint_json(fork, "--patch", first)["findings"] == []
    assert lint_json(fork, "--patch", name)["patches"] == [name]
    data = yaml.safe_load((fork / "series.yaml").read_text())
    data["patches"][-1]["acknowledged"] = [{"rule": "LN006", "reason": "reviewed"}]
    (fork / "series.yaml").write_text(yaml.safe_dump(data, sort_keys=False, width=1000))
    data = lint_json(fork)
    assert (data["findings"], data["exit_code"]) == ([], 0)
    assert [(a["rule_id"], a["reason"]) for a in data["acknowledged"]] == [("LN006", "reviewed")]
    audit = json.loads(pq(fork, "audit", "workarounds", "--json", ok=False).output)
    assert audit["unused_acknowledgements"] == []  # a lint rule is not the audit's to judge


@pytest.mark.parametrize("config", [{"max_lines": 3}, {"max_patch_lines": 0}, "big"])
def test_bad_configuration_exits_2(tmp_path: Path, config: object) -> None:
    fork = build_fork(tmp_path, clean_specs())
    data = yaml.safe_load((fork / "series.yaml").read_text())
    data["lint"] = config
    (fork / "series.yaml").write_text(yaml.safe_dump(data, sort_keys=False, width=1000))
    result = pq(fork, "lint", ok=False)
    assert result.exit_code == 2 and "series.yaml:" in result.output


def test_unknown_patch_exits_2(tmp_path: Path) -> None:
    fork = build_fork(tmp_path, clean_specs())
    assert pq(fork, "lint", "--patch", "nope.patch", ok=False).exit_code == 2


def test_max_patch_lines_is_configurable(tmp_path: Path) -> None:
    fork, name = plant(tmp_path, {"tinyop/table.py": "".join(f"X{i} = {i}\n"
                                                             for i in range(301))})
    data = yaml.safe_load((fork / "series.yaml").read_text())
    data["lint"] = {"max_patch_lines": 400}
    (fork / "series.yaml").write_text(yaml.safe_dump(data, sort_keys=False, width=1000))
    assert lint_json(fork)["exit_code"] == 0
