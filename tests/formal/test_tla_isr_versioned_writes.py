"""coordspec tla check IsrVersionedWrites: TLC model-checks the ISR versioned-writes spec at CI
bounds, and every mutant (one per invariant, plus unclean leader election) is caught by its own
invariant with a counterexample."""

from __future__ import annotations

import pytest

from coordspec.conformance.formal import tlc

pytestmark = pytest.mark.tlc

SPEC = "IsrVersionedWrites"
INVARIANTS = [
    "TypeOK",
    "NoWriteWithStaleVersion",
    "LeaderInIsr",
    "AtMostOneLeaderCanCommit",
    "NoCommittedRecordLost",
    "ControllerEpochMonotonic",
]


@pytest.fixture(scope="module")
def isr_versioned_writes(tmp_path_factory):
    out = tmp_path_factory.mktemp("tla")
    return tlc.check([SPEC], out=out, say=lambda line: None), out


def test_spec_is_discovered_and_its_cfg_checks_every_invariant():
    assert SPEC in tlc.specs_in()
    for cfg in ("MCIsrVersionedWrites.cfg", "MCIsrVersionedWrites_deep.cfg"):
        assert tlc.checked_names(tlc.TLA_DIR / cfg) == INVARIANTS


def test_spec_holds_at_ci_bounds(isr_versioned_writes):
    verdicts, _ = isr_versioned_writes
    spec = verdicts[0]
    assert spec.label == SPEC and spec.ok, spec.result.violated
    assert spec.result.distinct > 100_000 and spec.result.depth > 15


def test_every_mutant_is_caught_by_its_own_invariant(isr_versioned_writes):
    verdicts, out = isr_versioned_writes
    mutants = verdicts[1:]
    expected = {flag: invariant for _, flag, invariant in tlc.mutants_of(SPEC)}
    assert {v.label.split(" with ")[1] for v in mutants} == set(expected)
    # every invariant but TypeOK has a mutant; unclean leader election is Kafka's own setting
    assert set(expected.values()) == set(INVARIANTS) - {"TypeOK"}
    assert expected["UncleanLeaderElection"] == "NoCommittedRecordLost"
    assert expected["BugStaleVersionWrite"] == "NoWriteWithStaleVersion"
    for verdict in mutants:
        assert verdict.ok, f"{verdict.label}: {verdict.result.violated}"
        assert verdict.result.trace, "a caught mutant comes with a counterexample"
        flag = verdict.label.split(" with ")[1]
        table = (out / f"{SPEC}-{flag}-counterexample.md").read_text()
        assert "| step | action | variable | value |" in table


def test_counterexamples_show_the_mechanism(isr_versioned_writes):
    verdicts, _ = isr_versioned_writes
    traces = {v.label.split(" with ")[1]: [s.action for s in v.result.trace] for v in verdicts[1:]}
    # unclean: a committed record, then a leader elected from outside the ISR
    assert "AdvanceHighWatermark" in traces["UncleanLeaderElection"]
    assert "ElectLeader" in traces["UncleanLeaderElection"]
    # the stale write is a leader's ISR write after the controller moved the state on
    assert traces["BugStaleVersionWrite"][-1] in ("ShrinkIsr", "ExpandIsr")
    # a zombie: a leader paused and resumed while another was elected
    assert {"PauseBroker", "ResumeBroker"} <= set(traces["BugShrinkIsrBeforeWrite"])
    # a zombie controller writes after a newer controller was elected
    assert traces["BugSkipControllerEpochCheck"].count("ElectController") >= 2
    assert traces["BugSkipControllerEpochCheck"][-1] == "ElectLeader"
