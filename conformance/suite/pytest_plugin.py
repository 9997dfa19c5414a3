"""A pytest plugin: the conformance catalog as pytest items, one per scenario and version plan.

    pytest -p coordspec.conformance.suite.pytest_plugin --conform [--conform-target kafka --conform-bootstrap HOST:PORT]
           [--conform-scenarios DIR ...] [--conform-tags GM-5* ...] [--conform-versions latest]

A run that passes is a passed item, a failure fails its item with the step, the request,
the response and what the reference allowed, and a run the target cannot make (no fault
hooks, other broker settings) is skipped with the reason: reported as not run, never as
passed. Items run one after another, so timing scenarios add up here; ``coordspec
conform`` runs them concurrently.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from coordspec.conformance.suite import loader, reports, targets, versions
from coordspec.conformance.suite.results import RunResult, plan_label
from coordspec.conformance.suite.runner import run_one
from coordspec.conformance.suite.scenario import Scenario
from coordspec.conformance.suite.suite import planned, select
from coordspec.conformance.suite.target import Target
from coordspec.conformance.trace.format import TraceWriter


def pytest_addoption(parser: pytest.Parser) -> None:
    group = parser.getgroup("coordspec conformance")
    group.addoption(
        "--conform", action="store_true", help="collect the conformance catalog as test items"
    )
    group.addoption(
        "--conform-target",
        default="reference",
        choices=targets.TARGETS,
        help="target (default: reference)",
    )
    group.addoption(
        "--conform-bootstrap", default=None, metavar="HOST:PORT", help="the broker to check"
    )
    group.addoption(
        "--conform-scenarios",
        nargs="+",
        type=Path,
        default=[],
        metavar="PATH",
        help="scenario files or directories",
    )
    group.addoption(
        "--conform-tags",
        nargs="+",
        default=[],
        metavar="TAG",
        help="select scenarios by rule, tag or name",
    )
    group.addoption(
        "--conform-versions",
        default="all",
        metavar="SEL",
        help="all, latest, oldest or API=RANGE,...",
    )
    group.addoption("--conform-seed", type=int, default=0, help="seed for the reference target")


def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    if not config.getoption("--conform"):
        return
    try:
        target = targets.make(
            config.getoption("--conform-target"),
            config.getoption("--conform-bootstrap"),
            config.getoption("--conform-seed"),
        )
        catalog = select(
            loader.load_all(config.getoption("--conform-scenarios")),
            config.getoption("--conform-tags"),
        )
        mode, limits = versions.parse_selection(config.getoption("--conform-versions"))
    except (loader.ScenarioError, versions.VersionError, targets.UnknownTarget) as exc:
        raise pytest.UsageError(str(exc)) from None
    catalog_node = Catalog.from_parent(session, name="conformance")
    for scenario in catalog:
        plans = planned(scenario, target, mode, limits)
        for index, plan in enumerate(plans if not isinstance(plans, str) else [None]):
            items.append(
                ScenarioItem.from_parent(
                    catalog_node,
                    name=f"{scenario.name}[{plan_label(plan) if plan else 'no plan'}]",
                    scenario=scenario,
                    plan=plan,
                    target=target,
                    index=index,
                    reason=plans if isinstance(plans, str) else "",
                )
            )


class Catalog(pytest.Collector):
    """The parent of the scenario items (they are made up front, from the options)."""

    def collect(self):
        return []


class ScenarioFailed(Exception):
    """A run failed; its text is the report of the failure."""


class ScenarioItem(pytest.Item):
    def __init__(
        self,
        *,
        scenario: Scenario,
        plan: dict[str, int] | None,
        target: Target,
        index: int,
        reason: str,
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.scenario, self.plan, self.target, self.index, self.reason = (
            scenario,
            plan,
            target,
            index,
            reason,
        )
        for rule in scenario.rules:
            self.user_properties.append(("rule", rule))

    def runtest(self) -> None:
        if self.plan is None:
            pytest.skip(f"not run: {self.reason}")
        group_id = f"coordspec-pytest-{self.scenario.name}-{self.index}"
        result: RunResult = asyncio.run(
            run_one(
                self.scenario, self.plan, self.target, group_id, group_id, TraceWriter(None, "")
            )
        )
        if result.status == "not_run":
            pytest.skip(f"not run: {result.reason}")
        if result.status != "passed":
            raise ScenarioFailed(reports.failure_text(result))

    def repr_failure(self, excinfo, style=None):
        if isinstance(excinfo.value, ScenarioFailed):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style)

    def reportinfo(self):
        return (
            self.scenario.path,
            self.scenario.lines[0] - 1 if self.scenario.lines else 0,
            self.name,
        )
