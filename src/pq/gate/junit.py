"""A gate run as a JUnit XML report, for CI systems that display test results.

One `<testcase>` per stage: a failure or timeout carries the log's tail, a GPU stage on a
machine without a GPU (and a stage that did not run) is `<skipped>`, never a pass.
"""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from typing import Any

from pq.gate import result as R
from pq.quoting import LONE_SURROGATE

_INVALID_XML = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\ufffe\uffff]")


def _clean(text: str) -> str:
    return LONE_SURROGATE.sub("\ufffd", _INVALID_XML.sub("?", text))


def render(stages: list[R.StageResult], *, tip: str, tree: str, status: str, time: str,
           fingerprint: dict[str, Any], cached: bool) -> bytes:
    failures = sum(1 for s in stages if s.failed)
    skipped = sum(1 for s in stages if s.owed or s.status == R.NOT_RUN)
    total_time = sum(s.duration_s or 0.0 for s in stages)
    counts = {"tests": str(len(stages)), "failures": str(failures), "errors": "0",
              "skipped": str(skipped), "time": f"{total_time:.3f}"}
    suites = ET.Element("testsuites", {"name": "pq gate", **counts})
    suite = ET.SubElement(suites, "testsuite", {"name": "pq gate", **counts,
                                                "timestamp": time.rstrip("Z")})
    props = ET.SubElement(suite, "properties")
    items: list[tuple[str, Any]] = [("tip", tip), ("tree", tree), ("status", status),
                                    ("cached", cached)]
    items += [(f"fingerprint.{k}", v) for k, v in fingerprint.items()]
    for key, value in items:
        text = ", ".join(value) if isinstance(value, list) else value
        ET.SubElement(props, "property", {"name": key,
                                          "value": _clean("" if text is None else str(text))})
    for stage in stages:
        case = ET.SubElement(suite, "testcase", {"classname": "pq.gate", "name": stage.name,
                                                 "time": f"{stage.duration_s or 0.0:.3f}"})
        if stage.failed:
            kind = "timeout" if stage.status == R.TIMED_OUT else "failure"
            node = ET.SubElement(case, "failure", {"message": _clean(stage.display()),
                                                   "type": kind})
            node.text = _clean(stage.tail or stage.detail)
        elif stage.owed or stage.status == R.NOT_RUN:
            ET.SubElement(case, "skipped", {"message": _clean(stage.display())})
        if stage.log:
            out = ET.SubElement(case, "system-out")
            out.text = _clean(f"log: {stage.log}")
    ET.indent(suites)
    data: bytes = ET.tostring(suites, encoding="utf-8", xml_declaration=True)
    return data + b"\n"
