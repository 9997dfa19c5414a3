"""``--list``: the catalog at a glance (each scenario's tags, the broker settings it needs by
Kafka's names, the fault hooks it needs), and what it does not cover yet (for scenario authors)."""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

from coordspec.conformance.suite import broker_settings
from coordspec.conformance.suite.scenario import CoordinatorEvent, Fault, Scenario
from coordspec.conformance.suite.versions import label, plans
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.requests import VERSIONS

SPEC_PAGES = [
    Path(__file__).resolve().parents[2] / "spec" / name
    for name in ("group-membership.md", "coordinator-failover.md", "consumer-group.md")
]


def listing(scenarios: list[Scenario]) -> str:
    lines = []
    for s in scenarios:
        ranges = ", ".join(label(api, r) for api, r in sorted(s.versions.items()))
        lines.append(f"{s.name}: {' '.join(s.rules)}; {len(plans(s.versions))} runs ({ranges})")
        lines.append(f"    {s.checks}")
        needs = [
            f"tags: {', '.join(s.tags) or '-'}",
            f"broker settings: {', '.join(broker_settings.named(dataclasses.replace(GroupConfig(), **s.broker), s.broker)) or '-'}",
            f"fault hooks: {', '.join(sorted({f.fault for f in s.steps if isinstance(f, (Fault, CoordinatorEvent))})) or '-'}",
        ]
        lines.append(f"    {'; '.join(needs)}")
    runs = sum(len(plans(s.versions)) for s in scenarios)
    lines.append(f"{len(scenarios)} scenarios, {runs} runs")
    covered = {(api, v) for s in scenarios for api, r in s.versions.items() for v in r}
    missing = [f"{api} v{v}" for api, r in VERSIONS.items() for v in r if (api, v) not in covered]
    lines.append("API versions no scenario applies to: " + (", ".join(missing) or "none"))
    pages = [page for page in SPEC_PAGES if page.is_file()]
    if pages:
        defined = [
            rule
            for page in pages
            for rule in re.findall(r"\*\*((?:GM|CF|CG)-\d+):", page.read_text(encoding="utf-8"))
        ]
        named = {rule for s in scenarios for rule in s.rules}
        lines.append(
            "spec rules no scenario names: "
            + (", ".join(r for r in defined if r not in named) or "none")
        )
    return "\n".join(lines)
