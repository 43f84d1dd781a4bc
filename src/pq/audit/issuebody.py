"""The text of a Paddle issue for one compat gap, ready to paste.

Title, exact versions, the reproducer with its commands, expected vs actual behaviour,
the same code under PyTorch and the fork's workaround, from facts gathered by the caller.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pq.audit.mre import ENTRY, MreRun
from pq.audit.versions import Versions
from pq.model.metadata import Workaround

TITLE = "[Cross-Ecosystem Custom Op] {api} is missing or inconsistent in Paddle compat layer"
MAX_FILE_CHARS = 6000
MAX_DIFF_CHARS = 8000
BACKEND_VAR = "MRE_BACKEND"  # a reproducer that reads it can run the same code under torch
_LANG = {".py": "python", ".sh": "bash", ".cc": "cpp", ".cpp": "cpp", ".h": "cpp",
         ".cu": "cuda", ".cuh": "cuda", ".txt": "text", ".toml": "toml", ".cfg": "ini"}


@dataclass(frozen=True)
class IssueInput:
    workaround: Workaround
    summary: str
    layer: str
    diff: str
    mre_files: dict[str, bytes]  # relative path -> bytes; empty without a reproducer
    versions: Versions
    paddle_run: MreRun | None = None
    torch_run: MreRun | None = None


def api_name(wa: Workaround, summary: str) -> str:
    """The API or behaviour the gap is about: from the marker, the covered symbols, or the
    patch summary, in that order."""
    if wa.marker:
        m = re.search(r"\bsupports?\s+(.+)$", wa.marker)
        if m:
            return m.group(1).strip().rstrip("*/ .")
    symbols = [c.symbol for c in wa.covers or () if c.symbol]
    if symbols:
        return ", ".join(f"`{s}`" for s in symbols)
    return summary or wa.patch


def supports_torch_backend(files: dict[str, bytes]) -> bool:
    return any(BACKEND_VAR.encode() in data for data in files.values())


def _fence(text: str, lang: str = "") -> str:
    ticks = "```"
    while ticks in text:
        ticks += "`"
    return f"{ticks}{lang}\n{text.rstrip()}\n{ticks}"


def _lang(path: str) -> str:
    for suffix, lang in _LANG.items():
        if path.endswith(suffix):
            return lang
    return ""


def _header_comments(run_sh: str) -> tuple[str | None, str | None]:
    """The `# Exit 0: ...` and `# Non-zero: ...` lines reproducers start with."""
    ok = bad = None
    for line in run_sh.splitlines()[:15]:
        m = re.match(r"^#\s*Exit 0:\s*(.+)$", line)
        if m:
            ok = m.group(1).strip()
        m = re.match(r"^#\s*Non-zero:\s*(.+)$", line)
        if m:
            bad = m.group(1).strip()
    return ok, bad


def _run_block(run: MreRun) -> str:
    if run.error:
        return f"The reproducer could not run: {run.error}"
    status = "timed out" if run.timed_out else f"exit code {run.exit_code}"
    head = f"`{run.command}` ({status}, {run.seconds:.1f} s):\n\n"
    return head + _fence(run.output or "(no output)")


def render(inp: IssueInput) -> str:
    wa, v = inp.workaround, inp.versions
    api = api_name(wa, inp.summary)
    out = ["Title: " + TITLE.format(api=api), ""]
    out += ["### Summary", "", wa.reason or inp.summary, ""]
    env = [f"- Paddle: {v.paddle or 'not installed'}"
           + (f" ({v.paddle_dist}, commit {v.paddle_commit})" if v.paddle_commit else
              f" ({v.paddle_dist})" if v.paddle_dist else "")]
    env.append(f"- PyTorch (for comparison): {v.torch or 'not installed'}")
    env.append(f"- Python: {v.python or 'unknown'}")
    if v.cuda:
        env.append(f"- CUDA: {v.cuda}")
    if v.driver:
        env.append(f"- NVIDIA driver: {v.driver}")
    if v.platform:
        env.append(f"- OS: {v.platform}")
    out += ["### Environment", ""] + env + [""]

    files = inp.mre_files
    run_sh = files.get(ENTRY, b"").decode("utf-8", "replace")
    ok_text, bad_text = _header_comments(run_sh)
    out += ["### Reproducer", ""]
    if not files:
        out += ["(no reproducer is declared for this workaround)", ""]
    readme = files.get("README.md")
    if readme:
        out += [readme.decode("utf-8", "replace").strip(), ""]
    for path in sorted(files, key=lambda p: (p != ENTRY, p.count("/"), p)):
        if path == "README.md":
            continue
        text = files[path].decode("utf-8", "replace")
        if "\0" in text:
            continue
        if len(text) > MAX_FILE_CHARS:
            text = text[:MAX_FILE_CHARS] + "\n... (truncated)"
        out += [f"`{path}`:", "", _fence(text, _lang(path)), ""]
    if files:
        entry = ENTRY if ENTRY in files else next(iter(files))
        cmd = f"bash {entry}" if entry.endswith(".sh") else f"$PYTHON {entry}"
        lines = ["# in a fresh environment with the Paddle version above installed",
                 f"PYTHON=python {cmd}"]
        if supports_torch_backend(files):
            lines += ["# the same code under PyTorch", f"{BACKEND_VAR}=torch PYTHON=python {cmd}"]
        out += ["Commands:", "", _fence("\n".join(lines), "bash"), ""]

    out += ["### Expected behaviour", ""]
    out += [f"The same as under PyTorch: {ok_text or 'the reproducer exits 0.'}", ""]
    out += ["### Actual behaviour", ""]
    if inp.paddle_run is not None:
        out += [_run_block(inp.paddle_run), ""]
    else:
        out += [bad_text or "The reproducer exits non-zero.", ""]
    out += ["### The same code under PyTorch", ""]
    if inp.torch_run is not None:
        out += [_run_block(inp.torch_run), ""]
    elif supports_torch_backend(files):  # said only as run: no result claimed unrun
        torch = f" {v.torch}" if v.torch else ""
        out += [(f"`{BACKEND_VAR}=torch` runs the same code against PyTorch{torch} (the "
                 "commands above); it was not run for this report."), ""]
    else:
        out += [f"Not compared: the reproducer runs only under Paddle (it reads no "
                f"`{BACKEND_VAR}`).", ""]

    out += ["### Workaround in the port", ""]
    out.append(f"- Patch: `{wa.patch}` ({inp.layer}, {wa.kind or 'kind not set'})")
    if wa.covers:
        out.append("- Covers: " + ", ".join(f"`{c}`" for c in wa.covers))
    if wa.marker:
        out.append(f"- Marker in the code: `{wa.marker}`")
    if wa.remove_when:
        out.append("- Removed when: " + "; ".join(f"`{c.text}`" for c in wa.remove_when))
    out.append("")
    diff = inp.diff if len(inp.diff) <= MAX_DIFF_CHARS else (
        inp.diff[:MAX_DIFF_CHARS] + "\n... (truncated)")
    out += [_fence(diff, "diff"), ""]
    return "\n".join(out)
