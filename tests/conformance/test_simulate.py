"""The simulator (conformance/simulate/groups.py, and clusters.py for --cluster): clean
runs with every fault pass the trace check, planted bugs are found with their rule, and a
reported seed replays the run."""

from __future__ import annotations

import json
from collections import Counter

import pytest

from coordspec.conformance.cli.trace import main
from coordspec.conformance.simulate import clusters, groups, names, planted
from coordspec.conformance.tracecheck.check import check_files
from coordspec.conformance.tracecheck.replay import Settings


def test_clean_runs_with_every_fault_have_no_violation_and_exercise_the_states(tmp_path):
    results, _ = groups.simulate(40, 0, groups.Options(), tmp_path)
    assert [r for r in results if r.violations or r.invariant] == []
    findings = check_files([tmp_path], Settings())
    assert findings.violations == [] and findings.totals.keys == 40
    assert set(findings.covered("state")) == {
        "Empty",
        "PreparingRebalance",
        "CompletingRebalance",
        "Stable",
    }
    assert {"GM-7", "GM-33", "GM-50"} <= set(
        findings.covered("rule")
    )  # unknown members, sessions expire, commits
    trace = (tmp_path / "sim-00000.jsonl").read_text()
    assert '"fault":"restart"' in trace and '"kind":"time"' in trace


@pytest.mark.parametrize(
    ("bug", "rule"),
    [
        ("stale-commit", "GM-50"),
        ("heartbeat-ignores-rebalance", "GM-30"),
        ("generation-not-bumped", "GM-17"),
    ],
)
def test_a_planted_bug_is_found_with_its_rule(tmp_path, bug, rule):
    results, _ = groups.simulate(30, 0, groups.Options(bug=bug), tmp_path)
    rules = Counter(v["rule"] for r in results for v in r.violations)
    assert rules[rule] > 0
    # the checker reading the files finds exactly what the simulator reported
    findings = check_files([tmp_path], Settings())
    assert sorted((v["file"], v["line"], v["rule"]) for v in findings.violations) == sorted(
        (v["file"], v["line"], v["rule"]) for r in results for v in r.violations
    )


def test_the_reported_seed_replays_the_violation(tmp_path, capsys):
    assert (
        main(["simulate", "--runs", "30", "--bug", "stale-commit", "--out", str(tmp_path / "all")])
        == 1
    )
    out = capsys.readouterr().out
    replay = next(line.strip() for line in out.splitlines() if "replay: coordspec simulate" in line)
    seed = int(replay.split("--seed ")[1].split()[0])
    assert (
        main(
            [
                "simulate",
                "--runs",
                "1",
                "--seed",
                str(seed),
                "--bug",
                "stale-commit",
                "--out",
                str(tmp_path / "one"),
            ]
        )
        == 1
    )
    assert f"run 0 (seed {seed}): GM-" in capsys.readouterr().out


def test_without_faults_or_with_a_bad_fault(tmp_path, capsys):
    assert main(["simulate", "--runs", "5", "--faults", "none", "--out", str(tmp_path)]) == 0
    assert '"kind":"fault"' not in (tmp_path / "sim-00000.jsonl").read_text()
    with pytest.raises(SystemExit):
        main(["simulate", "--runs", "5", "--faults", "crash,meteor"])
    assert "unknown fault 'meteor'" in capsys.readouterr().err


def test_the_command_lines_offer_every_bug_and_fault():
    assert set(names.BUG_NAMES) == set(planted.BUGS)
    assert set(names.CLUSTER_BUG_NAMES) == set(clusters.BUGS)
    assert groups.FAULTS == names.FAULTS


# -- whole clusters (--cluster) ---------------------------------------------------------------


def test_clean_cluster_runs_move_coordinators_and_keep_every_invariant(tmp_path):
    results, _ = groups.simulate(30, 0, groups.Options(cluster=True), tmp_path)
    assert [r for r in results if r.violations or r.invariant] == []
    findings = check_files([tmp_path], Settings())
    assert findings.violations == []
    events = Counter(
        json.loads(line).get("event") or json.loads(line)["kind"]
        for line in (tmp_path / "sim-00000.jsonl").open()
    )
    # brokers fail, leaders move and ISRs change, and the coordinators move with them
    assert {
        "CrashBroker",
        "PauseBroker",
        "ExpireSession",
        "ElectLeader",
        "ShrinkIsr",
        "ExpandIsr",
        "StepDown",
        "Produce",
        "Replicate",
        "AdvanceHighWatermark",
        "request",
        "response",
    } <= set(events)
    assert '"fault":"load_group"' in (tmp_path / "sim-00000.jsonl").read_text()
    assert {"Empty", "PreparingRebalance", "CompletingRebalance", "Stable"} <= set(
        findings.covered("state")
    )
    assert {"ISR-4", "ISR-11", "ISR-12", "ISR-13", "ISR-14", "ISR-15", "ISR-16", "ISR-17"} <= set(
        findings.covered("rule")
    )


def test_a_group_bug_is_found_in_a_cluster_too(tmp_path):
    results, _ = groups.simulate(
        20, 0, groups.Options(cluster=True, bug="generation-not-bumped"), tmp_path
    )
    assert "GM-17" in {v["rule"] for r in results for v in r.violations}


def test_the_reported_seed_replays_a_cluster_violation(tmp_path, capsys):
    flags = ["--cluster", "--bug", "isr-write-skips-version"]
    assert main(["simulate", "--runs", "30", *flags, "--out", str(tmp_path / "all")]) == 1
    out = capsys.readouterr().out
    replay = next(line.strip() for line in out.splitlines() if "replay: coordspec simulate" in line)
    assert replay.endswith("--cluster --bug isr-write-skips-version")
    seed = int(replay.split("--seed ")[1].split()[0])
    assert (
        main(
            ["simulate", "--runs", "1", "--seed", str(seed), *flags, "--out", str(tmp_path / "one")]
        )
        == 1
    )
    found = capsys.readouterr().out
    assert (
        f"run 0 (seed {seed}): ISR-1" in found
        and "(NoWriteWithStaleVersion) in partition __consumer_offsets-" in found
    )


def test_a_replication_bug_needs_a_cluster(tmp_path, capsys):
    assert main(["simulate", "--runs", "1", "--bug", "ack-before-isr", "--out", str(tmp_path)]) == 2
    assert (
        capsys.readouterr().err.strip()
        == "coordspec simulate: --bug ack-before-isr is a replication bug: it needs --cluster"
    )
