"""``--conformance-html FILE``: the JSON report as one self-contained page to attach to a PR.

No scripts, no external styles or fonts: the file opens anywhere, offline, and says the
same as the JSON (it is rendered from it). Failures come first with their steps, then the
verdict per capability, the tables by rule and by clause, and every test.
"""

from __future__ import annotations

from html import escape
from typing import Any

__all__ = ["render_html"]

_CSS = """
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:90em;color:#222;padding:0 1em}
h1{font-size:1.5em}h2{font-size:1.15em;margin-top:1.8em;border-bottom:1px solid #ddd}
table{border-collapse:collapse;margin:.5em 0}td,th{padding:.2em .7em;text-align:left;
border-bottom:1px solid #eee;vertical-align:top}th{background:#f6f6f6}
td.n{text-align:right}.pass{color:#176a26;font-weight:600}.fail{color:#b3261e;font-weight:700}
.skip,.----{color:#777}.error,.not-tested{color:#a15c00;font-weight:700}
pre{background:#f7f7f7;padding:.6em;font-size:12.5px;white-space:pre-wrap}
dd,pre,h3,td.long{overflow-wrap:anywhere}td.n,td span{white-space:nowrap}
dl.meta{display:grid;grid-template-columns:max-content auto;gap:.15em 1em}dt{color:#666}
"""


def _status(value: str) -> str:
    return f'<span class="{escape(value.replace(" ", "-"))}">{escape(value.upper())}</span>'


def _table(heads: tuple[str, ...], rows: list[str]) -> str:
    """A table: a header row of ``heads`` (plain text), then ``rows`` (each a ``<tr>``)."""
    head = "".join(f"<th>{escape(h)}</th>" for h in heads)
    return f"<table><tr>{head}</tr>{''.join(rows)}</table>"


def _counts_table(title: str, rows: dict[str, dict[str, Any]], text: bool) -> str:
    heads = (title, *(("text",) if text else ()), "passed", "failed", "skipped", "status")
    body = []
    for ident, row in rows.items():
        cells = f"<td>{escape(ident)}</td>"
        if text:
            cells += f"<td>{escape(str(row.get('text', '')))}</td>"
        counts = (row.get(k, 0) for k in ("passed", "failed", "skipped"))
        cells += "".join(f'<td class="n">{n}</td>' for n in counts)
        why = row.get("run_with") or " ".join(row.get("untested") or [])
        note = f" {escape(f'(run with {why})' if row.get('run_with') else why)}" if why else ""
        body.append(f"<tr>{cells}<td class=long>{_status(str(row.get('status', '')))}{note}"
                    "</td></tr>")
    return _table(heads, body)


def _capabilities(data: dict[str, Any]) -> str:
    rows = []
    detected = data.get("capabilities", {})
    for name, group in data.get("capability_results", {}).items():
        status = data.get("verdict", {}).get(name, "")
        # A note says why the row reads as it does: a skip reason only on a SKIP row (a
        # PASS row's first skipped test says nothing about the verdict beside it).
        if status == "skip":
            why = group.get("reason") or detected.get(name, {}).get("reason", "")
        elif group.get("untested"):
            why = "not tested: " + ", ".join(group["untested"])
        elif status == "pass":
            why = detected.get(name, {}).get("reason", "")
        else:
            why = ""
        kind = "base contract" if name == "base" else "optional"
        rows.append(
            f"<tr><td>{escape(name)}</td><td>{kind}</td><td>{_status(status)}</td>"
            f'<td class="n">{group["passed"]}</td><td class="n">{group["failed"]}</td>'
            f'<td class="n">{group["skipped"]}</td><td class=long>{escape(str(why))}</td></tr>'
        )
    return _table(("capability", "kind", "status", "passed", "failed", "skipped", "note"), rows)


def _failures(data: dict[str, Any]) -> str:
    parts = []
    for f in data.get("failures", []):
        ids = "".join(
            f"<li><b>{escape(i)}</b>: {escape(str(f['texts'].get(i, '')))}</li>" for i in f["rules"]
        )
        steps = escape("\n".join(f.get("steps") or []))
        parts.append(
            f"<h3>{escape(f['test'])}</h3><ul>{ids}</ul>"
            f"<pre>{escape(f.get('message', ''))}</pre>"
            + (f"<details open><summary>steps</summary><pre>{steps}</pre></details>" * bool(steps))
        )
    for e in data.get("errors", []):
        parts.append(f"<h3>error, no rule charged: {escape(e['test'])}</h3>"
                     f"<pre>{escape(e.get('message', ''))}</pre>")
    return "".join(parts) or "<p>None.</p>"


def _tests(data: dict[str, Any]) -> str:
    rows = []
    for t in data.get("tests", []):
        note = t.get("message", "").splitlines()[0] if t.get("message") else ""
        rows.append(
            f"<tr><td class=long>{escape(t['nodeid'])}</td><td>{_status(t['outcome'])}</td>"
            f"<td>{escape(' '.join(t.get('rules', [])))}</td>"
            f"<td>{escape(' '.join(t.get('features', [])) or 'base')}</td>"
            f'<td class="n">{t.get("duration", 0):.2f}</td><td class=long>{escape(note)}</td></tr>'
        )
    return _table(("test", "outcome", "ids", "capability", "s", "note"), rows)


def render_html(data: dict[str, Any]) -> str:
    """The whole page for one run's JSON report."""
    s = data.get("summary", {})
    meta_keys = ("target", "base", "prefix", "profile", "seed", "places", "command", "exitstatus")
    meta = "".join(
        f"<dt>{escape(k)}</dt><dd>{escape(str(data.get(k)))}</dd>" for k in meta_keys if k in data
    )
    verdict = data.get("verdict", {}).get("base", "----")
    clauses = data.get("clauses") or {}
    return "\n".join([
        "<!doctype html><html lang=en><head><meta charset=utf-8>",
        "<title>o41 Artifacts conformance report</title>",
        f"<style>{_CSS}</style></head><body>",
        f"<h1>o41 Artifacts conformance: base contract {_status(verdict)}</h1>",
        f"<p>{s.get('passed', 0)} passed, {s.get('failed', 0)} failed, "
        f"{s.get('skipped', 0)} skipped, {s.get('error', 0)} errors.</p>",
        f'<dl class="meta">{meta}</dl>',
        "<h2>Failures</h2>", _failures(data),
        "<h2>Base and optional capabilities</h2>", _capabilities(data),
        "<h2>By rule</h2>", _counts_table("rule", data.get("rules", {}), text=True),
        *(["<h2>By clause</h2>", _counts_table("clause", clauses, text=True)] if clauses else []),
        "<h2>Tests</h2>", _tests(data),
        "</body></html>",
    ])
