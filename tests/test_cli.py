"""The coordspec command line, run as a user runs it."""

from __future__ import annotations

import html
import subprocess
import sys


def coordspec(*args: str, cwd=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "coordspec.conformance.cli", *args],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=cwd,
    )


def test_help_lists_the_commands():
    result = coordspec("--help")
    assert result.returncode == 0
    assert "demo" in result.stdout and "diagram" in result.stdout


def test_no_command_prints_usage_and_fails():
    result = coordspec()
    assert result.returncode == 2
    assert "usage: coordspec" in result.stdout


def test_unknown_command_is_one_clear_error():
    result = coordspec("conform-everything")
    assert result.returncode == 2
    assert "invalid choice: 'conform-everything'" in result.stderr
    assert "Traceback" not in result.stderr


def test_demo_replays_a_group_and_reports_the_invariants():
    result = coordspec("demo")
    assert result.returncode == 0, result.stderr
    last = result.stdout.strip().splitlines()[-1]
    assert "zombie commit answered UNKNOWN_MEMBER_ID" in last
    assert "reloaded group at generation 2" in last
    assert "invariants held: GenerationMonotonic, NoStaleGenerationCommit" in last
    assert "MEMBER_ID_REQUIRED" in result.stdout and "REBALANCE_IN_PROGRESS" in result.stdout


def test_demo_quiet_prints_only_the_summary():
    result = coordspec("demo", "--quiet", "--seed", "7")
    assert result.returncode == 0
    assert len(result.stdout.strip().splitlines()) == 1


def test_diagram_renders_every_transition(tmp_path):
    """Graphviz is installed by ./dev; without it the command fails with one line, and so does this test."""
    result = coordspec("diagram", "--out", str(tmp_path))
    assert result.returncode == 0, result.stderr
    svg = html.unescape((tmp_path / "group-states.svg").read_text())
    assert svg.lstrip().startswith("<?xml") and "<svg" in svg
    for label in ("CompleteJoin (GM-14)", "ExpirePendingSync (GM-34)", "UnloadGroups (GM-43)"):
        assert label in svg
    assert "| SyncGroup |" in (tmp_path / "group-states-outcomes.md").read_text()


def test_broker_command_is_the_brokers_own_command_line(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    result = coordspec("broker", "--port", "0", "--data", str(blocker))
    assert result.returncode == 1
    assert result.stderr.count("\n") == 1 and str(blocker) in result.stderr
    assert coordspec("broker", "--help").stdout.startswith("usage: coordspec broker")


def test_trace_check_command_validates_a_conformance_runs_trace(tmp_path):
    trace = tmp_path / "run" / "trace.jsonl"
    assert (
        coordspec(
            "conform", "--tags", "GM-50", "--versions", "latest", "--trace", str(trace)
        ).returncode
        == 0
    )
    result = coordspec("trace", "check", str(trace))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "no violations" in result.stdout
    trace.write_text(trace.read_text() + "{not json\n")
    bad = coordspec("trace", "check", str(trace))
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and f"{trace}:" in bad.stderr


def test_conform_against_a_broker_leaves_the_working_directory_empty(tmp_path):
    # Hypothesis is installed here (the test extra): kio would build its strategies with it,
    # and Hypothesis would write its Unicode tables into ./.hypothesis/.
    import importlib.util

    from coordspec.broker.testing import BrokerProcess

    assert importlib.util.find_spec("hypothesis") is not None
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with BrokerProcess(tmp_path / "data") as broker:
        result = coordspec(
            "conform",
            "--bootstrap",
            broker.bootstrap,
            "--target",
            "kafka",
            "--tags",
            "member-id-required",
            "--versions",
            "latest",
            cwd=elsewhere,
        )
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr
    assert list(elsewhere.iterdir()) == []
