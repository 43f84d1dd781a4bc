"""The series model: `series.yaml`, strictly loaded and deterministically written.

A series is the upstream it applies to (ref and base commit) and the ordered list of
patch entries with their layer, summary and the blocks later features own (`workaround`,
`gate`). Fields pq does not know are kept on rewrite, and so are the file's comments
and layout (yamledit edits the loaded text). This module never runs git.
"""

from __future__ import annotations

import difflib
import json
import re
from collections.abc import Iterable
from dataclasses import dataclass, field, replace
from functools import cached_property, lru_cache
from pathlib import Path
from typing import Any

from pq.errors import ConfigError
from pq.git.objects import HEX_ID
from pq.model import yamlcache, yamldoc

SERIES_FILE = "series.yaml"
PATCHES_DIR = "patches"
DEFAULT_QUEUE_PATHS = (SERIES_FILE, PATCHES_DIR, "mre", ".pq")
FORMAT_VERSION = 1

LAYERS = ("kernel", "build", "cpp-compat", "python-glue")
# At most 200 characters: with pq's temporary name around it (`.NAME.xxxxxxxx.tmp`), a file
# name any file system takes (255 bytes).
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._+-]{0,193}\.patch\Z")

_ENTRY_KEYS = ("name", "layer", "summary", "workaround", "copies")
_TOP_KEYS = ("version", "upstream", "queue_paths", "patches", "gate")
ACK_KEY = "acknowledged"  # an entry's acknowledged audit findings (pq.model.metadata)
_READ_TOO: dict[tuple[str | int, ...], tuple[str, ...]] = {  # keys other modules read
    (): ("lint",), ("patches",): (ACK_KEY,)}


@dataclass(frozen=True)
class PatchEntry:
    name: str
    layer: str
    summary: str
    workaround: dict[str, Any] | None = None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    copies: dict[str, str] | None = None  # {file it adds: upstream's it copies} (pq drift)

    def to_data(self) -> dict[str, Any]:
        known: dict[str, Any] = {"name": self.name, "layer": self.layer, "summary": self.summary}
        if self.workaround is not None:
            known["workaround"] = self.workaround
        if self.copies is not None:
            known["copies"] = self.copies
        return yamldoc.merge_ordered(self.raw, known, _ENTRY_KEYS)

    @property
    def number(self) -> int | None:
        m = re.match(r"^([0-9]+)-", self.name)
        return int(m.group(1)) if m else None


@dataclass(frozen=True)
class Series:
    upstream_ref: str
    base: str
    patches: tuple[PatchEntry, ...] = ()
    gate: Any = None
    queue_extra: tuple[str, ...] = ()
    raw: dict[str, Any] = field(default_factory=dict, compare=False)
    upstream_raw: dict[str, Any] = field(default_factory=dict, compare=False)
    doc: yamldoc.Located | None = field(default=None, compare=False, repr=False)

    @property
    def queue_paths(self) -> tuple[str, ...]:
        return DEFAULT_QUEUE_PATHS + tuple(p for p in self.queue_extra
                                           if p not in DEFAULT_QUEUE_PATHS)

    @cached_property
    def _positions(self) -> dict[str, int]:
        """{name: index} (the first entry of a name), built once per series."""
        found: dict[str, int] = {}
        for i, e in enumerate(self.patches):
            found.setdefault(e.name, i)
        return found

    def entry(self, name: str) -> PatchEntry | None:
        i = self._positions.get(name)
        return None if i is None else self.patches[i]

    def index_of(self, name: str) -> int:
        return self._positions[name]

    def locate(self, path: yamldoc.Path) -> tuple[int | None, int | None]:
        return self.doc.where(path) if self.doc else (None, None)

    def error(self, path: yamldoc.Path, message: str, hint: str | None = None,
              key: bool = False) -> ConfigError:  # (`key`: at its key, not its value)
        line, col = self.doc.key_where(path) if key and self.doc else self.locate(path)
        return ConfigError(message, path=SERIES_FILE, line=line, column=col, hint=hint)

    def with_base(self, base: str) -> Series:
        return replace(self, base=base)

    def to_data(self) -> dict[str, Any]:
        upstream = yamldoc.merge_ordered(self.upstream_raw, {"ref": self.upstream_ref,
                                                      "base": self.base}, ("ref", "base"))
        known: dict[str, Any] = {"version": FORMAT_VERSION, "upstream": upstream}
        given = self.raw.get("queue_paths")  # as written: `notes/` stays, so does `[]`
        if isinstance(given, list) and [str(p).rstrip("/") for p in given] == list(
                self.queue_extra):
            known["queue_paths"] = list(given)
        elif self.queue_extra:
            known["queue_paths"] = list(self.queue_extra)
        known["patches"] = [e.to_data() for e in self.patches]
        if self.gate is not None:
            known["gate"] = self.gate
        return yamldoc.merge_ordered(self.raw, known, _TOP_KEYS)

    def dumps(self) -> bytes:
        """The file's bytes (`render`); ConfigError where pq could not read them back."""
        text = self.render()[0]
        if len(text) > yamldoc.MAX_BYTES:
            longest = max(self.patches, key=lambda e: len(e.summary), default=None)
            raise ConfigError(
                f"would be {len(text)} bytes, more than the {yamldoc.MAX_BYTES} pq reads; "
                "nothing was written", path=SERIES_FILE, hint="shorten the longest summaries"
                + (f" (patches/{longest.name}'s is {len(longest.summary)} characters: its "
                   "`summary:`, or the subject of its commit, which pq init and export take)"
                   if longest else ""))
        return text

    def keep(self, keep_in: Path) -> None:
        """Where this series' bytes (`dumps`) are the loaded file's with only the base
        swapped (a rebase's write), their parse is known without parsing (the loaded
        positions, this series' data): keep it in `keep_in` (the repository's .git/pq), so
        that the next command reads the new file without PyYAML (pq.model.yamlcache)."""
        data, swapped = self._written
        if swapped is not None and self.doc is not None:
            yamlcache.put(keep_in, swapped.encode("utf-8"), data, self.doc.marks)

    def render(self) -> tuple[bytes, bool]:
        """The file's bytes, and whether the loaded file's comments and layout were kept.

        A series loaded from a file is written by editing that file's text, so comments,
        quoting, flow lists and blank lines stay and only what changed is rewritten. Where
        that edit cannot be made exactly (the result would not load to this series), the
        plain dump is written instead: every value is kept, only comments and layout are
        lost (False)."""
        data, swapped = self._written
        if swapped is not None:
            return swapped.encode("utf-8"), True
        if self.doc is not None and self.doc.text:
            from pq.model import yamledit  # only a rewrite needs it

            edited = yamledit.rewrite(self.doc.text, self.doc.data, data)
            if edited is not None:
                return edited.encode("utf-8"), True
        header = "# pq series: the fork's migration edits, in order. See `pq --help`.\n"
        return (header + yamldoc.dump(data)).encode("utf-8"), self.doc is None

    @cached_property
    def _written(self) -> tuple[dict[str, Any], str | None]:
        """This series' data, and the loaded text with only `upstream.base` changed where
        that is all it changes (`_base_swapped`; else None): worked out once, for the write
        (`render`) and for the parse the landing keeps (`keep`)."""
        data = self.to_data()
        return data, self._base_swapped(data) if self.doc is not None and self.doc.text \
            else None

    def _base_swapped(self, data: dict[str, Any]) -> str | None:
        """The loaded file's text with only `upstream.base` changed, where `data` differs
        from what it loaded to in that value alone (a rebase's write) and the new id can
        take the old one's characters (`yamldoc.with_id`); else None."""
        assert self.doc is not None
        loaded, base = self.doc.data, data["upstream"]["base"]
        if not (isinstance(loaded, dict) and isinstance(loaded.get("upstream"), dict)):
            return None
        moved = {**loaded, "upstream": {**loaded["upstream"], "base": base}}
        if json.dumps(moved, default=repr) != json.dumps(data, default=repr):
            return None  # (strict: types and key order count, as yamledit compares)
        return yamldoc.with_id(self.doc, ("upstream", "base"), base)


def loads(text: bytes, filename: str = SERIES_FILE, keep_in: Path | None = None) -> Series:
    """Parse and validate a series file; every problem is a ConfigError at file:line:col.

    A Series is immutable: the same bytes read again (the working tree's, HEAD's, the last
    export's, under other file labels) are parsed once. `keep_in` (the repository's
    .git/pq): a parse kept there is read back instead of parsing, and a series that loads
    is kept there for the next command (pq.model.yamlcache); one refused is not."""
    try:
        series = _loads_cached(text, SERIES_FILE, keep_in)
    except ConfigError:  # again, to name `filename` in the error
        return _loads_cached.__wrapped__(text, filename, keep_in)
    if series.doc is not None and series.doc.filename != filename:
        series = replace(series, doc=replace(series.doc, filename=filename))
    return series


@lru_cache(maxsize=8)
def _loads_cached(text: bytes, filename: str = SERIES_FILE, keep_in: Path | None = None
                  ) -> Series:
    doc = yamldoc.load(text, filename, keep_in)
    data = doc.data
    if not isinstance(data, dict):
        raise doc.error((), "a series file must be a mapping with `version`, `upstream` and "
                        "`patches`", hint="see the series format in pq's README")
    _require_known(doc, (), data, _TOP_KEYS)
    version = data.get("version")
    if version is None:
        raise doc.error((), "missing `version`", hint=f"add `version: {FORMAT_VERSION}`")
    if not isinstance(version, int) or isinstance(version, bool):
        raise doc.error(("version",), f"`version` must be an integer, not {version!r}",
                        hint=f"write `version: {FORMAT_VERSION}` (no quotes)")
    if version != FORMAT_VERSION:
        raise doc.error(("version",), f"unsupported series version {version}",
                        hint=f"this pq reads version {FORMAT_VERSION}; upgrade pq")

    upstream = data.get("upstream")
    if not isinstance(upstream, dict):
        raise doc.error(("upstream",) if "upstream" in data else (),
                        "`upstream` must be a mapping with `ref` and `base`",
                        hint="run `pq init --upstream <ref>`")
    ref = upstream.get("ref")
    if not isinstance(ref, str) or not ref.strip():
        raise doc.error(("upstream", "ref"), "`upstream.ref` must be a non-empty string",
                        hint="name the upstream branch, e.g. `ref: upstream/main`")
    base = upstream.get("base")
    if not isinstance(base, str) or not HEX_ID.fullmatch(base):
        quote = isinstance(base, (int, float)) and not isinstance(base, bool)
        raise doc.error(("upstream", "base"), "`upstream.base` must be a full commit id"
                        + (", written as a string" if quote else ""),
                        hint="put it in quotes (`base: '0123...'`): YAML reads it as a number"
                        if quote else "40 (or 64) lower-case hex digits; `pq init` writes it")

    queue_extra: list[str] = []
    if "queue_paths" in data:
        qp = data["queue_paths"]
        if not isinstance(qp, list) or not all(isinstance(p, str) and p for p in qp):
            raise doc.error(("queue_paths",), "`queue_paths` must be a list of paths",
                            hint="folders of the fork's own, relative to the top: "
                                 "`queue_paths: [notes/]`")
        for i, p in enumerate(qp):
            if p.startswith("/") or ".." in p.split("/") or p.split("/")[0] == ".git":
                raise doc.error(("queue_paths", i), f"queue path {p!r} is not a folder of the "
                                "working tree", hint="a path relative to the top, not in .git")
        queue_extra = [p.rstrip("/") for p in qp]

    patches_data = data.get("patches")
    if patches_data is None:
        patches_data = []
    if not isinstance(patches_data, list):
        raise doc.error(("patches",), "`patches` must be a list",
                        hint="one `- name: ...` entry per patch (`patches: []` for none)")
    entries = []
    seen: dict[str, int] = {}
    for i, item in enumerate(patches_data):
        entry = _entry(doc, i, item)
        if entry.name in seen:
            raise doc.error(("patches", i, "name"),
                            f"duplicate patch name {entry.name!r} "
                            f"(also entry {seen[entry.name] + 1})",
                            hint="each patch file appears once")
        seen[entry.name] = i
        entries.append(entry)
    series = Series(
        upstream_ref=ref,
        base=base,
        patches=tuple(entries),
        gate=data.get("gate"),
        queue_extra=tuple(queue_extra),
        raw=data,
        upstream_raw=upstream,
        doc=doc,
    )
    if any(e.workaround is not None for e in entries):
        # A malformed workaround block is refused by every command, not only the audit:
        # export would write its values into DEP-3 headers, report into the description.
        from pq.model import metadata  # it reads a Series: imported where one exists
        metadata.read_all(series)
    if keep_in is not None and not doc.kept:  # a series that loads: kept for the next read
        yamlcache.put(keep_in, text, doc.data, doc.marks)
    return series


def _entry(doc: yamldoc.Located, i: int, item: Any) -> PatchEntry:
    path: yamldoc.Path = ("patches", i)
    if not isinstance(item, dict):
        raise doc.error(path, f"patch entry {i + 1} must be a mapping with `name`, `layer`, "
                        "`summary`")
    _require_known(doc, path, item, _ENTRY_KEYS)
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise doc.error(path + ("name",) if "name" in item else path,
                        f"patch entry {i + 1} needs a `name` (a file in patches/)" if
                        name in (None, "") else f"patch entry {i + 1}: `name` must be the "
                        "name of its file in patches/, which ends in .patch",
                        hint="write the file's whole name (`0001-x.patch`)")
    if not NAME_RE.match(name):
        raise doc.error(path + ("name",), f"bad patch name {name!r}",
                        hint="a plain file name in patches/ ending in .patch: ASCII letters, "
                             "digits and . _ + - (a letter or digit first), no folders, at "
                             "most 200 characters")
    layer = item.get("layer")
    if layer is None:
        raise doc.error(path, f"patch {name}: missing `layer`",
                        hint="one of: " + ", ".join(LAYERS))
    if layer not in LAYERS:
        raise doc.error(path + ("layer",), f"patch {name}: unknown layer {layer!r}",
                        hint="one of: " + ", ".join(LAYERS))
    summary = item.get("summary", "")
    if summary is None:
        summary = ""
    if not isinstance(summary, str):
        raise doc.error(path + ("summary",), f"patch {name}: `summary` must be a string",
                        hint="quote it: YAML reads yes, no, on, off and numbers as other values")
    workaround = item.get("workaround")
    if workaround is not None and not isinstance(workaround, dict):
        raise doc.error(path + ("workaround",), f"patch {name}: `workaround` must be a mapping",
                        hint="its fields indented under it (`kind: ...`), as docs/audit.md shows")
    return PatchEntry(name=name, layer=layer, summary=summary, workaround=workaround, raw=item,
                      copies=_copies(doc, path, name, item))


def _require_known(doc: yamldoc.Located, path: yamldoc.Path, block: dict[Any, Any],
                   known: tuple[str, ...]) -> None:
    """Refuse a key that reads as a misspelling of one pq reads (`sumary`), or workaround
    fields written beside an empty `workaround:` (or two of them without one): pq would go
    on without them, unsaid. Any other key is the user's own and kept as written (`issue`
    alone, `summary_de`: a name of pq's own with something added is no misspelling)."""
    known = known + _READ_TOO.get(path[:1], ())
    where = f"patch entry {int(path[-1]) + 1}: " if path else ""
    if path:
        from pq.model.metadata import KEYS  # it reads a Series: imported where needed

        outside = [k for k in block if k in KEYS]
        if outside and (("workaround" in block and not block["workaround"])
                        or len(outside) > 1):
            raise doc.error(path + (outside[0],), f"{where}`{outside[0]}` is a workaround "
                            "field, outside the entry's `workaround:` block",
                            hint="indent the workaround's fields under `workaround:`", key=True)
    for key in block:
        if not isinstance(key, str) or key in known or key.startswith(("x-", *(
                f"{k}{sep}" for k in known for sep in "_-"))):
            continue
        close = difflib.get_close_matches(key, known, n=1, cutoff=0.85)
        if close:
            raise doc.error(path + (key,), f"{where}unknown key `{key}` (did you mean "
                            f"`{close[0]}`?)", hint="fix its spelling; a key of your own "
                            "is kept as written, and one starting with `x-` is never taken "
                            "for pq's", key=True)


def _copies(doc: yamldoc.Located, path: yamldoc.Path, name: str, item: dict[str, Any]
            ) -> dict[str, str] | None:
    """An entry's `copies:` block: {copy: origin}, both paths inside the repository."""
    if "copies" not in item:
        return None
    copies = item["copies"]
    hint = "write `copies: {paddle_tests/lib.py: tests/lib.py}` (the patch's file: upstream's)"
    if not isinstance(copies, dict):
        raise doc.error(path + ("copies",), f"patch {name}: `copies` must be a mapping of "
                        "the file the patch adds to the upstream file it copies", hint=hint)
    for copy, origin in copies.items():
        for p in (copy, origin):
            if not isinstance(p, str) or not p or p.startswith("/") or ".." in p.split("/"):
                raise doc.error(path + ("copies", copy) if isinstance(copy, str) else
                                path + ("copies",),
                                f"patch {name}: `copies` entry {copy!r}: {origin!r} must name "
                                "two files inside the repository", hint=hint)
    return dict(copies)


def check_files(series: Series, files: Iterable[str]) -> None:
    """Every listed patch has a file in patches/, and every file there is listed."""
    present = set(files)
    for i, entry in enumerate(series.patches):
        if entry.name not in present:
            raise series.error(("patches", i, "name"),
                               f"patch {entry.name} is listed but {PATCHES_DIR}/{entry.name} "
                               "does not exist",
                               hint="`pq export` writes it again from its commit (or "
                                    f"`git checkout -- {PATCHES_DIR}/{entry.name}` restores "
                                    "it where git tracks it); to drop the patch, drop its "
                                    "commit (`git rebase -i`), then `pq export`")
    listed = {e.name for e in series.patches}
    for name in sorted(present - listed):
        if name.endswith(".patch"):
            raise series.error(
                ("patches",), f"{PATCHES_DIR}/{name} is not listed in {SERIES_FILE} "
                "(under `patches:`)",
                hint=f"add `- name: {name}` (with its `layer` and `summary`) under "
                     f"`patches:` in the order it applies, or remove the file "
                     f"(`git rm -f {PATCHES_DIR}/{name}` if git tracks it, else `rm`)")


def new_series(upstream_ref: str, base: str) -> Series:
    return Series(upstream_ref=upstream_ref, base=base)
