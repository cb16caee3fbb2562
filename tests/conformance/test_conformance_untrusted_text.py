"""What a target sends is shown safely: its escape sequences never reach the terminal as
they came, and every report is written even when its error codes hold a lone surrogate.

The target (tests/support/fake_targets.py) answers the probe as an o41 API, then every call with an
error whose code clears the screen, sets the window title, erases the line, reverses the
text and ends in ``\\udcff`` (valid JSON, not encodable as UTF-8).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

from conformance.report import Collector
from conformance.rules import RuleViolation
from conformance.shown import safe
from tests.support.fake_targets import HOSTILE_CODES, hostile_codes, raw_target, run_suite

RAW = ("\x1b", "\x07", "\u202e", "\udcff", "\r")


def test_hostile_error_codes_are_escaped_and_every_report_is_written(tmp_path: Path) -> None:
    json_path, html_path, junit = tmp_path / "r.json", tmp_path / "r.html", tmp_path / "j.xml"
    with raw_target(hostile_codes) as url:
        done = run_suite(
            "--target", url, "--api-key", "ak_x", "--rules", "OPEN-1,OPEN-3", "--tb=short",
            "--conformance-report", str(json_path), "--conformance-html", str(html_path),
            "--junitxml", str(junit), timeout=300,
        )
    out = done.stdout + done.stderr
    assert done.returncode == 1, out[-3000:]
    assert "Traceback" not in done.stderr
    assert not [c for c in RAW if c in out], "raw control characters reached the terminal"
    assert "\\x1b[2J" in out, "the escape sequence is shown, spelled out"
    data = json.loads(json_path.read_text(encoding="ascii"))
    assert data["failures"]
    page = html_path.read_text(encoding="utf-8")
    assert page.startswith("<!doctype html>") and page.rstrip().endswith("</html>")
    assert "\\udcff" in page and not [c for c in RAW if c in page]
    assert ET.parse(junit).getroot().iter("testcase")
    dumped = json.dumps(data, ensure_ascii=False)
    assert not [c for c in RAW if c in dumped] and "\\\\x1b" in dumped


def test_collector_records_target_text_escaped() -> None:
    c = Collector()
    code = "".join(HOSTILE_CODES)
    c.record("t::a", ["OPEN-1.a"], "call", "failed", exc=RuleViolation("OPEN-1.a", code),
             message=f"RuleViolation: {code}", trail=[f"POST /artifacts/open -> 400 {code}"])
    text = "\n".join(c.lines())
    assert not [ch for ch in RAW if ch in text]
    assert safe(code) in text and "\\u202e" in text and "\\udcff" in text
