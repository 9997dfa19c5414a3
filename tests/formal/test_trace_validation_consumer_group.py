"""Spec check between tla/ConsumerGroup.tla and the reference's KIP-848 consumer group
(conformance/formal/consumer_group.py): random reference runs are behaviours of the spec (TLC
checks them), corrupted traces are rejected at the record changed, and TLC's random behaviours
of the spec replay on the reference with the same answers and states."""

from __future__ import annotations

from itertools import pairwise

import pytest

from coordspec.conformance.formal import consumer_group as cg

pytestmark = pytest.mark.tlc

ACTIONS = (
    "ConsumerGroupHeartbeat",
    "Subscribe",
    "LeaveGroup",
    "StaticLeave",
    "SessionTimeout",
    "RebalanceTimeout",
    "OffsetCommit",
)


@pytest.fixture(scope="module")
def random_traces():
    return cg.validate_random_traces(count=30, steps=40, seed=1)


def _pairs(traces):
    for trace in traces:
        for before, after in pairwise(trace):
            yield before.state, after


def test_random_reference_traces_are_behaviours_of_the_spec(random_traces):
    summary = random_traces
    check = summary.check
    assert check.accepted, (
        f"TLC: {check.violated} in trace {check.failed_trace} at record {check.failed_index}"
    )
    assert summary.traces == 30 and all(len(t) >= 41 for t in summary.trace_list)
    assert check.distinct == check.states == sum(len(t) for t in summary.trace_list)
    for action in (*ACTIONS, "OffsetCommitRejected"):
        assert summary.actions.get(action, 0) > 0, f"no {action} in the random traces"
    pairs = list(_pairs(summary.trace_list))

    def seen(what) -> bool:
        return any(what(before, step, step.state) for before, step in pairs)

    heartbeat = "ConsumerGroupHeartbeat"
    # a lost answer; a zombie (epoch > 0) fenced back to 0; a stale-epoch commit refused
    assert seen(lambda b, s, a: s.action == heartbeat and not s.args[2])
    assert seen(
        lambda b, s, a: (
            s.action == heartbeat
            and b["client_epoch"][s.args[0]] > 0
            and a["client_epoch"][s.args[0]] == 0
        )
    )
    assert seen(lambda b, s, a: s.action == "OffsetCommitRejected" and s.args[0] in b["members"])
    assert seen(lambda b, s, a: -2 in a["member_epoch"].values())
    for state in ("UNREVOKED_PARTITIONS", "UNRELEASED_PARTITIONS"):
        assert seen(lambda b, s, a, state=state: state in a["member_state"].values()), state
    # found by this check (the spec was fixed): a partition a member revoked and gets back in
    # its new target is unreleased until the member's revocation is written
    assert seen(
        lambda b, s, a: (
            s.action == heartbeat
            and b["member_state"][s.args[0]] == "UNREVOKED_PARTITIONS"
            and a["member_state"][s.args[0]] == "UNRELEASED_PARTITIONS"
            and b["pending_revocation"][s.args[0]] & a["target_assignment"][s.args[0]]
        )
    )
    # past MaxGroupEpoch, joins with an unchanged subscription and timeouts of abandoned
    # members still bump it
    epochs = {s.state["group_epoch"] for t in summary.trace_list for s in t}
    assert max(epochs) > cg.MAX_GROUP_EPOCH


def test_a_group_epoch_that_jumps_by_two_is_rejected(random_traces):
    bad, index = cg.corrupt_epoch_jump(random_traces.trace_list[3])
    check = cg.check_traces([bad])
    assert not check.accepted and check.violated == "Deadlock"
    assert (check.failed_trace, check.failed_index) == (1, index)


def test_a_commit_acknowledged_at_a_stale_epoch_is_rejected(random_traces):
    found = next(filter(None, map(cg.corrupt_stale_commit, random_traces.trace_list)), None)
    assert found is not None, "no refused commit from a member in the random traces"
    bad, index = found
    check = cg.check_traces([bad])
    assert not check.accepted and (check.failed_trace, check.failed_index) == (1, index)


@pytest.fixture(scope="module")
def simulated():
    return cg.simulate(count=8, depth=30, seed=1)


def test_simulated_spec_behaviours_replay_on_the_reference(simulated):
    summary = cg.replay_behaviours(simulated, seed=1)
    assert summary.ok, "\n".join(summary.mismatches)
    assert summary.behaviours == 8 and summary.steps == 8 * 30
    for action in ACTIONS:
        assert summary.actions.get(action, 0) > 0, f"no {action} in the simulated behaviours"
    heartbeats = [
        (act, before, after)
        for behaviour in simulated
        for (_, before), (act, after) in pairwise(behaviour)
        if act["action"] == "ConsumerGroupHeartbeat"
    ]
    # answers the reference had to match: lost ones, and refusals that send a process back to 0
    assert any(not act["delivered"] for act, _, _ in heartbeats)
    assert any(
        b["client_epoch"][act["actor"]] > 0 and a["client_epoch"][act["actor"]] == 0
        for act, b, a in heartbeats
    )


def test_replay_notices_a_spec_state_the_reference_does_not_reach(simulated):
    changed = [(act, dict(state)) for act, state in simulated[0]]
    changed[12][1]["group_epoch"] += 1
    with pytest.raises(cg.TraceMismatch, match="step 12"):
        cg.replay(changed)
