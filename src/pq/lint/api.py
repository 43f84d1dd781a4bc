"""`run_lint`: one call that lints a queue's patches against the minimal-modification rules.

Each patch file is parsed once (pq.audit.api.patch_input); the upstream base tree is listed
once and the upstream files the series changes are read in one batch. Findings that
series.yaml acknowledges are split off as the audit does (pq.audit.api.acknowledge).
"""

from __future__ import annotations

from dataclasses import dataclass

from pq.audit import rules
from pq.audit.api import Acknowledged, UpstreamCopies, acknowledge, patch_input, read_files
from pq.audit.rules import Finding, PatchInput
from pq.errors import EXIT_FINDINGS, EXIT_OK, ConfigError
from pq.git.repo import Git
from pq.lint import code, context, shape
from pq.lint.context import Settings
from pq.model import metadata
from pq.model.series import SERIES_FILE, Series
from pq.queue.files import Queue

CONFIG_KEY = "lint"
CONFIG_KEYS = ("max_patch_lines",)


@dataclass(frozen=True)
class LintReport:
    base: str
    patches: tuple[str, ...]  # the patches linted, in series order
    settings: Settings
    findings: tuple[Finding, ...]
    acknowledged: tuple[Acknowledged, ...] = ()
    unused_acknowledgements: tuple[metadata.Acknowledgement, ...] = ()
    base_present: bool = True  # False: no upstream context (a shallow clone, say)

    @property
    def exit_code(self) -> int:
        return EXIT_FINDINGS if self.findings else EXIT_OK


def settings(series: Series) -> Settings:
    """The `lint:` mapping of series.yaml (ConfigError at its line when malformed)."""
    value = series.raw.get(CONFIG_KEY)
    if value is None:
        return Settings()
    if not isinstance(value, dict):
        raise series.error((CONFIG_KEY,), f"`{CONFIG_KEY}` in {SERIES_FILE} must be a mapping",
                           hint="write `lint: {max_patch_lines: 300}`")
    for key in value:
        if key not in CONFIG_KEYS:
            raise series.error((CONFIG_KEY, key), f"`{CONFIG_KEY}` has an unknown key `{key}`",
                               hint=f"it takes {', '.join(CONFIG_KEYS)}")
    limit = value.get("max_patch_lines", context.DEFAULT_MAX_PATCH_LINES)
    if not isinstance(limit, int) or isinstance(limit, bool) or limit < 1:
        raise series.error((CONFIG_KEY, "max_patch_lines"),
                           "`lint.max_patch_lines` must be a positive whole number",
                           hint=f"the default is {context.DEFAULT_MAX_PATCH_LINES}")
    return Settings(max_patch_lines=limit)


def run_lint(git: Git, queue: Queue, *, patch: str | None = None) -> LintReport:
    """Lint `queue` (only `patch` when given). Raises ConfigError (exit 2) on a malformed
    `lint:` section or acknowledgement, or an unknown patch name."""
    series = queue.series
    config = settings(series)
    if patch is not None and series.entry(patch) is None:
        names = ", ".join(e.name for e in series.patches) or "none: the series is empty"
        raise ConfigError(f"no patch named {patch!r} in {SERIES_FILE}",
                          hint=f"its patches: {names}")
    acks = metadata.read_acknowledgements(series, rules.BY_ID)
    inputs = [patch_input(series, i, queue) for i in range(len(series.patches))]
    copies = UpstreamCopies(git, series.base)
    inputs = copies.attach(inputs)
    config = Settings(max_patch_lines=config.max_patch_lines,
                      scoped=context.scoped_packages(inputs))
    upstream, base_text = (_upstream(git, series.base, inputs) if copies.base_present
                           else (frozenset(), {}))
    chosen = [p for p in inputs if patch is None or p.entry.name == patch]
    found: list[Finding] = []
    for p in chosen:
        lp = context.build(p, upstream, base_text, config)
        found += sorted(shape.check(lp) + code.check(lp) + rules.global_compat(p),
                        key=lambda f: f.rule_id)
    linted = {p.entry.name for p in chosen}
    kept, acked, unused = acknowledge(found, [a for a in acks if a.patch in linted],
                                      rules.LINT_IDS)
    return LintReport(base=series.base, patches=tuple(p.entry.name for p in chosen),
                      settings=config, findings=tuple(kept), acknowledged=tuple(acked),
                      unused_acknowledgements=tuple(unused),
                      base_present=copies.base_present)


def _upstream(git: Git, base: str, inputs: list[PatchInput]
              ) -> tuple[frozenset[str], dict[str, str]]:
    """The base tree's files, and the text of those the series changes (one `ls-tree`, one
    batched `cat-file`)."""
    upstream = frozenset(path for _m, kind, _o, path in git.ls_tree(base) if kind == "blob")
    wanted = sorted({f.old or f.path for p in inputs for f in p.files} & upstream)
    blobs = read_files(git, base, wanted) if wanted else {}
    return upstream, {path: data.decode("utf-8", "replace")
                      for path, data in blobs.items() if data is not None}
