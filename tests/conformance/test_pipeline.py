"""The PySpark pipeline (conformance/tracecheck/pipeline.py) on Spark local[2], one session
for the module: it finds what the one-machine checker finds, on the same traces."""

from __future__ import annotations

import gzip
import io
import shutil
import time
from pathlib import Path

import pandas as pd
import pytest

from coordspec.conformance.cli.trace import main
from coordspec.conformance.simulate import groups
from coordspec.conformance.simulate.planted import PlantedTarget
from coordspec.conformance.suite import run
from coordspec.conformance.suite.loader import SCENARIO_DIR
from coordspec.conformance.tracecheck import pipeline
from coordspec.conformance.tracecheck.check import check_files
from coordspec.conformance.tracecheck.replay import Settings
from coordspec.conformance.tracecheck.scenarios import scenario_settings

SETTINGS = Settings(scenarios=scenario_settings())
SAME = (
    "file",
    "line",
    "kind",
    "rule",
    "invariant",
    "api",
    "message",
    "group_id",
    "run",
    "context",
    "allowed",
)


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    started = time.perf_counter()
    session = pipeline.session("local[2]", tmp_path_factory.mktemp("spark"), io.StringIO())
    print(f"Spark started in {time.perf_counter() - started:.1f} s")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def traces(tmp_path_factory) -> Path:
    """A mixed set: a clean catalog run, gzipped, and three brokers with a bug each."""
    folder = tmp_path_factory.mktemp("mixed")
    clean = folder / "catalog.jsonl"
    run(
        "reference",
        trace=clean,
        tags=["GM-1*", "GM-3*", "GM-5*"],
        version_selection="latest",
        out=io.StringIO(),
    )
    with clean.open("rb") as src, gzip.open(folder / "catalog.jsonl.gz", "wb") as dst:
        shutil.copyfileobj(src, dst)
    clean.unlink()
    for bug, scenario in (
        ("stale-commit", "stale-generation-commit"),
        ("heartbeat-ignores-rebalance", "heartbeat-during-rebalance"),
        ("generation-not-bumped", "leader-leaves-mid-rebalance"),
    ):
        run(
            PlantedTarget(bug),
            scenarios=[SCENARIO_DIR / f"{scenario}.yaml"],
            trace=folder / f"{bug}.jsonl",
            version_selection="latest",
            out=io.StringIO(),
        )
    return folder


def key(v: dict) -> tuple:
    return tuple(str(v[name]) for name in SAME)


def test_a_planted_bug_is_the_same_violation_on_spark_and_on_one_machine(spark, traces, tmp_path):
    stale = traces / "stale-commit.jsonl"
    local = check_files([stale], SETTINGS, out=io.StringIO())
    spark_findings = pipeline.run_pipeline(
        [str(stale)], tmp_path / "out", settings=SETTINGS, spark=spark, out=io.StringIO()
    )
    assert [key(v) for v in spark_findings.violations] == [key(v) for v in local.violations]
    assert [(v["rule"], v["invariant"]) for v in spark_findings.violations] == [
        ("GM-50", "NoStaleGenerationCommit")
    ]
    assert spark_findings.exit_code == 1


def test_pipeline_and_one_machine_agree_on_a_mixed_trace_set(spark, traces, tmp_path):
    local = check_files([traces], SETTINGS, out=io.StringIO())
    findings = pipeline.run_pipeline(
        [str(traces)], tmp_path / "out", settings=SETTINGS, spark=spark, out=io.StringIO()
    )
    assert sorted(map(key, findings.violations)) == sorted(map(key, local.violations))
    assert {v["rule"] for v in findings.violations} == {"GM-50", "GM-30", "GM-17"}
    assert findings.coverage == local.coverage
    for total in ("files", "keys", "events", "unchecked"):
        assert getattr(findings.totals, total) == getattr(local.totals, total), total
    violations = pd.read_parquet(tmp_path / "out" / "violations")
    coverage = pd.read_parquet(tmp_path / "out" / "coverage")
    assert len(violations) == len(local.violations) and set(violations["rule"]) == {
        "GM-50",
        "GM-30",
        "GM-17",
    }
    assert dict(
        zip(zip(coverage["kind"], coverage["name"], strict=True), coverage["count"], strict=True)
    ) == dict(local.coverage)
    report = (tmp_path / "out" / "trace-check.md").read_text()
    assert (
        report.startswith("# Trace check")
        and "Spark local[2]" in report
        and "VIOLATION GM-50" in report
    )
    assert (tmp_path / "out" / "trace-check.html").is_file()


def test_a_bad_line_on_an_executor_is_one_line(spark, traces, tmp_path):
    bad = tmp_path / "bad.jsonl"
    good = (traces / "stale-commit.jsonl").read_text().splitlines()
    bad.write_text("\n".join([*good[:5], good[5].replace('"t_ms":', '"t_ms":"soon","x":')]) + "\n")
    with pytest.raises(pipeline.PipelineError) as caught:
        pipeline.run_pipeline(
            [str(bad)], tmp_path / "out", settings=SETTINGS, spark=spark, out=io.StringIO()
        )
    assert str(caught.value).startswith(f"{bad}:6: t_ms: Input should be a valid integer")
    assert "\n" not in str(caught.value)


def test_missing_input_and_missing_java_are_one_line(tmp_path, monkeypatch, capsys):
    assert (
        main(["pipeline", "--input", str(tmp_path / "none"), "--output", str(tmp_path / "out")])
        == 2
    )
    assert (
        capsys.readouterr().err
        == f"coordspec pipeline: {tmp_path / 'none'}: no such file or directory\n"
    )
    monkeypatch.setenv("JAVA_HOME", str(tmp_path / "no-jdk"))
    with pytest.raises(pipeline.PipelineError, match=r"^no Java found"):
        pipeline._java()
    monkeypatch.delenv("JAVA_HOME")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(pipeline.PipelineError, match=r"^no Java found"):
        pipeline._java()


def test_simulated_runs_fan_out_over_executors_with_the_same_results(spark, tmp_path):
    options = groups.Options(bug="stale-commit")
    on_spark, _ = groups.simulate(12, 3, options, tmp_path / "spark", spark)
    here, _ = groups.simulate(12, 3, options, tmp_path / "here")
    assert [(r.seed, r.events, [v["rule"] for v in r.violations]) for r in on_spark] == [
        (r.seed, r.events, [v["rule"] for v in r.violations]) for r in here
    ]
    assert len(list((tmp_path / "spark").glob("sim-*.jsonl"))) > 1  # one file per partition


def test_any_number_of_partitions_finds_what_one_machine_finds(spark, traces, tmp_path):
    local = check_files([traces], SETTINGS, out=io.StringIO())
    for partitions in (1, 5):
        findings = pipeline.run_pipeline(
            [str(traces)],
            tmp_path / f"out-{partitions}",
            settings=SETTINGS,
            spark=spark,
            partitions=partitions,
            out=io.StringIO(),
        )
        assert sorted(map(key, findings.violations)) == sorted(map(key, local.violations)), (
            partitions
        )
        assert findings.coverage == local.coverage, partitions
        assert (findings.totals.keys, findings.totals.events) == (
            local.totals.keys,
            local.totals.events,
        ), partitions


def test_partitions_hold_a_bounded_share_of_the_input_in_whole_waves(tmp_path, monkeypatch):
    monkeypatch.setattr(pipeline, "PARTITION_BYTES", 1000)
    small, big, packed = (
        tmp_path / "small.jsonl",
        tmp_path / "big.jsonl",
        tmp_path / "packed.jsonl.gz",
    )
    small.write_text("x" * 10)
    big.write_text("x" * 9_500)
    packed.write_bytes(b"x" * 500)  # read as about ten times that
    assert pipeline.partitions_for([small], 2) == 4  # two per core at least
    assert pipeline.partitions_for([small, big], 2) == 10  # 9,510 bytes: 10 partitions, 5 per core
    assert pipeline.partitions_for([small, big], 4) == 12  # 10 rounded up to whole waves of 4
    assert (
        pipeline.partitions_for([small, big, packed], 2) == 16
    )  # 14,510 bytes: 15, rounded up to 16
