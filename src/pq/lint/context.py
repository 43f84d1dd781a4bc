"""What lint's rules read of one patch: its parsed diff (pq.model.diff, parsed once), the
layer of each file, the upstream base tree's file list, and the series-wide settings."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

from pq.audit.rules import PatchInput
from pq.model import layers
from pq.model.diff import FileDiff

DEFAULT_MAX_PATCH_LINES = 300
_SCOPE = re.compile(r"enable_compat\(\s*scope\s*=\s*[\{\[\(]([^}\])]*)")
_NAME = re.compile(r"""["']([\w.]+)["']""")


@dataclass(frozen=True)
class Settings:
    max_patch_lines: int = DEFAULT_MAX_PATCH_LINES
    # the packages (and test modules) some patch runs under `enable_compat(scope={...})`
    scoped: frozenset[str] = frozenset()


@dataclass(frozen=True)
class LintPatch:
    p: PatchInput
    upstream: frozenset[str]  # the files of the upstream base tree
    layer_of: dict[str, str] = field(default_factory=dict)  # path -> layer (or layers.DOCS)
    inferred: tuple[str, str] = ("python-glue", "default")  # (layer, rule): layers.explain
    settings: Settings = Settings()

    @property
    def name(self) -> str:
        return self.p.entry.name

    @property
    def files(self) -> tuple[FileDiff, ...]:
        return self.p.files


def build(p: PatchInput, upstream: frozenset[str], base_text: dict[str, str],
          settings: Settings) -> LintPatch:
    """`base_text`: upstream's content of the files the patch changes (C++ API use is read
    from the whole file, not only the hunks)."""
    decisions: list[layers.HunkDecision] = []
    layer_of = {}
    for f in p.files:
        post = [ln.text for h in f.hunks for ln in h.post()]
        content = "\n".join([base_text.get(f.old or f.path, ""), *post]).encode(
            "utf-8", "replace")
        # Hunk by hunk, as `pq classify` and the layer `pq export` writes decide.
        mine = layers.classify_file(f, content)
        decisions += mine
        layer_of[f.path] = layers.file_layer(mine)
    inferred = layers.patch_layer(decisions)
    return LintPatch(p=p, upstream=upstream, layer_of=layer_of,
                     inferred=(inferred.layer, inferred.rule), settings=settings)


def scoped_packages(patches: Sequence[PatchInput]) -> frozenset[str]:
    """Every name in a `scope=` of an `enable_compat` call that the series adds."""
    names: set[str] = set()
    for p in patches:
        for f in p.files:
            for ln in f.added():
                m = _SCOPE.search(ln.text)
                if m:
                    names.update(_NAME.findall(m.group(1)))
    return frozenset(names)
