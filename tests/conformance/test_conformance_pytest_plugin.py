"""The pytest plugin runs the catalog as pytest items: passes, failures with their report,
and runs the target cannot make as skipped (not run)."""

from __future__ import annotations

from importlib.metadata import entry_points

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
    result.stdout.fnmatch_lines(["*conformance::member-id-required?JoinGroupv9? PASSED*"])
    result.stdout.fnmatch_lines(
        ["*conformance::delete-empty-group?DeleteGroupsv2 OffsetCommitv9 OffsetFetchv9? PASSED*"]
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
