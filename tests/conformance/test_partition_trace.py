"""Partition records (spec/trace-format.md, kind ``partition``) and their check
(conformance/tracecheck/partitions.py): each partition's events replay with the replication
invariants of reference/replication/invariants.py; a broken one is reported with its ISR rule
and invariant, at the record, by the one-machine checker and by the Spark pipeline alike."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from coordspec.conformance.simulate import clusters, groups
from coordspec.conformance.trace.records import Line, parse, quick_key
from coordspec.conformance.tracecheck import pipeline
from coordspec.conformance.tracecheck.check import check_files
from coordspec.conformance.tracecheck.partitions import group_of, is_partition_key
from coordspec.conformance.tracecheck.replay import Settings, check_key

LEADER = {
    "role": "leader",
    "leader": 1,
    "leader_epoch": 0,
    "isr": [1, 2],
    "zk_version": 0,
    "controller_epoch": 1,
}
FOLLOWER = {**LEADER, "role": "follower"}


def record(step: int, event: str, broker: int, **fields) -> dict:
    return {
        "v": 1,
        "source": "test",
        "run": "r1",
        "ts_ms": 0.0,
        "t_ms": step,
        "kind": "partition",
        "topic": "t",
        "partition": 0,
        "event": event,
        "broker": broker,
        "step": step,
        **fields,
    }


def write(step: int, event: str, broker: int, expected: int, before: int | None, **state) -> dict:
    state = {
        "outcome": "ok",
        "zk_controller_epoch": 1,
        "leader": 1,
        "leader_epoch": 0,
        "isr": [1, 2],
        "controller_epoch": 1,
        "zk_version": (before if before is not None else -1) + 1,
        **state,
    }
    return record(
        step, event, broker, expected_zk_version=expected, zk_version_before=before, **state
    )


def committed_once() -> list[dict]:
    """Broker 1 leads t-0 with ISR (1, 2); one record is appended, replicated and acknowledged."""
    return [
        write(1, "InitLeaders", 1, -1, None),
        record(2, "LeaderAndIsr", 1, **LEADER),
        record(3, "LeaderAndIsr", 2, **FOLLOWER),
        record(
            4,
            "Produce",
            1,
            **LEADER,
            offset=0,
            payload_id=7,
            outcome="appended",
            acks="all",
            log=[[0, 7]],
            high_watermark=0,
        ),
        record(5, "Replicate", 2, **FOLLOWER, log=[[0, 7]]),
        record(6, "AdvanceHighWatermark", 1, **LEADER, high_watermark=1),
        record(
            6,
            "Produce",
            1,
            offset=0,
            payload_id=7,
            outcome="acknowledged",
            acks="all",
            high_watermark=1,
        ),
    ]


def check(tmp_path: Path, records: list[dict]):
    path = tmp_path / "partition.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return check_files([path], Settings(), out=io.StringIO())


def test_a_partition_whose_records_keep_every_invariant_passes(tmp_path):
    findings = check(tmp_path, committed_once())
    assert findings.violations == [] and findings.totals.keys == 1 and findings.totals.events == 7
    assert {"ISR-8", "ISR-11", "ISR-12", "ISR-13", "ISR-14"} <= set(findings.covered("rule"))


BROKEN = {
    # ZooKeeper took a leader's ISR write conditional on a version it no longer had
    "stale write": (
        [write(7, "ShrinkIsr", 1, 0, 1, isr=[1])],
        "ISR-15",
        "NoWriteWithStaleVersion",
        8,
    ),
    # an ack with acks=all below the high watermark only
    "early ack": (
        [
            record(
                7,
                "Produce",
                1,
                **LEADER,
                offset=1,
                payload_id=8,
                outcome="appended",
                acks="all",
                log=[[0, 7], [0, 8]],
                high_watermark=1,
            ),
            record(
                7,
                "Produce",
                1,
                offset=1,
                payload_id=8,
                outcome="acknowledged",
                acks="all",
                high_watermark=1,
            ),
        ],
        "ISR-12",
        "",
        9,
    ),
    # the controller publishes a leader outside the ISR
    "leader outside the ISR": (
        [write(7, "ElectLeader", 0, 0, 0, leader=3, leader_epoch=1, isr=[2])],
        "ISR-6",
        "LeaderInIsr",
        8,
    ),
    # the leader dies; broker 3, never in the ISR, is elected and leads without the committed record
    "committed record lost": (
        [
            record(7, "CrashBroker", 1),
            write(8, "ElectLeader", 0, 0, 0, leader=3, leader_epoch=1, isr=[3]),
            record(9, "LeaderAndIsr", 3, role="leader", leader=3, leader_epoch=1, isr=[3], log=[]),
        ],
        "ISR-13",
        "NoCommittedRecordLost",
        10,
    ),
    # broker 2 leads alone at epoch 1 while broker 1 still leads, followed, at epoch 0
    "two leaders can commit": (
        [
            record(7, "LeaderAndIsr", 3, role="follower", leader=1, leader_epoch=0, isr=[1, 3]),
            record(7, "IsrUpdated", 1, **{**LEADER, "isr": [1, 3]}),
            record(8, "LeaderAndIsr", 2, role="leader", leader=2, leader_epoch=1, isr=[2]),
        ],
        "ISR-7",
        "AtMostOneLeaderCanCommit",
        10,
    ),
    # a write under an older controller epoch than one seen before
    "controller epoch goes back": (
        [
            write(
                7, "ElectLeader", 0, 0, 0, zk_controller_epoch=3, leader_epoch=1, controller_epoch=3
            ),
            write(
                8, "ElectLeader", 0, 1, 1, zk_controller_epoch=2, leader_epoch=2, controller_epoch=2
            ),
        ],
        "ISR-3",
        "ControllerEpochMonotonic",
        9,
    ),
}


@pytest.mark.parametrize("case", sorted(BROKEN))
def test_each_replication_invariant_is_caught_at_its_record_with_its_rule(tmp_path, case):
    extra, rule, invariant, line = BROKEN[case]
    findings = check(tmp_path, committed_once() + extra)
    [violation] = findings.violations
    assert (violation["rule"], violation["invariant"], violation["line"]) == (rule, invariant, line)
    assert (
        violation["partition"] == "t-0"
        and violation["group_id"] == ""
        and violation["kind"] == "partition"
    )
    assert any(c.startswith(f"{violation['file']}:{line} ") for c in violation["context"])


def test_a_partition_key_cannot_be_a_group_key():
    """Kafka takes any group id, NUL first included (a fuzzer sends them): such a group is
    still a group, whatever it is called."""
    partition = Line("f", 1, json.dumps(committed_once()[0]))
    group = {
        "v": 1,
        "source": "test",
        "run": "r1",
        "ts_ms": 0.0,
        "t_ms": 0,
        "kind": "time",
        "group_id": "t-0",
        "advance_ms": 1,
    }
    assert quick_key(partition)[0] != quick_key(Line("f", 2, json.dumps(group)))[0]
    for name in (quick_key(partition)[0], "\x00", "\x00g"):
        sneaky = Line("f", 3, json.dumps({**group, "group_id": name}))
        parse(sneaky)  # a valid record
        key = quick_key(sneaky)[0]
        assert (
            not is_partition_key(key) and group_of(key) == name and key != quick_key(partition)[0]
        )
        report = check_key(key, "r1", [sneaky], Settings())
        assert report.group_id == name and report.violations == []


def test_a_partition_record_missing_what_its_event_needs_is_one_line(tmp_path, capsys):
    from coordspec.conformance.cli.trace import main

    bad = write(1, "ElectLeader", 0, 0, 0)
    del bad["outcome"]
    path = tmp_path / "bad.jsonl"
    path.write_text(json.dumps(bad) + "\n")
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert (
        err.startswith(f"coordspec trace check: {path}:1: ")
        and "needs outcome" in err
        and "\n" not in err
    )


# -- whole clusters -----------------------------------------------------------------------


@pytest.fixture(scope="module")
def planted_traces(tmp_path_factory) -> Path:
    """Cluster runs with each replication bug planted, in one directory."""
    root = tmp_path_factory.mktemp("planted")
    for bug in clusters.BUGS:
        results, _ = groups.simulate(30, 0, groups.Options(cluster=True, bug=bug), root / bug)
        assert any(v["rule"] == clusters.BUGS[bug] for r in results for v in r.violations), bug
    return root


def test_the_one_machine_checker_finds_what_the_simulator_reported(planted_traces):
    for bug in clusters.BUGS:
        findings = check_files([planted_traces / bug], Settings(), out=io.StringIO())
        rules = {v["rule"] for v in findings.violations if v["partition"]}
        assert clusters.BUGS[bug] in rules


@pytest.fixture(scope="module")
def spark(tmp_path_factory):
    session = pipeline.session("local[2]", tmp_path_factory.mktemp("spark"), io.StringIO())
    yield session
    session.stop()


def test_spark_and_one_machine_report_the_same_partition_violations(
    spark, planted_traces, tmp_path
):
    local = check_files([planted_traces], Settings(), out=io.StringIO())
    on_spark = pipeline.run_pipeline(
        [str(planted_traces)], tmp_path / "out", out=io.StringIO(), spark=spark
    )

    def seen(findings):
        return sorted(
            (
                v["file"],
                v["line"],
                v["rule"],
                v["invariant"],
                v["partition"],
                v["group_id"],
                v["message"],
                tuple(v["context"]),
            )
            for v in findings.violations
        )

    assert seen(on_spark) == seen(local) and any(v["partition"] for v in on_spark.violations)
    assert (
        on_spark.totals.keys == local.totals.keys and on_spark.totals.events == local.totals.events
    )


def test_cluster_runs_fan_out_over_executors_with_the_same_results(spark, tmp_path):
    options = groups.Options(cluster=True, bug="isr-write-skips-version")
    on_spark, _ = groups.simulate(8, 0, options, tmp_path / "spark", spark)
    here, _ = groups.simulate(8, 0, options, tmp_path / "here")
    assert [
        (r.seed, r.events, r.invariant, [v["rule"] for v in r.violations]) for r in on_spark
    ] == [(r.seed, r.events, r.invariant, [v["rule"] for v in r.violations]) for r in here]
    assert (
        any(r.violations for r in here) and len(list((tmp_path / "spark").glob("sim-*.jsonl"))) > 1
    )
