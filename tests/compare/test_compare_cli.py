"""`pq compare` end to end with stand-in frameworks (fast): real child processes and traces,
the first divergence, its call site, exit codes and set-up errors with the side's traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from fixtures.compare.stubs import compare, frameworks, line_of, script
from gitrepo import write

SIDE = 'side = os.environ["PQ_COMPARE_SIDE"]\n'


@pytest.fixture
def fw(tmp_path: Path) -> Path:
    return frameworks(tmp_path / "fw")


def test_agreeing_traces_exit_0_and_count_the_observations(tmp_path: Path, fw: Path) -> None:
    path, lines = script(tmp_path, "run.py", """
        import pq
        for i in range(3):
            pq.observe(f"step{i}", [i, i * 0.5, "x"])
        pq.observe("done", {"ok": True})
    """)
    result = compare(tmp_path, str(path), both=fw)
    assert result.exit_code == 0, result.output
    assert result.output.strip() == "traces agree (4 observations)"
    data = json.loads(compare(tmp_path, "--json", str(path), both=fw).stdout)
    assert data["status"] == "agree" and data["divergence"] is None
    assert data["observations"] == {"torch": 4, "paddle": 4}
    assert data["frameworks"] == {"torch": "0-stand-in", "paddle": "0-stand-in"}


def test_first_value_divergence_names_the_line_and_errors(tmp_path: Path, fw: Path) -> None:
    path, lines = script(tmp_path, "run.py", """
        import os
        import pq
        side = os.environ["PQ_COMPARE_SIDE"]
        pq.observe("same", 1.0)
        pq.observe("drift", 2.0 if side == "torch" else 2.5)
        pq.observe("later", 3.0 if side == "torch" else 9.0)
    """)
    result = compare(tmp_path, str(path), both=fw)
    assert result.exit_code == 1, result.output
    planted = line_of(lines, '"drift"')
    assert f"call site:      run.py:{planted} (python-glue)" in result.output
    assert "first divergence at observation 2 of 3: observe drift" in result.output
    data = json.loads(compare(tmp_path, "--json", str(path), both=fw).stdout)
    d = data["divergence"]
    assert d["index"] == 1 and d["what"] == "values" and d["where"] == "result"
    assert d["site"]["file"] == "run.py" and d["site"]["line"] == planted
    assert d["max_abs_error"] == pytest.approx(0.5) and d["max_rel_error"] == pytest.approx(0.25)
    assert (d["torch"]["value"], d["paddle"]["value"]) == (2.0, 2.5)


def test_tolerance_option_and_bad_tolerance(tmp_path: Path, fw: Path) -> None:
    np = pytest.importorskip("numpy")
    assert np is not None
    path, _ = script(tmp_path, "run.py", """
        import os
        import numpy as np
        import pq
        side = os.environ["PQ_COMPARE_SIDE"]
        pq.observe("t", np.full(4, 1.0 if side == "torch" else 1.001, dtype=np.float32))
    """)
    assert compare(tmp_path, str(path), both=fw).exit_code == 1
    assert compare(tmp_path, "--tolerance", "float32=1e-2,0", str(path), both=fw).exit_code == 0
    bad = compare(tmp_path, "--tolerance", "float32=x", str(path), both=fw)
    assert bad.exit_code == 2 and "is not DTYPE=RTOL,ATOL" in bad.output
    assert "Traceback" not in bad.output


def test_shape_and_dtype_mismatch_are_divergences(tmp_path: Path, fw: Path) -> None:
    pytest.importorskip("numpy")
    path, lines = script(tmp_path, "run.py", """
        import os
        import numpy as np
        import pq
        side = os.environ["PQ_COMPARE_SIDE"]
        pq.observe("flat", np.zeros((2, 3) if side == "torch" else (6,), dtype=np.float32))
    """)
    data = json.loads(compare(tmp_path, "--json", str(path), both=fw).stdout)
    d = data["divergence"]
    assert d["what"] == "shape" and d["site"]["line"] == line_of(lines, '"flat"')
    assert (d["torch"]["shape"], d["paddle"]["shape"]) == ([2, 3], [6])
    write(tmp_path, "run.py", (tmp_path / "run.py").read_text().replace(
        '(2, 3) if side == "torch" else (6,), dtype=np.float32',
        '(2, 3), dtype=np.float32 if side == "torch" else np.float64'))
    text = compare(tmp_path, str(path), both=fw).output
    assert "(dtype)" in text and "dtype:  float32" in text and "float64" in text


def test_missing_and_extra_observations_are_call_sequence_divergences(
        tmp_path: Path, fw: Path) -> None:
    path, lines = script(tmp_path, "run.py", """
        import os
        import pq
        side = os.environ["PQ_COMPARE_SIDE"]
        pq.observe("a", 1)
        if side == "torch":
            pq.observe("only-torch", 2)
        pq.observe("b", 3)
    """)
    data = json.loads(compare(tmp_path, "--json", str(path), both=fw).stdout)
    d = data["divergence"]
    assert d["what"] == "call sequence" and d["index"] == 1
    assert d["message"].startswith("observe only-torch is missing on the paddle side")
    assert d["site"]["line"] == line_of(lines, '"only-torch"')
    write(tmp_path, "run.py", (tmp_path / "run.py").read_text().replace(
        'if side == "torch"', 'if side == "paddle"'))
    result = compare(tmp_path, str(path), both=fw)
    assert result.exit_code == 1
    assert "observe only-torch is an extra call on the paddle side" in result.output


def test_package_functions_are_recorded_and_the_changed_line_is_found(
        tmp_path: Path, fw: Path) -> None:
    body = 'def double(x):\n    """Twice x."""\n    y = x\n    return y + x\n'
    write(tmp_path, "torch-tree/mypkg/__init__.py", body)
    planted = body.replace("return y + x", "return y + x + 1")
    write(tmp_path, "paddle-tree/mypkg/__init__.py", planted)
    path, lines = script(tmp_path, "run.py", """
        import mypkg
        out = mypkg.double(2)
    """)
    result = compare(tmp_path, "--package", "mypkg", "--torch-path", str(fw),
                     "--torch-path", "torch-tree", "--paddle-path", str(fw),
                     "--paddle-path", "paddle-tree", "--json", str(path))
    assert result.exit_code == 1, result.output
    d = json.loads(result.stdout)["divergence"]
    assert d["observation"] == "call mypkg.double" and d["where"] == "result"
    assert d["site"]["line"] == line_of(lines, "mypkg.double(2)")
    changed = planted.splitlines().index("    return y + x + 1") + 1
    assert d["implementation"]["file"] == "mypkg/__init__.py"
    assert d["implementation"]["line"] == changed
    assert d["implementation"]["layer"] == "python-glue"


def test_a_call_raising_on_one_side_shows_what_the_other_returned(
        tmp_path: Path, fw: Path) -> None:
    """The fork's function raises where upstream's returns: the divergence showed the side
    that returned as `None` (`"torch": null` in --json), not its result."""
    write(tmp_path, "torch-tree/mypkg/__init__.py", "def f(x):\n    return [x, x]\n")
    write(tmp_path, "paddle-tree/mypkg/__init__.py",
          "def f(x):\n    raise RuntimeError('nope')\n")
    path, _ = script(tmp_path, "run.py", """
        import mypkg
        try:
            mypkg.f(2)
        except RuntimeError:
            pass
    """)
    args = ["--package", "mypkg", "--torch-path", str(fw), "--torch-path", "torch-tree",
            "--paddle-path", str(fw), "--paddle-path", "paddle-tree", str(path)]
    d = json.loads(compare(tmp_path, "--json", *args).stdout)["divergence"]
    assert d["what"] == "error" and d["paddle"] == "RuntimeError: nope", d
    assert d["torch"]["type"] == "list" and d["torch"]["length"] == 2, d
    text = compare(tmp_path, *args).output
    assert "None" not in text and "RuntimeError: nope" in text, text


def test_script_failing_on_one_side_is_a_setup_error_with_its_traceback(
        tmp_path: Path, fw: Path) -> None:
    path, lines = script(tmp_path, "run.py", """
        import os
        side = os.environ["PQ_COMPARE_SIDE"]
        if side == "paddle":
            raise ValueError("no such op on the paddle side")
    """)
    result = compare(tmp_path, str(path), both=fw)
    assert result.exit_code == 2
    assert "the script failed on the paddle side: ValueError: no such op" in result.output
    assert f'run.py", line {line_of(lines, "raise ValueError")}' in result.output
    data = json.loads(compare(tmp_path, "--json", str(path), both=fw).stdout)
    assert data["status"] == "error" and data["error"]["side"] == "paddle"
    assert data["error"]["stage"] == "script" and "Traceback" in data["error"]["traceback"]


def test_package_that_does_not_import_is_a_setup_error(tmp_path: Path, fw: Path) -> None:
    path, _ = script(tmp_path, "run.py", "x = 1\n")
    result = compare(tmp_path, "--package", "no_such_pkg_here", str(path), both=fw)
    assert result.exit_code == 2
    assert "setting up the side failed on the torch side" in result.output
    assert "No module named 'no_such_pkg_here'" in result.output


def test_missing_interpreter_and_script_are_one_line_errors(tmp_path: Path, fw: Path) -> None:
    path, _ = script(tmp_path, "run.py", "x = 1\n")
    from gitrepo import pq

    result = pq(tmp_path, "compare", "--paddle-python", str(tmp_path / "no-python"),
                str(path), ok=False)
    assert result.exit_code == 2
    assert f"paddle interpreter '{tmp_path / 'no-python'}' not found" in result.output
    assert "Traceback" not in result.output and len(result.output.strip().splitlines()) == 1
    result = compare(tmp_path, str(tmp_path / "missing.py"), both=fw)
    assert result.exit_code == 2 and "missing.py not found" in result.output


@pytest.mark.parametrize(("option", "value", "needle"), [
    ("--seed", "-1", "-1 is not in the range 0<=x<=4294967295"),
    ("--seed", str(2**32), "is not in the range 0<=x<=4294967295"),
    ("--timeout", "0", "0.0 is not in the range x>0"),
    ("--timeout", "-5", "-5.0 is not in the range x>0"),
    ("--timeout", "nan", "nan is not a number of seconds"),
])
def test_a_seed_or_timeout_out_of_range_is_a_usage_error(tmp_path: Path, fw: Path,
                                                        option: str, value: str,
                                                        needle: str) -> None:
    """numpy takes seeds 0..2**32-1 (a negative one was a set-up error with numpy's
    traceback); a timeout of 0 or less stopped both sides at once ('did not finish within
    -5 s'), and NaN meant no limit: each is refused before anything runs."""
    path, _ = script(tmp_path, "run.py", "import pq\npq.observe('x', 1)\n")
    result = compare(tmp_path, option, value, str(path), both=fw)
    assert result.exit_code == 2, result.output
    assert needle in result.output and "Traceback" not in result.output
