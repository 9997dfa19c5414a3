"""The reports of a suite run: JUnit XML for CI; Markdown, HTML and JSON for people and bots;
and the console summary.

``write_report`` writes ``conformance.md`` (a summary under 1 MiB: the distinct
divergences, the rules with their titles, the (API, version) grid, what was tolerated,
errors, what was not run), ``conformance-details.md`` (every failing run under its
divergence), ``conformance.html`` and ``conformance.json`` (shape: :mod:`reports_json`).
Runs not run are listed with the reason, never counted as passed. The writers run again
and again during a run, so each file is replaced whole (written aside, then renamed): a
reader never sees half a report.
"""

from __future__ import annotations

import os
import threading
import xml.etree.ElementTree as ET
from pathlib import Path

from coordspec.conformance.suite import reports_html, reports_json, reports_markdown
from coordspec.conformance.suite.divergences import Divergence, rerun_command, tolerated
from coordspec.conformance.suite.report_facts import Facts, failure_text
from coordspec.conformance.suite.results import RunResult, plan_label
from coordspec.conformance.suite.verdicts import rule_verdicts
from coordspec.conformance.tracecheck.rules import titled


def write_report(
    results: list[RunResult],
    target: str,
    wall_s: float,
    directory: Path,
    found: list[Divergence],
    rerun: str,
) -> list[Path]:
    """``found``: ``divergences.group(results)``; ``rerun``: the command line that selects the
    target, which each rerun command narrows to one run."""
    facts = Facts(results, target, wall_s, found, rerun)
    files = {
        "conformance.md": reports_markdown.summary(facts),
        "conformance-details.md": reports_markdown.details(facts),
        "conformance.html": reports_html.page(facts),
        "conformance.json": reports_json.text(facts),
    }
    directory.mkdir(parents=True, exist_ok=True)
    for name, text in files.items():
        _replace(directory / name, text.encode("utf-8"))
    return [directory / name for name in files]


def write_junit(
    results: list[RunResult],
    target: str,
    wall_s: float,
    path: Path,
    found: list[Divergence],
) -> None:
    """One testcase per run, with ``<properties>``: ``rule`` (one per rule it checks or
    breaks) and, for a failed or allowed run, its ``divergence`` (number), ``divergence_title``
    and ``severity``, numbered as the other reports number them."""
    facts = Facts(results, target, wall_s, found, "")
    tally = facts.tally
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
        properties = ET.SubElement(case, "properties")
        blamed = result.failure.rules if result.failure else ()
        for rule in dict.fromkeys((*result.rules, *blamed)):
            ET.SubElement(properties, "property", name="rule", value=rule)
        numbered = facts.divergence_of(result)
        if numbered is not None:
            n, d, title = numbered
            for name, value in (
                ("divergence", str(n)),
                ("divergence_title", title),
                ("severity", d.severity),
            ):
                ET.SubElement(properties, "property", name=name, value=value)
        if result.status == "failed":
            ET.SubElement(
                case, "failure", message=result.reason, type=result.failure.kind
            ).text = facts.text(result)
        elif result.status == "error":
            ET.SubElement(case, "error", message=result.reason).text = facts.text(result)
        elif result.status == "not_run":
            ET.SubElement(case, "skipped", message=f"not run: {result.reason}")
        elif result.status == "allowed":
            ET.SubElement(case, "system-out").text = f"allowed divergence\n{facts.text(result)}"
    root = ET.Element("testsuites")
    root.append(suite)
    ET.indent(root)
    path.parent.mkdir(parents=True, exist_ok=True)
    _replace(path, ET.tostring(root, encoding="utf-8", xml_declaration=True))


def _replace(path: Path, data: bytes) -> None:
    """``path`` holds ``data``, or what it held before: never part of it. The file aside is
    named per process and thread (two writers never share it) and made by ``open``, which
    gives it the usual permissions (``mkstemp``'s are the owner's only)."""
    aside = path.with_name(f".{path.name}.{os.getpid()}-{threading.get_ident()}.tmp")
    try:
        aside.write_bytes(data)
        os.replace(aside, path)
    except BaseException:
        aside.unlink(missing_ok=True)
        raise


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
    summary = Facts(results, "", wall_s, found, rerun).summary_line
    if found:
        summary += f"; {len(found)} distinct divergences"
    lines.append(summary)
    return "\n".join(lines)
