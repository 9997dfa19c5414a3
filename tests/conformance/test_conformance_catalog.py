"""The scenario catalog passes on the reference target, and is well formed."""

from __future__ import annotations

import io
import re
from pathlib import Path

from coordspec.conformance.suite import run
from coordspec.conformance.suite.loader import SCENARIO_DIR, discover, load_all

SPEC_PAGES = [
    Path(__file__).resolve().parents[2] / "spec" / name
    for name in ("group-membership.md", "coordinator-failover.md", "consumer-group.md")
]


def test_the_whole_catalog_passes_on_the_reference():
    outcome = run("reference", out=io.StringIO())
    bad = [f"{r.label}: {r.reason}" for r in outcome.results if r.status != "passed"]
    assert bad == []
    assert outcome.exit_code == 0
    assert len({r.scenario for r in outcome.results}) >= 40


def test_every_scenario_opens_with_a_comment_saying_what_it_checks():
    for path in discover():
        first = path.read_text(encoding="utf-8").splitlines()[0]
        assert re.match(r"^# \S.{10,}", first), (
            f"{path.name}: first line should be '# what it checks'"
        )


def test_every_rule_a_scenario_names_is_in_the_spec():
    defined = {
        rule
        for page in SPEC_PAGES
        for rule in re.findall(r"\*\*((?:GM|CF|CG)-\d+):", page.read_text(encoding="utf-8"))
    }
    for scenario in load_all():
        for rule in scenario.rules:
            assert rule in defined, f"{scenario.name} names {rule}, which neither spec page defines"


def test_the_catalog_covers_every_api_the_reference_answers():
    used = set()
    for scenario in load_all():
        used.update(scenario.versions)
    assert used == {
        "JoinGroup",
        "SyncGroup",
        "Heartbeat",
        "LeaveGroup",
        "OffsetCommit",
        "OffsetFetch",
        "DescribeGroups",
        "ListGroups",
        "DeleteGroups",
        "OffsetDelete",
        "TxnOffsetCommit",
        "ConsumerGroupHeartbeat",
        "ConsumerGroupDescribe",
    }


def test_scenarios_live_in_the_catalog_directory():
    assert SCENARIO_DIR.name == "scenarios"
    assert (SCENARIO_DIR / "README.md").is_file()


def test_list_shows_each_scenario_and_what_is_not_covered(capsys):
    import argparse

    from coordspec.conformance.cli.conform import add_arguments, run_command

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    assert run_command(parser.parse_args(["--list", "--tags", "member-id-required"])) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "member-id-required: GM-3 GM-10 GM-15; 6 runs (JoinGroup v4-9)"
    assert out[2] == "    tags: -; broker settings: -; fault hooks: -"
    assert out[3] == "1 scenarios, 6 runs"
    assert out[4].startswith("API versions no scenario applies to: JoinGroup v0, JoinGroup v1")
    assert out[5].startswith("spec rules no scenario names: GM-1, GM-2, GM-4")
    assert (
        run_command(
            parser.parse_args(["--list", "--tags", "offsets-expire", "failover-before-first-sync"])
        )
        == 0
    )
    out = capsys.readouterr().out.splitlines()
    assert out[2] == (
        "    tags: fault, failover; broker settings: -; fault hooks: kill_coordinator"
    )
    assert out[5] == (
        "    tags: timing; broker settings: offsets.retention.minutes=1, "
        "offsets.retention.check.interval.ms=10000; fault hooks: -"
    )


def test_a_rerun_keeps_the_declared_broker_settings():
    """Without them, the rerun's oracle would model another broker."""
    import argparse
    import shlex

    from coordspec.conformance.cli.conform import add_arguments, rerun_base

    parser = argparse.ArgumentParser()
    add_arguments(parser)
    declared = [
        "--broker-setting",
        "group.max.size=1",
        "--broker-settings-file",
        "server.properties",
    ]
    args = parser.parse_args(["--target", "kafka", "--bootstrap", "h:9092", *declared])
    words = shlex.split(rerun_base(args))
    assert words[words.index("--broker-setting") + 1] == "group.max.size=1"
    assert words[words.index("--broker-settings-file") + 1] == "server.properties"


def test_every_scenario_the_spec_names_exists():
    names = {path.stem for path in discover()}
    cited = set()
    for page in SPEC_PAGES:
        for listed in re.findall(
            r"[Ss]cenarios:? ((?:`[\w-]+`[,\s]*(?:and\s+)?)+)", page.read_text()
        ):
            cited |= set(re.findall(r"`([\w-]+)`", listed))
    assert {n for n in cited if n.startswith("cg-")}, "spec/consumer-group.md names no scenario"
    assert cited <= names, sorted(cited - names)
