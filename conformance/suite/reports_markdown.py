"""The Markdown reports: ``conformance.md``, a summary that always fits GitHub's job summary
(1 MiB), and ``conformance-details.md``, every failing run under its divergence.

Past its cap, the summary lists every divergence, tolerance, error reason and not-run reason
in one line while there is room, then gives the divergences (most severe first), then the
rest, their full example while there is room; a note at the top counts what did not fit.
The tables of rules and versions (bounded by the catalog, about 10 kB) are always whole.
"""

from __future__ import annotations

from coordspec.conformance.suite.divergences import Divergence
from coordspec.conformance.suite.report_facts import (
    MARK,
    Facts,
    Grouped,
    title_of,
    verdict_text,
)
from coordspec.conformance.suite.severity import SEVERITIES
from coordspec.conformance.tracecheck.rules import titled
from coordspec.reference.group.requests import VERSIONS

# GitHub refuses a job summary over 1 MiB (1,048,576 bytes); the rest is room for the note.
LIMIT = 1_000_000
EXAMPLE_CHARS = 6_000  # of one example's failure text
GRID_LEGEND = (
    "✓ answered as the reference allows, ✗ a failure at that version, "
    "≈ only failures --allow tolerates, – not exercised."
)


def summary(facts: Facts, limit: int = LIMIT) -> str:
    found = facts.found
    failing = sum(len(d.runs) for d in found)
    allowed = sum(1 for d in found if d.allowed)
    head = [
        f"# Conformance report: target `{facts.target}`",
        "",
        f"**{len(found)} distinct divergence{'s' if len(found) != 1 else ''}**"
        + (f", {allowed} of them tolerated by --allow," if allowed else "")
        + f" in {failing} runs.",
        "",
        facts.summary_line,
        "",
    ]
    fixed = [_severities(), _rules(facts), _grid(facts)]
    sections = [
        (
            "## Divergences",
            [
                (_divergence_line(facts, n, d), _divergence(facts, n, d))
                for n, d in enumerate(found, start=1)
            ],
        ),
        (
            "## Divergences --allow accepted",
            [(_tolerance_line(t), _tolerance_line(t)) for t in facts.tolerated],
        ),
        ("## Errors", [(_group_line(g), _error(facts, g)) for g in facts.errors]),
        ("## Not run", [(_group_line(g), _not_run(g)) for g in facts.not_run]),
        (
            "## Flaky runs (--loop: passed in some loops, failed in others)",
            [(f"- {f}", f"- {f}") for f in facts.flaky],
        ),
    ]
    whole = [[full for _, full in items] for _, items in sections]
    text = _assemble(head, [], fixed, sections, whole, found)
    if _size(text) <= limit:
        return text
    headings = sum(_size(heading) + 4 for heading, _ in sections)
    room = limit - _size(_assemble(head, [], fixed, sections, [[]] * len(sections), found))
    room -= headings + _size("\n".join(_note(limit, 10**9, 10**9)))
    chosen, shortened, left_out = _fit([items for _, items in sections], room)
    return _assemble(head, _note(limit, shortened, left_out), fixed, sections, chosen, found)


def _note(limit: int, shortened: int, left_out: int) -> list[str]:
    return [
        (
            f"> This summary is capped at {limit:,} bytes. Shown in one line, without their "
            f"example: {shortened}; left out: {left_out}. Every failing run is in "
            "`conformance-details.md`, everything in `conformance.json`."
        ),
        "",
    ]


def _assemble(head, note, fixed, sections, chosen, found) -> str:
    """The divergences first, then the reference tables, then tolerances, errors, not run."""
    parts = []
    for (heading, _), texts in zip(sections, chosen, strict=True):
        parts.append([heading, "", *texts, ""] if texts else [])
    if not found:
        parts[0] = ["## Divergences", "", "None: no run failed on a divergence.", ""]
    rest = [line for part in parts[1:] for line in part]
    return "\n".join([*head, *note, *parts[0], *fixed, *rest]) + "\n"


def _fit(sections: list[list[tuple[str, str]]], room: int) -> tuple[list[list[str]], int, int]:
    """Each item's short form while there is room (in order), then its full form while there
    is room (in order). Returns the texts chosen per section, how many items are short and
    how many are left out."""
    chosen: list[list[str | None]] = [[None] * len(items) for items in sections]
    for s, items in enumerate(sections):
        for i, (short, _) in enumerate(items):
            if _size(short) < room:
                chosen[s][i], room = short, room - _size(short) - 1
    shortened = 0
    for s, items in enumerate(sections):
        for i, (short, full) in enumerate(items):
            if chosen[s][i] is None or full == short:
                continue
            extra = _size(full) - _size(short)
            if extra < room:
                chosen[s][i], room = full, room - extra
            else:
                shortened += 1
    left_out = sum(text is None for texts in chosen for text in texts)
    return [[t for t in texts if t is not None] for texts in chosen], shortened, left_out


def _size(text: str) -> int:
    return len(text.encode("utf-8"))


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("\n", " ")


def _divergence_line(facts: Facts, n: int, d: Divergence) -> str:
    allowed = " (allowed)" if d.allowed else ""
    return (
        f"{n}. **[{d.severity}]**{allowed} {d.title}: {len(d.runs)} runs, {d.stopped} stopped; "
        f"rerun `{facts.rerun_of(d.example)}`"
    )


def _divergence(facts: Facts, n: int, d: Divergence) -> str:
    scenarios = ", ".join(d.scenarios[:8]) + (
        f" and {len(d.scenarios) - 8} more" if len(d.scenarios) > 8 else ""
    )
    example = facts.text(d.example)
    if len(example) > EXAMPLE_CHARS:
        cut = len(example) - EXAMPLE_CHARS
        example = example[:EXAMPLE_CHARS] + f"\n… {cut:,} characters more in conformance-details.md"
    allowed = " (allowed)" if d.allowed else ""
    return "\n".join(
        [
            f"### {n}. [{d.severity}]{allowed} {d.title}",
            "",
            f"- **severity** {d.severity}: {d.why}",
            (
                f"- **runs** {len(d.runs)} failed, {d.stopped} stopped before their end; "
                f"versions {d.band or '-'}; scenarios: {scenarios}"
            ),
            f"- **rules** {'; '.join(titled(r) for r in d.rules)}",
            f"- **rerun** `{facts.rerun_of(d.example)}`",
            f"- **example** {d.example.label}",
            "",
            "```text",
            example,
            "```",
            "",
        ]
    )


def _tolerance_line(t) -> str:
    return f"- {t.title}: {len(t.steps)} times in {t.runs} runs ({t.reason})"


def _group_line(g: Grouped) -> str:
    return f"- **{len(g.runs)}** run{'s' if len(g.runs) != 1 else ''}: {g.reason}"


def _error(facts: Facts, g: Grouped) -> str:
    labels = ", ".join(r.label for r in g.runs[:5]) + (
        f" and {len(g.runs) - 5} more" if len(g.runs) > 5 else ""
    )
    lines = [_group_line(g), f"  - runs: {labels}"]
    if g.runs[0].failure is not None:
        example = facts.text(g.runs[0])[:EXAMPLE_CHARS]
        lines += ["", "  ```text", *("  " + line for line in example.splitlines()), "  ```"]
    return "\n".join(lines)


def _not_run(g: Grouped) -> str:
    scenarios = sorted({r.scenario for r in g.runs})
    return (
        _group_line(g)
        + "\n  - scenarios: "
        + ", ".join(scenarios[:10])
        + (f" and {len(scenarios) - 10} more" if len(scenarios) > 10 else "")
    )


def _severities() -> str:
    rows = [f"| **{name}** | {meaning} |" for name, meaning in SEVERITIES.items()]
    return "\n".join(
        [
            "## Severity classes",
            "",
            "Most severe first (spec/divergences.md).",
            "",
            "| class | the divergence |",
            "|---|---|",
            *rows,
            "",
        ]
    )


def _rules(facts: Facts) -> str:
    out = [
        "## Spec rules",
        "",
        "| rule | title | verdict | passed | failed | allowed | errors | not run | divergences |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for v in facts.rules:
        numbers = ", ".join(f"{n}" for n in facts.by_rule.get(v.rule, []))
        out.append(
            f"| {v.rule} | {_cell(title_of(v.rule))} | {verdict_text(v.verdict)} | {v.passed} "
            f"| {v.failed} | {v.allowed} | {v.errors} | {v.not_run} | {numbers} |"
        )
    return "\n".join([*out, ""])


def _grid(facts: Facts) -> str:
    out = ["## API versions", "", GRID_LEGEND, ""]
    out.append("| API | " + " | ".join(f"v{n}" for n in range(10)) + " |")
    out.append("|---" * 11 + "|")
    for api, versions in VERSIONS.items():
        marks = facts.grid.get(api, {})
        cells = [MARK[marks.get(n, "not_run")] if n in versions else " " for n in range(10)]
        out.append(f"| {api} | " + " | ".join(cells) + " |")
    return "\n".join([*out, ""])


def details(facts: Facts) -> str:
    """Every failing run, under its divergence; then the errors."""
    out = [
        f"# Conformance details: target `{facts.target}`",
        "",
        facts.summary_line,
        "",
        (
            "Every failing run, under its distinct divergence (most severe first); "
            "the summary is `conformance.md`."
        ),
        "",
    ]
    for n, d in enumerate(facts.found, start=1):
        allowed = " (allowed)" if d.allowed else ""
        out += [
            f"## {n}. [{d.severity}]{allowed} {d.title}",
            "",
            (
                f"{len(d.runs)} runs, {d.stopped} stopped before their end; "
                f"rules: {'; '.join(titled(r) for r in d.rules)}"
            ),
            "",
        ]
        for r in d.runs:
            status = f" ({r.reason})" if r.status == "allowed" else ""
            out += [
                f"### {r.label}{status}",
                "",
                f"rerun: `{facts.rerun_of(r)}`",
                "",
                "```text",
                facts.text(r),
                "```",
                "",
            ]
    if facts.errors:
        out += ["## Errors", ""]
        for g in facts.errors:
            for r in g.runs:
                out += [f"### {r.label}", "", "```text", facts.text(r), "```", ""]
    return "\n".join(out)
