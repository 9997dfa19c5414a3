"""A pytest plugin: the conformance catalog as pytest items, one per scenario and version plan.

    pytest --conform [--conform-target kafka --conform-bootstrap HOST:PORT]
           [--conform-scenarios DIR ...] [--conform-tags GM-5* ...] [--conform-versions latest]

Each item's node id is its scenario file and run, ``PATH.yaml::NAME[PLAN]`` (the path from
pytest's rootdir, with ``..`` for the installed catalog). Pasted back after ``--conform`` it
selects that run alone, as a test id does; ``-k`` selects by name, rule or API version.

A run that passes is a passed item, a failure fails its item with the step, the request,
the response and what the reference allowed, and a run the target cannot make (no fault
hooks, other broker settings) is skipped with the reason: reported as not run, never as
passed. The selected runs are made together, concurrently as ``coordspec conform`` makes them
(``--conform-concurrency``), when the first item runs; each item then reports its own result.
So ``-x`` stops the report at the first failure, but the runs after it were already made.
"""

from __future__ import annotations

import argparse
import hashlib
import os
from pathlib import Path

import pytest

from coordspec.conformance.extras import missing_extra
from coordspec.conformance.suite import broker_settings, loader, reports, targets, versions
from coordspec.conformance.suite.results import RunResult, plan_label
from coordspec.conformance.suite.scenario import Scenario
from coordspec.conformance.suite.suite import planned, run_jobs, select
from coordspec.conformance.suite.target import Target
from coordspec.reference.properties import SettingsError


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
    group.addoption(
        "--conform-broker-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="the broker's group setting by Kafka's name, as conform's --broker-setting",
    )
    group.addoption(
        "--conform-broker-settings-file",
        type=Path,
        default=None,
        metavar="FILE",
        help="the broker's settings as a properties file, as conform's --broker-settings-file",
    )
    group.addoption(
        "--conform-command-config",
        type=Path,
        default=None,
        metavar="FILE",
        help="TLS and SASL settings, as conform's --command-config",
    )
    group.addoption(
        "--conform-command-property",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="one TLS or SASL setting, as conform's --command-property",
    )
    group.addoption(
        "--conform-concurrency", type=int, default=64, help="runs at a time (default 64)"
    )


class Conformance:
    """The session's target, version selection and catalog, and the results once made."""

    def __init__(self, config: pytest.Config) -> None:
        option = config.getoption
        self.mode, self.limits = versions.parse_selection(option("--conform-versions"))
        self.catalog = select(
            loader.load_all(option("--conform-scenarios")), option("--conform-tags")
        )
        declared = argparse.Namespace(
            broker_setting=option("--conform-broker-setting"),
            broker_settings_file=option("--conform-broker-settings-file"),
        )
        config, security = broker_settings.config_of(declared), None
        if option("--conform-command-config") or option("--conform-command-property"):
            # Imported here: it loads kio, which must not come before Hypothesis's plugin.
            from coordspec.conformance.security import SecurityError, load

            try:
                security = load(
                    option("--conform-command-config"), option("--conform-command-property")
                )
            except SecurityError as exc:
                raise pytest.UsageError(str(exc)) from None
        self.target: Target = targets.make(
            option("--conform-target"),
            option("--conform-bootstrap"),
            option("--conform-seed"),
            config=config,
            security=security,
        )
        self.concurrency: int = option("--conform-concurrency")
        # Real brokers keep groups from earlier sessions: each session's groups are its own.
        self.token = hashlib.blake2b(os.urandom(8), digest_size=4).hexdigest()
        self.results: dict[str, RunResult] | None = None

    def run(self, items: list[pytest.Item]) -> dict[str, RunResult]:
        if self.results is None:
            chosen = [i for i in items if isinstance(i, ScenarioItem) and i.plan is not None]
            jobs = [(i.scenario, i.plan, i.group_id) for i in chosen]
            self.results = run_jobs(jobs, self.target, self.concurrency)
        return self.results


CONFORMANCE = pytest.StashKey[Conformance]()


def pytest_sessionstart(session: pytest.Session) -> None:
    if not session.config.getoption("--conform"):
        return
    try:
        session.config.stash[CONFORMANCE] = Conformance(session.config)
    except (
        loader.ScenarioError,
        versions.VersionError,
        targets.UnknownTarget,
        SettingsError,
    ) as exc:
        raise pytest.UsageError(str(exc)) from None
    except ModuleNotFoundError as exc:
        if (line := missing_extra(exc)) is None:
            raise
        raise pytest.UsageError(line) from None


def pytest_sessionfinish(session: pytest.Session) -> None:
    conformance = session.config.stash.get(CONFORMANCE, None)
    if conformance is not None:
        # On a broker the session does not own, its groups go, as after conform.
        reporter = session.config.pluginmanager.get_plugin("terminalreporter")
        for line in getattr(conformance.target, "clean_up", lambda _: [])(False):
            if reporter is not None:
                reporter.write_line(f"coordspec conformance: {line}")
        getattr(conformance.target, "stop", lambda: None)()


def pytest_collect_file(file_path: Path, parent: pytest.Collector) -> ScenarioFile | None:
    """A scenario file named on the command line, as a pasted node id names it."""
    if (
        CONFORMANCE in parent.config.stash
        and file_path.suffix == ".yaml"
        and parent.session.isinitpath(file_path)
    ):
        return ScenarioFile.from_parent(parent, path=file_path)
    return None


@pytest.hookimpl(tryfirst=True)  # before -k and --deselect, which then see these items too
def pytest_collection_modifyitems(
    session: pytest.Session, config: pytest.Config, items: list[pytest.Item]
) -> None:
    conformance = config.stash.get(CONFORMANCE, None)
    if conformance is None or any(isinstance(item, ScenarioItem) for item in items):
        return  # no --conform, or scenario files named on the command line
    for scenario in conformance.catalog:
        items.extend(
            ScenarioFile.from_parent(session, path=scenario.path, scenario=scenario).collect()
        )


class ScenarioFile(pytest.File):
    """A scenario file: its runs, one item per version plan."""

    def __init__(self, *, scenario: Scenario | None = None, **kwargs) -> None:
        # The path from the rootdir, with .. outside it (the installed catalog), so that the
        # printed node id pastes back from there.
        path = kwargs["path"]
        rootpath = (kwargs.get("parent") or kwargs["session"]).config.rootpath
        super().__init__(nodeid=Path(os.path.relpath(path, rootpath)).as_posix(), **kwargs)
        self.scenario = scenario

    def collect(self):
        conformance = self.config.stash[CONFORMANCE]
        try:
            scenario = self.scenario or loader.load(self.path)
        except loader.ScenarioError as exc:
            raise self.CollectError(str(exc)) from None
        plans = planned(scenario, conformance.target, conformance.mode, conformance.limits)
        if isinstance(plans, str):
            yield ScenarioItem.from_parent(
                self, name=f"{scenario.name}[no-plan]", scenario=scenario, plan=None, reason=plans
            )
            return
        for index, plan in enumerate(plans):
            yield ScenarioItem.from_parent(
                self,
                name=f"{scenario.name}[{plan_label(plan).replace(' ', '-')}]",
                scenario=scenario,
                plan=plan,
                reason="",
                group_id=f"coordspec-pytest-{conformance.token}-{scenario.name}-{index}",
            )


class ScenarioFailed(Exception):
    """A run failed; its text is the report of the failure."""


class ScenarioItem(pytest.Item):
    def __init__(
        self,
        *,
        scenario: Scenario,
        plan: dict[str, int] | None,
        reason: str,
        group_id: str = "",
        **kwargs,
    ) -> None:
        super().__init__(**kwargs)
        self.scenario, self.plan, self.reason, self.group_id = scenario, plan, reason, group_id
        for rule in scenario.rules:
            self.user_properties.append(("rule", rule))

    def runtest(self) -> None:
        if self.plan is None:
            pytest.skip(f"not run: {self.reason}")
        result = self.config.stash[CONFORMANCE].run(self.session.items)[self.group_id]
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
