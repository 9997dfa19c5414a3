"""The one-machine trace checker (conformance/tracecheck): a trace of a conformance run
passes, a broker with a bug planted is caught at the right line with the right rule, and
bad input is one line naming the file, the line and the field."""

from __future__ import annotations

import gzip
import io
import shutil
from pathlib import Path

import pytest

from coordspec.conformance.cli.trace import main
from coordspec.conformance.simulate.planted import PlantedTarget
from coordspec.conformance.suite import run
from coordspec.conformance.suite.loader import SCENARIO_DIR
from coordspec.conformance.tracecheck import summary
from coordspec.conformance.tracecheck.check import Progress, check_files
from coordspec.conformance.tracecheck.replay import Settings
from coordspec.conformance.tracecheck.scenarios import scenario_settings


def settings() -> Settings:
    return Settings(scenarios=scenario_settings())


@pytest.fixture(scope="module")
def catalog_trace(tmp_path_factory) -> Path:
    path = tmp_path_factory.mktemp("traces") / "catalog.jsonl"
    outcome = run("reference", trace=path, version_selection="latest", out=io.StringIO())
    assert outcome.exit_code == 0
    return path


def planted(tmp_path: Path, bug: str, scenario: str) -> Path:
    path = tmp_path / f"{bug}.jsonl"
    outcome = run(
        PlantedTarget(bug),
        scenarios=[SCENARIO_DIR / f"{scenario}.yaml"],
        trace=path,
        version_selection="latest",
        out=io.StringIO(),
    )
    assert outcome.exit_code == 1  # the runner's own oracle catches it too
    return path


def test_a_trace_of_the_whole_catalog_passes_with_coverage(catalog_trace):
    findings = check_files([catalog_trace], settings(), out=io.StringIO())
    assert findings.violations == [] and findings.exit_code == 0
    assert findings.totals.keys > 80 and findings.totals.unchecked == 0
    rules = findings.covered("rule")
    assert {"GM-3", "GM-10", "GM-14", "GM-22", "GM-30", "GM-50", "GM-62"} <= set(rules)
    assert set(findings.covered("state")) == {
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
        "Dead",  # the coordinator: ResignCoordinator scenarios unload their groups
    }
    assert "Empty -> PreparingRebalance (JoinGroup) GM-10" in findings.covered("transition")
    assert "Stable -> Dead (UnloadGroups) GM-43" in findings.covered("transition")
    assert "CompletingRebalance -> Stable (AppendCompleted) GM-22" in findings.covered("transition")


def test_scenario_broker_settings_are_applied(catalog_trace, tmp_path):
    """group-max-size runs with max_size 2: without the catalog's settings it is a violation."""
    findings = check_files([catalog_trace], Settings(), out=io.StringIO())
    assert {v["scenario"] for v in findings.violations} >= {"group-max-size"}


def test_a_broker_that_accepts_a_stale_commit_is_caught_with_its_rule(tmp_path):
    trace = planted(tmp_path, "stale-commit", "stale-generation-commit")
    findings = check_files([trace], settings(), out=io.StringIO())
    assert findings.exit_code == 1 and len(findings.violations) == 1
    v = findings.violations[0]
    assert (v["kind"], v["rule"], v["invariant"], v["api"]) == (
        "oracle",
        "GM-50",
        "NoStaleGenerationCommit",
        "OffsetCommit",
    )
    assert "expected ILLEGAL_GENERATION (22), got NONE (0)" in v["message"]
    assert any('"error_code": 22' in allowed for allowed in v["allowed"])
    lines = trace.read_text().splitlines()
    assert '"kind":"response"' in lines[v["line"] - 1] and '"OffsetCommit"' in lines[v["line"] - 1]
    request = next(c for c in v["context"] if "request c1 OffsetCommit" in c)
    assert '"generation_id":1' in request  # the stale commit itself is in the events shown
    text = summary.violation_text(v)
    assert (
        text.startswith("VIOLATION GM-50, invariant NoStaleGenerationCommit")
        and f"> {v['file']}:{v['line']}" in text
    )


@pytest.mark.parametrize(
    ("bug", "scenario", "rule"),
    [
        ("heartbeat-ignores-rebalance", "heartbeat-during-rebalance", "GM-30"),
        ("generation-not-bumped", "leader-leaves-mid-rebalance", "GM-17"),
    ],
)
def test_other_planted_bugs_are_caught_with_their_rule(tmp_path, bug, scenario, rule):
    findings = check_files([planted(tmp_path, bug, scenario)], settings(), out=io.StringIO())
    assert [v["rule"] for v in findings.violations] == [rule]


def test_command_line_exit_codes_reports_and_compressed_directories(
    tmp_path, catalog_trace, capsys
):
    stale = planted(tmp_path, "stale-commit", "stale-generation-commit")
    folder = tmp_path / "logs"
    folder.mkdir()
    with catalog_trace.open("rb") as src, gzip.open(folder / "catalog.jsonl.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    assert main(["check", str(folder), "--report", str(tmp_path / "report")]) == 0
    assert "no violations" in capsys.readouterr().out
    assert "no violations" in (tmp_path / "report" / "trace-check.md").read_text()
    assert main(["check", str(folder), str(stale)]) == 1
    out = capsys.readouterr().out
    assert out.count("VIOLATION GM-50") == 1 and "1 violation:" in out


BAD_LINES = [
    ('{"v":1,"kind":"request"}', "source: Field required"),
    ("not json", "Invalid JSON"),
    (
        '{"v":2,"kind":"time","source":"x","run":"r","group_id":"g","ts_ms":0,"t_ms":0,"advance_ms":1}',
        "v: Input should be 1",
    ),
    (
        '{"v":1,"kind":"time","source":"x","run":"r","group_id":"g","ts_ms":0,"t_ms":-1,"advance_ms":1}',
        "t_ms: Input should be greater",
    ),
]


@pytest.mark.parametrize(("text", "expected"), BAD_LINES)
def test_a_bad_line_is_one_line_with_file_line_and_field(
    tmp_path, catalog_trace, capsys, text, expected
):
    path = tmp_path / "bad.jsonl"
    head = catalog_trace.read_text().splitlines()[:3]
    path.write_text("\n".join([*head, text]) + "\n")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith(f"coordspec trace check: {path}:4: ") and expected in err and "\n" not in err
    )


@pytest.mark.parametrize(
    ("old", "new", "expected"),
    [
        (
            '"session_timeout_ms":30000',
            '"session_timeout_ms":"x"',
            "fields.session_timeout_ms: expected int, got 'x'",
        ),
        (
            '"session_timeout_ms":30000',
            '"sesion_timeout_ms":1',
            "fields.sesion_timeout_ms: not a field of JoinGroup",
        ),
        ('"api_version":', '"api_version":9', "is not a version the reference models"),
    ],
)
def test_a_bad_field_names_the_field(tmp_path, catalog_trace, capsys, old, new, expected):
    first = next(line for line in catalog_trace.read_text().splitlines() if old in line)
    path = tmp_path / "bad.jsonl"
    path.write_text(first.replace(old, new) + "\n")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert f"{path}:1: " in err and expected in err and "\n" not in err


def test_missing_files_and_empty_directories_are_one_line(tmp_path, capsys):
    assert main(["check", str(tmp_path / "nope.jsonl")]) == 2
    assert main(["check", str(tmp_path)]) == 2
    err = capsys.readouterr().err.splitlines()
    assert err == [
        f"coordspec trace check: {tmp_path / 'nope.jsonl'}: no such file or directory",
        f"coordspec trace check: {tmp_path}: no trace files (*.jsonl, *.jsonl.gz) in this directory",
    ]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_progress_bar_on_a_terminal_only(catalog_trace):
    terminal, pipe = _Terminal(), io.StringIO()
    check_files([catalog_trace], settings(), out=terminal)
    check_files([catalog_trace], settings(), out=pipe)
    assert "groups checked" in terminal.getvalue() and "bytes read" in terminal.getvalue()
    assert pipe.getvalue() == ""
    bar = Progress(terminal, "x", 4)
    bar.add(4)
    assert "[##############################] 4/4 x" in terminal.getvalue()


def test_an_unknown_setting_is_one_line(catalog_trace, capsys, tmp_path):
    assert main(["check", str(catalog_trace), "--broker-setting", "initial_delay=0"]) == 2
    err = capsys.readouterr().err
    assert (
        err.startswith(
            "coordspec trace check: --broker-setting initial_delay: not a group coordinator "
            "setting (settings: group.min.session.timeout.ms, "
        )
        and err.count("\n") == 1
    )
    properties = tmp_path / "server.properties"
    properties.write_text("broker.id=1\ngroup.max.size=0\n")  # broker.id: not the oracle's
    assert main(["check", str(catalog_trace), "--broker-settings-file", str(properties)]) == 2
    assert capsys.readouterr().err == (
        f"coordspec trace check: --broker-settings-file {properties}:2 group.max.size: "
        "expected an integer >= 1, got '0'\n"
    )


@pytest.mark.parametrize(
    ("scenario", "record", "refusal"),
    [
        ("commit-to-partitions-that-do-not-exist", '"kind":"topics"', "UNKNOWN_TOPIC_OR_PARTITION"),
        ("failed-write-of-a-simple-groups-first-commit", '"fault":"fail_next_write"', ""),
        ("not-coordinator-after-resigning", '"fault":"resign_coordinator"', "NOT_COORDINATOR"),
        ("commit-while-loading", '"fault":"become_coordinator"', "COORDINATOR_LOAD_IN_PROGRESS"),
    ],
)
def test_a_run_is_checked_against_what_its_trace_says_of_the_broker(
    catalog_trace, tmp_path, scenario, record, refusal
):
    """GM-56, GM-44: each run's trace names the broker's topics, and the writes its log
    refused; without those records, Kafka's answers to them are violations."""
    lines = [line for line in catalog_trace.read_text().splitlines() if scenario in line]
    assert any(record in line for line in lines)
    named = tmp_path / "named.jsonl"
    named.write_text("\n".join(lines) + "\n")
    assert check_files([named], settings(), out=io.StringIO()).violations == []
    unnamed = tmp_path / "unnamed.jsonl"
    unnamed.write_text("\n".join(x for x in lines if record not in x) + "\n")
    violations = check_files([unnamed], settings(), out=io.StringIO()).violations
    assert violations and refusal in str(violations[0])


def test_a_consumer_group_trace_is_checked_and_a_wrong_epoch_caught(tmp_path):
    """ConsumerGroupHeartbeat and ConsumerGroupDescribe round-trip through the trace, and the
    oracle replays them: an epoch the broker should not have answered is a violation."""
    path = tmp_path / "cg.jsonl"
    scenario = SCENARIO_DIR / "cg-revoke-before-reassign.yaml"
    assert run("reference", scenarios=[scenario], trace=path, out=io.StringIO()).exit_code == 0
    assert check_files([path], settings(), out=io.StringIO()).violations == []
    lines = path.read_text().splitlines()
    at = next(
        i
        for i, line in enumerate(lines)
        if '"kind":"response"' in line
        and '"member_epoch":2' in line
        and '"ConsumerGroupHeartbeat"' in line
    )
    lines[at] = lines[at].replace('"member_epoch":2', '"member_epoch":3', 1)
    path.write_text("\n".join(lines) + "\n")
    (violation,) = check_files([path], settings(), out=io.StringIO()).violations
    assert (violation["api"], violation["rule"]) == ("ConsumerGroupHeartbeat", "CG-9")
    assert "member_epoch: expected 2, got 3" in violation["message"]
