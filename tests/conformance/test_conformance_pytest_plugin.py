"""The pytest plugin runs the catalog as pytest items: passes, failures with their report,
and runs the target cannot make as skipped (not run)."""

from __future__ import annotations

import re
import time
from importlib.metadata import entry_points

import pytest

from coordspec.broker.testing import BrokerProcess
from coordspec.conformance.suite.loader import SCENARIO_DIR

pytest_plugins = ["pytester"]


def _installed() -> bool:
    """Whether an installed entry point already loads the plugin (then -p would load it twice)."""
    return any(
        e.value == "coordspec.conformance.suite.pytest_plugin"
        for e in entry_points(group="pytest11")
    )


PLUGIN = (
    ("-p", "no:cacheprovider")
    if _installed()
    else ("-p", "coordspec.conformance.suite.pytest_plugin", "-p", "no:cacheprovider")
)


def test_the_catalog_runs_as_pytest_items(pytester):
    result = pytester.runpytest(
        *PLUGIN, "-v", "--conform", "--conform-tags", "member-id-required", "GM-62"
    )
    result.stdout.fnmatch_lines(
        ["*/scenarios/member-id-required.yaml::member-id-required[[]JoinGroupv9[]] PASSED*"]
    )
    result.stdout.fnmatch_lines(
        [
            (
                "*/delete-empty-group.yaml::"
                "delete-empty-group[[]DeleteGroupsv2-OffsetCommitv9-OffsetFetchv9[]] PASSED*"
            )
        ]
    )
    assert result.parseoutcomes()["passed"] > 6
    assert set(result.parseoutcomes()) == {"passed"}


def test_a_failing_scenario_fails_its_item_with_the_step_and_rule(pytester):
    text = (
        (SCENARIO_DIR / "member-id-required.yaml")
        .read_text()
        .replace("generation_id: 1,", "generation_id: 5,")
    )
    pytester.makefile(".yaml", wrong=text)
    result = pytester.runpytest(
        *PLUGIN, "--conform", "--conform-scenarios", "wrong.yaml", "--conform-versions", "latest"
    )
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(
        [
            "*wrong.yaml:16: step 3 (expectation): expect.generation_id: expected 5, got 1*",
            "*rules: GM-3, GM-10, GM-15*",
        ]
    )


def test_a_scenario_the_target_cannot_run_is_skipped_not_passed(pytester):
    pytester.makefile(
        ".yaml",
        needs_a_range=(
            "# needs JoinGroup v0 and v9 at once\nchecks: an impossible selection of versions\nrules: [GM-3]\n"
            "versions: {JoinGroup: 9}\nclients: [c1]\nsteps:\n  - c1: JoinGroup\n"
        ),
    )
    result = pytester.runpytest(
        *PLUGIN,
        "--conform",
        "--conform-scenarios",
        "needs_a_range.yaml",
        "--conform-versions",
        "JoinGroup=0-3",
        "-rs",
    )
    result.assert_outcomes(skipped=1)
    result.stdout.fnmatch_lines(["*not run: no version in common*"])


def test_without_the_option_nothing_is_collected(pytester):
    result = pytester.runpytest(*PLUGIN)
    result.assert_outcomes()
    assert result.ret == 5  # no tests collected


def test_a_bad_scenario_file_is_a_usage_error_in_one_line(pytester):
    pytester.makefile(
        ".yaml",
        bad="checks: a scenario written to be wrong\nrules: [GM-3]\nclients: [c1]\nsteps:\n  - c1: Nope\n",
    )
    result = pytester.runpytest(*PLUGIN, "--conform", "--conform-scenarios", "bad.yaml")
    assert result.ret == 4  # usage error
    result.stderr.fnmatch_lines(["*bad.yaml:5: c1: 'Nope' is not an API*"])


def _printed_ids(result) -> list[str]:
    return [m.group(1) for line in result.outlines if (m := re.match(r"^(\S+::\S+) PASSED", line))]


@pytest.mark.parametrize("where", ["the bundled catalog", "a scenario file of the project"])
def test_a_printed_node_id_pasted_back_runs_that_item_alone(pytester, where):
    if where == "the bundled catalog":  # outside the rootdir: its id starts with ..
        selection = ["--conform-tags", "member-id-required"]
    else:
        pytester.makefile(".yaml", mine=(SCENARIO_DIR / "member-id-required.yaml").read_text())
        selection = ["--conform-scenarios", "mine.yaml"]
    listed = pytester.runpytest_subprocess(*PLUGIN, "-v", "--conform", *selection)
    ids = _printed_ids(listed)
    assert len(ids) == 6, listed.outlines  # JoinGroup v4 to v9
    chosen = ids[2]
    again = pytester.runpytest_subprocess(*PLUGIN, "-v", "--conform", chosen)
    again.assert_outcomes(passed=1)
    assert _printed_ids(again) == [chosen]


def test_k_selects_among_the_items_and_only_those_run(pytester):
    result = pytester.runpytest(
        *PLUGIN, "-v", "--conform", "--conform-tags", "member-id-required", "-k", "JoinGroupv9"
    )
    result.assert_outcomes(passed=1, deselected=5)


def test_against_a_broker_the_items_run_concurrently(pytester, tmp_path):
    # Each run waits out the broker's initial rebalance delay (3 s): one after another, the
    # six would take 18 s.
    with BrokerProcess(tmp_path / "data") as broker:
        started = time.monotonic()
        result = pytester.runpytest(
            *PLUGIN,
            "--conform",
            "--conform-target",
            "kafka",
            "--conform-bootstrap",
            broker.bootstrap,
            "--conform-tags",
            "member-id-required",
        )
        elapsed = time.monotonic() - started
    result.assert_outcomes(passed=6)
    assert elapsed < 12, elapsed
    # The session's groups are gone from the broker, as after conform.
    result.stdout.fnmatch_lines(["*coordspec conformance: deleted 6 groups*"])


def test_the_broker_settings_and_a_bad_one_as_conform_takes_them(pytester):
    """A declared setting reaches the oracle (a scenario needing it runs); a bad one is a
    usage error in one line."""
    result = pytester.runpytest(
        *PLUGIN,
        "--conform",
        "--conform-tags",
        "group-max-size",
        "--conform-versions",
        "latest",
        "--conform-broker-setting",
        "group.max.size=nonsense",
    )
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--broker-setting group.max.size: *"])
