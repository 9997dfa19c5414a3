"""The reports of a suite run: JUnit XML for CI, Markdown and HTML for people.

All three say the same things: a verdict per spec rule, a table per (API, version), and
for each failing run the step, its line, the request, the broker's response, what the
reference allowed, and the rules concerned. Runs not run are listed with the reason,
never counted as passed.
"""

from __future__ import annotations

import difflib
import html
import json
import xml.etree.ElementTree as ET
from pathlib import Path

from coordspec.conformance.suite.divergences import Divergence, rerun_command, tolerated
from coordspec.conformance.suite.results import RunResult, plan_label
from coordspec.conformance.suite.verdicts import api_verdicts, counts, rule_verdicts
from coordspec.conformance.tracecheck.rules import titled
from coordspec.reference.group.requests import VERSIONS

_STYLE = (
    "<style>body{font-family:sans-serif;max-width:70em;margin:2em auto}table{border-collapse:collapse}"
    "td,th{border:1px solid #ccc;padding:2px 8px}.failed{background:#fdd}.passed{background:#dfd}"
    ".error{background:#fed}.allowed{background:#eef}pre{background:#f6f6f6;padding:8px;overflow-x:auto}</style>"
)
MARK = {"passed": "✓", "failed": "✗", "allowed": "≈", "error": "!", "not_run": "–"}


def failure_text(result: RunResult) -> str:
    """The details of a failed or errored run, as plain text."""
    f = result.failure
    if f is None:
        return result.reason
    lines = [
        f"{result.path}:{f.line}: step {f.step} ({f.kind}): {f.message}",
        f"rules: {', '.join(f.rules)}",
    ]
    if f.api is not None:
        lines.append(f"request: {f.api} v{f.api_version} {json.dumps(f.request, sort_keys=True)}")
    if f.raw_response is not None:
        lines.append("broker response, as it came (the frame after its size):")
        lines.extend("  " + line for line in f.raw_response.splitlines())
    if f.response is not None:
        lines.append(f"broker response: {json.dumps(f.response, sort_keys=True)}")
    if f.late_response is not None:
        lines.append(
            f"broker response, {f.answered_after_ms} ms after the request: "
            f"{json.dumps(f.late_response, sort_keys=True)}"
        )
    if f.allowed:
        lines.append("the reference allows:")
        lines.extend(f"  {a}" for a in f.allowed)
    if f.closest is not None and f.response is not None:
        lines.append("diff, nearest allowed response -> broker response (open values filled in):")
        closest = _fill_open(f.closest, f.response)
        mine = json.dumps(closest, indent=1, sort_keys=True).splitlines()
        theirs = json.dumps(f.response, indent=1, sort_keys=True).splitlines()
        lines.extend(
            "  " + line
            for line in difflib.unified_diff(mine, theirs, "reference", "broker", lineterm="", n=2)
        )
    return "\n".join(lines)


def _fill_open(allowed, broker):
    """``allowed`` with the values the reference leaves open (member ids it has not seen
    yet) taken from ``broker`` where they stand in the same place: they are no difference."""
    if isinstance(allowed, dict) and isinstance(broker, dict):
        return {k: _fill_open(v, broker.get(k)) for k, v in allowed.items()}
    if isinstance(allowed, list) and isinstance(broker, list) and len(allowed) == len(broker):
        return [_fill_open(a, b) for a, b in zip(allowed, broker, strict=True)]
    if (
        isinstance(allowed, str)
        and allowed.startswith("<new member id")
        and isinstance(broker, str)
    ):
        return broker
    return allowed


def write_junit(results: list[RunResult], target: str, wall_s: float, path: Path) -> None:
    tally = counts(results)
    suite = ET.Element(
        "testsuite",
        name=f"coordspec conformance ({target})",
        tests=str(len(results)),
        failures=str(tally["failed"]),
        errors=str(tally["error"]),
        skipped=str(tally["not_run"]),
        time=f"{wall_s:.3f}",
    )
    for result in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=f"conformance.{result.scenario}",
            name=plan_label(result.plan),
            time=f"{result.duration_s:.3f}",
            file=result.path,
        )
        if result.status == "failed":
            ET.SubElement(
                case, "failure", message=result.reason, type=result.failure.kind
            ).text = failure_text(result)
        elif result.status == "error":
            ET.SubElement(case, "error", message=result.reason).text = failure_text(result)
        elif result.status == "not_run":
            ET.SubElement(case, "skipped", message=f"not run: {result.reason}")
        elif result.status == "allowed":
            ET.SubElement(case, "system-out").text = f"allowed divergence\n{failure_text(result)}"
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    ET.ElementTree(root).write(path, encoding="utf-8", xml_declaration=True)


def _summary_line(results: list[RunResult], wall_s: float) -> str:
    tally = counts(results)
    busy = sum(r.duration_s for r in results)
    return (
        f"{len(results)} runs: {tally['passed']} passed, {tally['failed']} failed, {tally['allowed']} allowed, "
        f"{tally['error']} errors, {tally['not_run']} not run; wall {wall_s:.2f} s, scenario time {busy:.2f} s, "
        f"concurrency ratio {busy / wall_s if wall_s else 0:.1f}"
    )


def markdown(results: list[RunResult], target: str, wall_s: float) -> str:
    out = [
        f"# Conformance report: target `{target}`",
        "",
        _summary_line(results, wall_s),
        "",
        "## Spec rules",
        "",
        "| rule | verdict | passed | failed | allowed | errors | not run |",
        "|---|---|---|---|---|---|---|",
    ]
    for v in rule_verdicts(results):
        out.append(
            f"| {v.rule} | {MARK[v.verdict]} {v.verdict} | {v.passed} | {v.failed} | {v.allowed} | {v.errors} | {v.not_run} |"
        )
    legend = "✓ answered as the reference allows, ✗ a failure at that version, ≈ only failures --allow tolerates, – not exercised."
    out += ["", "## API versions", "", legend, ""]
    table = api_verdicts(results)
    out.append("| API | " + " | ".join(f"v{n}" for n in range(10)) + " |")
    out.append("|---" * 11 + "|")
    for api, versions in VERSIONS.items():
        cells = []
        for n in range(10):
            cells.append(MARK[table.get(api, {}).get(n, "not_run")] if n in versions else " ")
        out.append(f"| {api} | " + " | ".join(cells) + " |")
    failing = [r for r in results if r.status in ("failed", "error")]
    if failing:
        out += ["", "## Failures", ""]
        for r in failing:
            out += [f"### {r.label}", "", f"{r.checks}", "", "```", failure_text(r), "```", ""]
    allowed = [r for r in results if r.status == "allowed"]
    if allowed:
        out += ["", "## Allowed divergences", ""]
        for r in allowed:
            out += [f"### {r.label}", "", f"{r.checks}", "", "```", failure_text(r), "```", ""]
    skipped = [r for r in results if r.status == "not_run"]
    if skipped:
        out += ["", "## Not run", ""]
        out += [f"- {r.label}: {r.reason}" for r in skipped]
    return "\n".join(out) + "\n"


def html_report(results: list[RunResult], target: str, wall_s: float) -> str:
    e = html.escape
    parts = [
        f"<!doctype html><meta charset='utf-8'><title>Conformance: {e(target)}</title>",
        _STYLE,
        f"<h1>Conformance report: target <code>{e(target)}</code></h1><p>{e(_summary_line(results, wall_s))}</p>",
        "<h2>Spec rules</h2><table><tr><th>rule<th>verdict<th>passed<th>failed<th>allowed<th>errors<th>not run",
    ]
    for v in rule_verdicts(results):
        parts.append(
            f"<tr class='{v.verdict}'><td>{v.rule}<td>{MARK[v.verdict]} {v.verdict}<td>{v.passed}<td>{v.failed}"
            f"<td>{v.allowed}<td>{v.errors}<td>{v.not_run}"
        )
    parts.append(
        "</table><h2>API versions</h2><table><tr><th>API" + "".join(f"<th>v{n}" for n in range(10))
    )
    table = api_verdicts(results)
    for api, versions in VERSIONS.items():
        row = [f"<tr><td>{api}"]
        for n in range(10):
            verdict = table.get(api, {}).get(n, "not_run")
            row.append(f"<td class='{verdict}'>{MARK[verdict]}" if n in versions else "<td>")
        parts.append("".join(row))
    parts.append("</table>")
    failing = [r for r in results if r.status in ("failed", "error")]
    if failing:
        parts.append("<h2>Failures</h2>")
        for r in failing:
            parts.append(
                f"<h3>{e(r.label)}</h3><p>{e(r.checks)}</p><pre>{e(failure_text(r))}</pre>"
            )
    allowed = [r for r in results if r.status == "allowed"]
    if allowed:
        parts.append("<h2>Allowed divergences</h2>")
        for r in allowed:
            parts.append(
                f"<h3>{e(r.label)}</h3><p>{e(r.checks)}</p><pre>{e(failure_text(r))}</pre>"
            )
    skipped = [r for r in results if r.status == "not_run"]
    if skipped:
        parts.append(
            "<h2>Not run</h2><ul>"
            + "".join(f"<li>{e(r.label)}: {e(r.reason)}" for r in skipped)
            + "</ul>"
        )
    return "\n".join(parts) + "\n"


def write_report(
    results: list[RunResult], target: str, wall_s: float, directory: Path
) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    md, page = directory / "conformance.md", directory / "conformance.html"
    md.write_text(markdown(results, target, wall_s), encoding="utf-8")
    page.write_text(html_report(results, target, wall_s), encoding="utf-8")
    return [md, page]


def divergence_text(number: int, d: Divergence, rerun: str) -> str:
    """One distinct divergence: what, how much, which rules, an example, how to rerun it."""
    allowed = " (allowed)" if d.allowed else ""
    lines = [
        f"{number}. [{d.severity}]{allowed} {d.title}",
        f"   {len(d.runs)} run{'s' if len(d.runs) != 1 else ''} failed, {d.stopped} stopped "
        f"before their end; scenarios: {', '.join(d.scenarios[:5])}"
        + (f" and {len(d.scenarios) - 5} more" if len(d.scenarios) > 5 else ""),
        f"   {d.severity}: {d.why}",
        f"   rules: {'; '.join(titled(r) for r in d.rules)}",
        f"   example: {d.example.label}",
        *("      " + line for line in failure_text(d.example).splitlines()),
        f"   rerun: {rerun_command(d.example, rerun)}",
    ]
    return "\n".join(lines)


def console_summary(
    results: list[RunResult], wall_s: float, found: list[Divergence], rerun: str
) -> str:
    """The distinct divergences, most important first, then what was tolerated, errors, what
    was not run, and the counts."""
    lines = []
    if found:
        failing = sum(len(d.runs) for d in found)
        lines.append(
            f"{len(found)} distinct divergence{'s' if len(found) != 1 else ''} ({failing} runs):"
        )
        lines.extend(divergence_text(n, d, rerun) for n, d in enumerate(found, start=1))
    accepted = tolerated(results)
    if accepted:
        lines.append(f"{len(accepted)} divergences --allow accepted as the runs went on:")
        lines.extend(
            f"  {t.title}: {len(t.steps)} times in {t.runs} runs ({t.reason})" for t in accepted
        )
    for r in results:
        if r.status == "error":
            lines.append(
                f"ERROR {r.label}\n"
                + "\n".join("  " + line for line in failure_text(r).splitlines())
            )
    failed_rules = [v.rule for v in rule_verdicts(results) if v.verdict == "failed"]
    if failed_rules:
        lines.append("rules failed: " + ", ".join(failed_rules))
    not_run = {r.reason for r in results if r.status == "not_run"}
    for reason in sorted(not_run):
        n = sum(1 for r in results if r.status == "not_run" and r.reason == reason)
        lines.append(f"not run ({n}): {reason}")
    summary = _summary_line(results, wall_s)
    if found:
        summary += f"; {len(found)} distinct divergences"
    lines.append(summary)
    return "\n".join(lines)
