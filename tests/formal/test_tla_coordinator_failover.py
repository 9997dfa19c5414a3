"""tla/CoordinatorFailover.tla: TLC finds no violation at the CI bounds over a non-trivial
state space, and every mutant is caught by the invariant its cfg names, with a
counterexample (the pattern of tests/formal/test_tla.py)."""

from __future__ import annotations

import pytest

from coordspec.conformance.formal import tlc

pytestmark = pytest.mark.tlc

SPEC = "CoordinatorFailover"
INVARIANTS = [
    "TypeOK",
    "LoadBeforeServe",
    "SingleActiveCoordinator",
    "NoCommittedOffsetLost",
    "NoStaleGenerationAfterFailover",
]


@pytest.fixture(scope="module")
def coordinator_failover(tmp_path_factory):
    out = tmp_path_factory.mktemp("tla")
    return tlc.check([SPEC], out=out, say=lambda line: None), out


def test_coordinator_failover_holds_at_ci_bounds(coordinator_failover):
    verdicts, _ = coordinator_failover
    spec = verdicts[0]
    assert spec.label == SPEC and spec.ok, spec.result.violated
    # up to a permutation of the brokers (SYMMETRY): each distinct state stands for up to 6
    assert spec.result.distinct > 100_000 and spec.result.depth > 20


def test_ci_cfg_checks_every_invariant():
    assert tlc.checked_names(tlc.TLA_DIR / f"MC{SPEC}.cfg") == INVARIANTS
    assert tlc.checked_names(tlc.TLA_DIR / f"MC{SPEC}_deep.cfg") == INVARIANTS


def test_every_invariant_has_a_mutant_and_each_is_caught_by_it(coordinator_failover):
    verdicts, _ = coordinator_failover
    mutants = verdicts[1:]
    expected = {flag: invariant for _, flag, invariant in tlc.mutants_of(SPEC)}
    assert {v.label.split(" with ")[1] for v in mutants} == set(expected)
    assert set(expected.values()) == set(INVARIANTS) - {"TypeOK"}
    for verdict in mutants:
        assert verdict.ok, f"{verdict.label}: {verdict.result.violated}"
        assert verdict.result.trace, "a caught mutant comes with a counterexample"
        assert verdict.result.trace[0].action == "Initial"


def test_counterexamples_read_as_the_story_of_the_bug(coordinator_failover):
    _, out = coordinator_failover
    # acks=1: a zombie coordinator answers an OffsetCommit its followers never fetch
    table = (out / f"{SPEC}-BugOffsetCommitAcksOne-counterexample.md").read_text()
    assert "| step | action | variable | value |" in table
    for action in (
        "ElectLeader",
        "BecomeCoordinator",
        "LoadGroup",
        "SyncGroup",
        "AckCommit",
        "OffsetCommit",
    ):
        assert f"| {action} |" in table, action
    # serving before loading is caught at the first request a Loading coordinator answers
    table = (out / f"{SPEC}-BugServeBeforeLoad-counterexample.md").read_text()
    assert "| LoadGroup |" not in table and "Loading" in table
    # without an epoch bump the old and the new leader are both active in one epoch
    table = (out / f"{SPEC}-BugNoEpochBump-counterexample.md").read_text()
    assert table.count("| LoadGroup |") >= 2
