"""What a trace check found, for people: console text, Markdown and HTML.

Both checkers hand over the same things: the violations (as dicts of
:class:`~coordspec.conformance.tracecheck.replay.Violation`'s fields), the coverage counts by
(kind, name), and the totals.
"""

from __future__ import annotations

import html
import re
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from coordspec.reference.group.transitions import TRANSITIONS as _TRANSITIONS
from coordspec.reference.group.transitions import GroupState

SPEC = Path(__file__).resolve().parents[2] / "spec" / "group-membership.md"
REPLICATION_SPEC = SPEC.with_name("isr-versioned-writes.md")
CONSUMER_GROUP_SPEC = SPEC.with_name("consumer-group.md")
TRANSITIONS = [f"{t.source} -> {t.target} ({t.cause}) {t.rule}" for t in _TRANSITIONS]
STATES = [str(s) for s in GroupState]


def spec_rules(spec: Path = SPEC, prefix: str = "GM") -> list[str]:
    if not spec.is_file():
        return []
    return re.findall(rf"\*\*({prefix}-\d+):", spec.read_text(encoding="utf-8"))


@dataclass
class Totals:
    files: int = 0
    keys: int = 0
    events: int = 0
    unchecked: int = (
        0  # events after a key's first violation, or under no group (ListGroups of a broker)
    )
    wall_s: float = 0.0
    how: str = ""  # "one machine", "Spark local[2]" ...


@dataclass
class Findings:
    violations: list[dict] = field(default_factory=list)
    coverage: Counter = field(default_factory=Counter)
    totals: Totals = field(default_factory=Totals)

    @property
    def exit_code(self) -> int:
        return 1 if self.violations else 0

    def sorted_violations(self) -> list[dict]:
        return sorted(self.violations, key=lambda v: (v["file"], v["line"]))

    def covered(self, kind: str) -> dict[str, int]:
        return {name: n for (k, name), n in sorted(self.coverage.items()) if k == kind}


def headline(f: Findings) -> str:
    t = f.totals
    timing = sum(1 for v in f.violations if v["kind"] == "timing")
    verdict = (
        f"{len(f.violations)} violation{'s' * (len(f.violations) != 1)}"
        + (f" ({timing} timing)" if timing else "")
        if f.violations
        else "no violations"
    )
    return (
        f"{verdict}: {t.events} events in {t.keys} keys (groups, partitions) from {t.files} file{'s' * (t.files != 1)} "
        f"checked in {t.wall_s:.2f} s ({t.how}); {t.unchecked} events unchecked"
    )


def _coverage_lines(f: Findings) -> list[str]:
    rules, states, transitions = f.covered("rule"), f.covered("state"), f.covered("transition")
    defined = spec_rules() or sorted(r for r in rules if r.startswith("GM-"))
    missing = [r for r in defined if r not in rules]
    return [
        f"spec rules exercised: {len([r for r in defined if r in rules])} of {len(defined)}"
        + (f" (not exercised: {', '.join(missing)})" if missing else ""),
        f"group states visited: {len(states)} of {len(STATES)} ({', '.join(states) or 'none'})",
        f"transitions taken: {len([t for t in TRANSITIONS if t in transitions])} of {len(TRANSITIONS)}",
        f"API versions seen: {', '.join(f.covered('api')) or 'none'}",
        *_family_line("consumer group", rules, CONSUMER_GROUP_SPEC, "CG"),
        *_family_line("replication", rules, REPLICATION_SPEC, "ISR"),
    ]


def _family_line(label: str, rules: list[str], spec: Path, prefix: str) -> list[str]:
    """How many of another page's rules the trace exercised, once it exercised one."""
    seen = [r for r in rules if r.startswith(f"{prefix}-")]
    if not seen:
        return []
    defined = spec_rules(spec, prefix) or sorted(seen)
    missing = [r for r in defined if r not in rules]
    return [
        f"{label} rules exercised: {len(defined) - len(missing)} of {len(defined)}"
        + (f" (not exercised: {', '.join(missing)})" if missing else "")
    ]


def violation_text(v: dict) -> str:
    invariant = f", invariant {v['invariant']}" if v["invariant"] else ""
    if v.get("partition"):
        whose, what = f"partition {v['partition']}", f" {v['api']} by {v['client']}"
    else:
        whose, what = (
            f"group {v['group_id']}",
            f" {v['api']} v{v['api_version']} from {v['client']}" if v["api"] else "",
        )
    lines = [
        (
            f"VIOLATION {v['rule'] or v['kind']}{invariant}: {whose} (run {v['run']}) at "
            f"{v['file']}:{v['line']} t={v['t_ms']} ms{what}"
        ),
        f"  {v['message']}",
    ]
    if v["allowed"]:
        lines.append("  the reference allows:")
        lines.extend(f"    {a}" for a in v["allowed"])
    if v["broker_response"]:
        lines.append(f"  the broker answered: {v['broker_response']}")
    lines.append("  events around it:")
    here = f"{v['file']}:{v['line']} "
    lines.extend(f"  {'>' if c.startswith(here) else ' '} {c}" for c in v["context"])
    return "\n".join(lines)


def console(f: Findings) -> str:
    parts = [violation_text(v) for v in f.sorted_violations()]
    parts.append("\n".join(_coverage_lines(f)))
    parts.append(headline(f))
    return "\n".join(parts)


def markdown(f: Findings) -> str:
    out = ["# Trace check", "", headline(f), ""]
    out += ["## Violations", ""]
    if not f.violations:
        out.append("None.")
    for v in f.sorted_violations():
        out += ["```", violation_text(v), "```", ""]
    out += ["", "## Coverage", ""] + [f"- {line}" for line in _coverage_lines(f)]
    for kind, title in (
        ("rule", "Spec rules"),
        ("state", "Group states"),
        ("transition", "Transitions"),
    ):
        out += ["", f"### {title}", "", "| item | count |", "|---|---:|"]
        out += [f"| {name} | {n} |" for name, n in f.covered(kind).items()]
    return "\n".join(out) + "\n"


def html_page(f: Findings) -> str:
    e = html.escape
    parts = [
        "<!doctype html><meta charset='utf-8'><title>Trace check</title>",
        (
            "<style>body{font-family:sans-serif;max-width:70em;margin:auto}pre{background:#f6f6f6;padding:.5em;"
            "overflow-x:auto}.bad{color:#b00}td{padding:0 .6em}</style>"
        ),
        "<h1>Trace check</h1>",
        f"<p class='{'bad' if f.violations else ''}'>{e(headline(f))}</p>",
        "<h2>Violations</h2>",
    ]
    parts += [f"<pre>{e(violation_text(v))}</pre>" for v in f.sorted_violations()] or [
        "<p>None.</p>"
    ]
    parts += (
        ["<h2>Coverage</h2><ul>"]
        + [f"<li>{e(line)}</li>" for line in _coverage_lines(f)]
        + ["</ul>"]
    )
    for kind, title in (
        ("rule", "Spec rules"),
        ("state", "Group states"),
        ("transition", "Transitions"),
    ):
        rows = "".join(
            f"<tr><td>{e(name)}</td><td>{n}</td></tr>" for name, n in f.covered(kind).items()
        )
        parts.append(f"<h3>{title}</h3><table>{rows}</table>")
    return "\n".join(parts) + "\n"


def write(f: Findings, directory: Path) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    md, page = directory / "trace-check.md", directory / "trace-check.html"
    md.write_text(markdown(f), encoding="utf-8")
    page.write_text(html_page(f), encoding="utf-8")
    return [md, page]
