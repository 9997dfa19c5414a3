"""``conformance.html``: the distinct divergences first, then the rules and the (API, version)
grid, whose rows and cells link to their divergences; every failing run collapsed under its
divergence. Long lines wrap: nothing is cut at the right edge."""

from __future__ import annotations

import html
import re

from coordspec.conformance.suite.divergences import Divergence
from coordspec.conformance.suite.report_facts import (
    MARK,
    WORDS,
    Facts,
    title_of,
    verdict_text,
)
from coordspec.conformance.suite.reports_markdown import GRID_LEGEND
from coordspec.conformance.suite.severity import SEVERITIES
from coordspec.reference.group.requests import VERSIONS

e = html.escape
COLOURS = {
    "wire": "#8b0000",
    "safety": "#d00000",
    "liveness": "#e06000",
    "protocol": "#b08000",
    "timing": "#2060c0",
    "cosmetic": "#707070",
}
_STYLE = (
    "<style>body{font-family:sans-serif;max-width:80em;margin:2em auto;padding:0 1em}"
    "table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 8px;vertical-align:top}"
    ".failed{background:#fdd}.passed{background:#dfd}.error{background:#fed}.allowed{background:#eef}"
    "pre{background:#f6f6f6;padding:8px;white-space:pre-wrap;overflow-wrap:anywhere}"
    ".sev{color:#fff;padding:0 6px;border-radius:3px;font-weight:bold}"
    "details>summary{cursor:pointer}a{text-decoration:none}"
    + "".join(f".sev-{name}{{background:{colour}}}" for name, colour in COLOURS.items())
    + "</style>"
)


def page(facts: Facts) -> str:
    parts = [
        (
            f"<!doctype html><html lang='en'><meta charset='utf-8'>"
            f"<title>Conformance: {e(facts.target)}</title>"
        ),
        _STYLE,
        f"<h1>Conformance report: target <code>{e(facts.target)}</code></h1>",
        f"<p>{e(facts.summary_line)}</p>",
        _divergence_list(facts),
        _rules(facts),
        _grid(facts),
        _failures(facts),
        _tolerated(facts),
        _errors(facts),
        _not_run(facts),
        _severities(),
    ]
    return "\n".join(p for p in parts if p) + "\n"


def _badge(severity: str) -> str:
    return f"<span class='sev sev-{severity}' title='{e(SEVERITIES[severity])}'>{severity}</span>"


def _links(numbers: list[int]) -> str:
    return " ".join(f"<a href='#d{n}'>#{n}</a>" for n in numbers)


def _title(rule: str) -> str:
    """A rule's title, its `names` as code."""
    return re.sub(r"`([^`]+)`", r"<code>\1</code>", e(title_of(rule)))


def _rule_link(rule: str) -> str:
    return f"<a href='#rule-{rule}' title='{e(title_of(rule))}'>{rule}</a>"


def _divergence_list(facts: Facts) -> str:
    found = facts.found
    if not found:
        return "<h2>No divergences</h2><p>Every run that ran passed or was allowed.</p>"
    failing = sum(len(d.runs) for d in found)
    rows = [
        (
            f"<h2>{len(found)} distinct divergence{'s' if len(found) != 1 else ''} "
            f"({failing} runs)</h2>"
        ),
        "<table><tr><th>#<th>severity<th>divergence<th>runs<th>stopped<th>rules<th>rerun",
    ]
    for n, d in enumerate(found, start=1):
        allowed = " (allowed)" if d.allowed else ""
        rows.append(
            f"<tr><td><a href='#d{n}'>{n}</a><td>{_badge(d.severity)}"
            f"<td><a href='#d{n}'>{e(d.title)}</a>{allowed}<td>{len(d.runs)}<td>{d.stopped}"
            f"<td>{' '.join(_rule_link(r) for r in d.rules)}"
            f"<td><code>{e(facts.rerun_of(d.example))}</code>"
        )
    return "\n".join(rows) + "</table>"


def _rules(facts: Facts) -> str:
    rows = [
        (
            "<h2>Spec rules</h2><table><tr><th>rule<th>title<th>verdict<th>passed<th>failed"
            "<th>allowed<th>errors<th>not run<th>divergences"
        )
    ]
    for v in facts.rules:
        rows.append(
            f"<tr id='rule-{v.rule}' class='{v.verdict}'><td>{v.rule}<td>{_title(v.rule)}"
            f"<td>{verdict_text(v.verdict)}<td>{v.passed}<td>{v.failed}<td>{v.allowed}"
            f"<td>{v.errors}<td>{v.not_run}<td>{_links(facts.by_rule.get(v.rule, []))}"
        )
    return "\n".join(rows) + "</table>"


def _grid(facts: Facts) -> str:
    rows = [
        f"<h2>API versions</h2><p>{e(GRID_LEGEND)} A marked cell links to its divergences.</p>"
        "<table><tr><th>API" + "".join(f"<th>v{n}" for n in range(10))
    ]
    for api, versions in VERSIONS.items():
        row = [f"<tr><td>{api}"]
        for n in range(10):
            verdict = facts.grid.get(api, {}).get(n, "not_run")
            mark = MARK[verdict]
            if (api, n) in facts.by_cell:
                mark = f"<a href='#at-{api}-v{n}'>{mark}</a>"
            cell = f"<td class='{verdict}' title='{WORDS[verdict]}'>{mark}"
            row.append(cell if n in versions else "<td>")
        rows.append("".join(row))
    rows.append("</table>")
    if facts.by_cell:
        rows.append("<h3>Divergences per API version</h3><ul>")
        rows.extend(
            f"<li id='at-{api}-v{n}'>{api} v{n}: {_links(numbers)}"
            for (api, n), numbers in facts.by_cell.items()
        )
        rows.append("</ul>")
    return "\n".join(rows)


def _failures(facts: Facts) -> str:
    if not facts.found:
        return ""
    parts = ["<h2>Failures, by divergence</h2>"]
    for n, d in enumerate(facts.found, start=1):
        parts.append(_divergence(facts, n, d))
    return "\n".join(parts)


def _divergence(facts: Facts, n: int, d: Divergence) -> str:
    allowed = " (allowed)" if d.allowed else ""
    runs = "".join(
        f"<details id='{_run_anchor(r)}'><summary>{e(r.label)}"
        + (f" ({e(r.reason)})" if r.status == "allowed" else "")
        + f"</summary><pre>{e(facts.text(r))}</pre>"
        f"<p>rerun: <code>{e(facts.rerun_of(r))}</code></p></details>"
        for r in d.runs
    )
    return (
        f"<section id='d{n}'><h3>{n}. {_badge(d.severity)}{allowed} {e(d.title)}</h3>"
        f"<p>{len(d.runs)} runs failed, {d.stopped} stopped before their end; versions "
        f"{e(d.band or '-')}; {e(d.severity)}: {e(d.why)}</p>"
        f"<p>rules: {'; '.join(f'{_rule_link(r)} {_title(r)}' for r in d.rules)}</p>"
        f"<p>rerun: <code>{e(facts.rerun_of(d.example))}</code></p>"
        f"<details open><summary>example: {e(d.example.label)}</summary>"
        f"<pre>{e(facts.text(d.example))}</pre></details>"
        f"<details><summary>all {len(d.runs)} runs</summary>{runs}</details></section>"
    )


def _run_anchor(result) -> str:
    return "run-" + re.sub(r"[^A-Za-z0-9]+", "-", f"{result.group_id or result.label}")


def _tolerated(facts: Facts) -> str:
    if not facts.tolerated:
        return ""
    rows = [
        "<h2>Divergences --allow accepted</h2><table><tr><th>divergence<th>times<th>runs<th>reason"
    ]
    rows.extend(
        f"<tr><td>{e(t.title)}<td>{len(t.steps)}<td>{t.runs}<td>{e(t.reason)}"
        for t in facts.tolerated
    )
    return "\n".join(rows) + "</table>"


def _errors(facts: Facts) -> str:
    if not facts.errors:
        return ""
    parts = ["<h2>Errors</h2>"]
    for g in facts.errors:
        parts.append(f"<h3>{e(g.reason)} ({len(g.runs)} runs)</h3>")
        parts.extend(
            f"<details><summary>{e(r.label)}</summary><pre>{e(facts.text(r))}</pre></details>"
            for r in g.runs
        )
    return "\n".join(parts)


def _not_run(facts: Facts) -> str:
    if not facts.not_run:
        return ""
    parts = ["<h2>Not run</h2>"]
    for g in facts.not_run:
        parts.append(
            f"<details><summary>{e(g.reason)} ({len(g.runs)} runs)</summary><ul>"
            + "".join(f"<li>{e(r.label)}" for r in g.runs)
            + "</ul></details>"
        )
    return "\n".join(parts)


def _severities() -> str:
    return (
        "<h2>Severity classes</h2><table><tr><th>class<th>the divergence"
        + "".join(f"<tr><td>{_badge(name)}<td>{e(meaning)}" for name, meaning in SEVERITIES.items())
        + "</table>"
    )
