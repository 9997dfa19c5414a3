"""tla/ConsumerGroup.tla (KIP-848): TLC finds no violation at the CI bounds over a
non-trivial state space, every mutant is caught by the invariant or property its cfg
names, with a counterexample, and the deep cfg checks the liveness property besides the
CI invariants (the pattern of tests/formal/test_tla.py)."""

from __future__ import annotations

import pytest

from coordspec.conformance.formal import tlc

pytestmark = pytest.mark.tlc

SPEC = "ConsumerGroup"
INVARIANTS = [
    "TypeOK",
    "AtMostOneOwnerPerPartition",
    "MemberEpochNotAheadOfGroup",
    "NoStaleMemberEpochCommit",
]
LIVENESS = "AssignmentConverges"


@pytest.fixture(scope="module")
def consumer_group(tmp_path_factory):
    out = tmp_path_factory.mktemp("tla")
    return tlc.check([SPEC], out=out, say=lambda line: None), out


def test_consumer_group_holds_at_ci_bounds(consumer_group):
    verdicts, _ = consumer_group
    spec = verdicts[0]
    assert spec.label == SPEC and spec.ok, spec.result.violated
    assert spec.result.distinct > 100_000 and spec.result.depth > 15


def test_cfgs_check_every_invariant_and_deep_adds_liveness():
    assert tlc.checked_names(tlc.TLA_DIR / f"MC{SPEC}.cfg") == INVARIANTS
    assert tlc.checked_names(tlc.TLA_DIR / f"MC{SPEC}_deep.cfg") == [*INVARIANTS, LIVENESS]
    assert tlc.properties_in(tlc.TLA_DIR / f"MC{SPEC}_deep.cfg") == [LIVENESS]


def test_every_invariant_has_a_mutant_and_each_is_caught_by_it(consumer_group):
    verdicts, _ = consumer_group
    mutants = verdicts[1:]
    expected = {flag: invariant for _, flag, invariant in tlc.mutants_of(SPEC)}
    assert {v.label.split(" with ")[1] for v in mutants} == set(expected)
    assert set(expected.values()) == {*INVARIANTS, LIVENESS} - {"TypeOK"}
    for verdict in mutants:
        assert verdict.ok, f"{verdict.label}: {verdict.result.violated}"
        assert verdict.result.trace, "a caught mutant comes with a counterexample"
        assert verdict.result.trace[0].action == "Initial"


def test_counterexamples_read_as_the_story_of_the_bug(consumer_group):
    _, out = consumer_group
    # a partition handed to its new owner while the old owner's process still consumes it
    table = (out / f"{SPEC}-BugAssignUnreleased-counterexample.md").read_text()
    assert "| ConsumerGroupHeartbeat |" in table and "| owned |" in table
    # a zombie's commit at an epoch the coordinator has moved past is acknowledged
    table = (out / f"{SPEC}-BugCommitWithoutEpochCheck-counterexample.md").read_text()
    assert "| OffsetCommit |" in table
    # a member removed without a group epoch bump leaves its partitions out of the target
    table = (out / f"{SPEC}-BugNoBumpOnLeave-counterexample.md").read_text()
    assert (
        "| LeaveGroup |" in table
        or "| SessionTimeout |" in table
        or "| RebalanceTimeout |" in table
    )


def test_properties_in_reads_only_what_a_cfg_lists_as_properties(tmp_path):
    cfg = tmp_path / "x.cfg"
    cfg.write_text("SPECIFICATION FairSpec\nINVARIANTS TypeOK A\nPROPERTIES Live \\* the one\n")
    assert tlc.properties_in(cfg) == ["Live"]
    assert tlc.checked_names(cfg) == ["TypeOK", "A", "Live"]
