"""Spec check between tla/CoordinatorFailover.tla and the reference failover model
(conformance/formal/failover.py): random runs of the reference FailoverCluster are behaviours
of the spec (TLC checks them), and a corrupted trace is rejected at the record corrupted."""

from __future__ import annotations

import pytest

from coordspec.conformance.formal import failover as tf

pytestmark = pytest.mark.tlc


@pytest.fixture(scope="module")
def random_traces():
    return tf.validate_random_traces(count=50, steps=30, seed=1, max_draws=400)


def test_random_reference_traces_are_behaviours_of_the_spec(random_traces):
    summary = random_traces
    check = summary.check
    assert check.accepted, (
        f"TLC: {check.violated} in trace {check.failed_trace} at record {check.failed_index}"
    )
    assert summary.traces == 50 and all(len(t) >= 31 for t in summary.trace_list)
    assert check.distinct == check.states == sum(len(t) for t in summary.trace_list)
    for action in (
        "ElectLeader",
        "BecomeCoordinator",
        "LoadGroup",
        "ResignCoordinator",
        "SyncGroup",
        "OffsetCommit",
        "AckCommit",
        "Replicate",
        "AdvanceHighWatermark",
        "ExpandIsr",
    ):
        assert summary.actions.get(action, 0) > 0, f"no {action} in the random traces"
    states = [s.state for t in summary.trace_list for s in t]
    assert max(s["leaderEpoch"] for s in states) == tf.MAX_EPOCH
    assert any(s["acked"]["p1"] == tf.MAX_COMMITS for s in states)
    # zombies: a broker acting on an older epoch while a newer one is published
    assert any(
        s["status"][b] == "Active"
        and s["view"][b]["leader"] == b
        and s["view"][b]["epoch"] < s["leaderEpoch"]
        for s in states
        for b in tf.BROKERS
    )


def test_an_offset_commit_acknowledged_at_its_append_is_rejected(random_traces):
    good = random_traces.trace_list
    bad, index = tf.corrupt_ack_at_append(good[2])
    check = tf.check_traces([*good[:2], bad, *good[3:5]])
    assert not check.accepted and check.violated == "Deadlock"
    assert (check.failed_trace, check.failed_index) == (3, index)


def test_a_trace_that_does_not_start_in_init_is_rejected(random_traces):
    trace = [tf.Step(s.action, s.args, tf._copy(s.state)) for s in random_traces.trace_list[0]]
    trace[0].state["leaderEpoch"] = 1
    check = tf.check_traces([trace])
    assert not check.accepted


def test_tla_values_round_trip_through_the_parser():
    from coordspec.conformance.formal.tla_values import parse_value

    state = tf.Harness().abstract()
    assert parse_value(tf.tla(state["hw"])) == state["hw"]
    assert parse_value(tf.tla(state["isr"])) == state["isr"]


def test_finding_a_reelected_leader_stepping_down_on_a_failed_isr_write_is_not_a_spec_step():
    """Finding 1 (conformance/formal/failover.py): b1, re-elected at a newer epoch it has not
    applied, tries to add b3 back to the ISR at its old epoch; the conditional write fails and
    the reference's leader steps down (ISR-17) although the published leader is b1 itself.
    The spec has no such step: TLC rejects the trace at that record."""
    h = tf.Harness()
    h.start()

    def deliver_all():
        while h.fc.cluster.deliverable():
            h.deliver(h.fc.cluster.deliverable()[0])

    deliver_all()
    h.load("b1")
    h.expire("b3")  # ISR {b1, b2}, epoch 2
    deliver_all()
    h.rebalance("b1")
    h.replicate("b2")
    h.expire("b2")  # b1 re-elected alone at epoch 3; its LeaderAndIsr stays in flight
    assert h.would_step_down("b3")
    h.replicate("b3")
    index = next(
        k for k, s in enumerate(h.steps, 1) if s.action == "ResignCoordinator" and s.args[0] == "b1"
    )
    assert (
        h.steps[index - 1].state["leader"] == "b1"
        and h.steps[index - 1].state["status"]["b1"] == "NotCoordinator"
    )
    check = tf.check_traces([h.steps])
    assert not check.accepted and check.violated == "Deadlock" and check.failed_index == index


@pytest.fixture(scope="module")
def simulated():
    return tf.simulate(count=60, depth=30, seed=7)


def test_simulated_spec_behaviours_replay_on_the_reference(simulated):
    summary = tf.ReplaySummary(0, 0, {}, [], 0.0)
    for number, behaviour in enumerate(simulated):
        for act, _ in behaviour[1:]:
            summary.actions[act["action"]] = summary.actions.get(act["action"], 0) + 1
        try:
            summary.steps += tf.replay(behaviour, number)
        except tf.TraceMismatch as mismatch:
            summary.mismatches.append(f"behaviour {number + 1}: {mismatch}")
    assert summary.ok, "\n".join(summary.mismatches)
    assert len(simulated) == 60
    assert summary.steps == sum(len(b) - 1 for b in simulated) >= 60 * 20
    for action in (
        "ElectLeader",
        "BecomeCoordinator",
        "ResignCoordinator",
        "LoadGroup",
        "SyncGroup",
        "OffsetCommit",
        "AckCommit",
        "Replicate",
        "AdvanceHighWatermark",
        "ExpandIsr",
        "Fetch",
    ):
        assert summary.actions.get(action, 0) > 0, f"no {action} in the simulated behaviours"


def test_replay_notices_a_spec_state_the_reference_does_not_reach(simulated):
    behaviour = next(b for b in simulated if len(b) > 15)
    changed = [(act, tf._copy(state)) for act, state in behaviour]
    changed[12][1]["commits"] += 1
    with pytest.raises(tf.TraceMismatch, match="step 12"):
        tf.replay(changed)


def test_finding_a_reelected_leader_counts_a_follower_that_has_not_applied_its_epoch():
    """Finding 2 (conformance/formal/failover.py): b3's session expires, the controller
    re-elects b1 with ISR {b1, b2}; b1 applies the new epoch before b2 does and moves its high
    watermark from the log end b2 fetched at the old epoch (as Kafka 2.6 does). The spec's
    AdvanceHighWatermark needs b2 to follow b1 at the new epoch: TLC rejects that record."""
    h = tf.Harness()
    h.start()
    while h.fc.cluster.deliverable():
        h.deliver(h.fc.cluster.deliverable()[0])
    h.load("b1")
    h.rebalance("b1")
    h.replicate("b2")
    h.expire("b3")
    h.deliver_to("b1")
    index = next(k for k, s in enumerate(h.steps, 1) if s.action == "AdvanceHighWatermark")
    assert (
        h.steps[index - 1].state["view"]["b2"]["epoch"]
        < h.steps[index - 1].state["view"]["b1"]["epoch"]
    )
    check = tf.check_traces([h.steps])
    assert not check.accepted and check.violated == "Deadlock" and check.failed_index == index
