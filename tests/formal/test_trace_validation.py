"""Spec check between tla/GroupMembership.tla and the reference coordinator
(conformance/formal/group.py): random reference runs are behaviours of the spec (TLC checks them),
corrupted traces are not, and TLC's random behaviours of the spec replay on the reference."""

from __future__ import annotations

import pytest

from coordspec.conformance.formal import group as group_spec
from coordspec.conformance.formal.tla_values import parse_value

pytestmark = pytest.mark.tlc


@pytest.fixture(scope="module")
def random_traces():
    return group_spec.validate_random_traces(count=100, steps=40, seed=1)


def test_random_reference_traces_are_behaviours_of_the_spec(random_traces):
    summary = random_traces
    check = summary.check
    assert check.accepted, (
        f"TLC: {check.violated} in trace {check.failed_trace} at record {check.failed_index}"
    )
    assert summary.traces == 100 and all(len(t) >= 41 for t in summary.trace_list)
    assert check.distinct == check.states == sum(len(t) for t in summary.trace_list)
    # the traces exercise every action of the spec, the refused commit and the timers
    for action in (
        "JoinGroup",
        "JoinGroupAnswered",
        "CompleteJoin",
        "SyncGroup",
        "Heartbeat",
        "LeaveGroup",
        "ExpireSession",
        "ExpirePendingSync",
        "OffsetCommit",
        "OffsetCommitRejected",
        "Crash",
    ):
        assert summary.actions.get(action, 0) > 0, f"no {action} in the random traces"
    generations = {s.state["generation"] for t in summary.trace_list for s in t}
    assert {0, 1, 2, 3} <= generations


def test_a_generation_that_jumps_by_two_is_rejected(random_traces):
    good = random_traces.trace_list
    bad, index = group_spec.corrupt_generation_jump(good[4])
    check = group_spec.check_traces([*good[:4], bad, *good[5:8]])
    assert not check.accepted and check.violated == "Deadlock"
    assert (check.failed_trace, check.failed_index) == (5, index)


def test_a_commit_accepted_from_a_stale_generation_is_rejected(random_traces):
    found = next(
        (
            r
            for r in map(group_spec.corrupt_stale_commit, random_traces.trace_list)
            if r is not None
        ),
        None,
    )
    assert found is not None, "no stale commit refused in the random traces"
    bad, index = found
    assert bad[index - 1].action == "OffsetCommit" and bad[index - 1].args[1]
    check = group_spec.check_traces([bad])
    assert not check.accepted and (check.failed_trace, check.failed_index) == (1, index)


def test_a_trace_that_does_not_start_in_init_is_rejected(random_traces):
    trace = [group_spec.Step(s.action, s.args, dict(s.state)) for s in random_traces.trace_list[0]]
    trace[0].state["generation"] = 1
    check = group_spec.check_traces([trace])
    assert not check.accepted


def test_simulated_spec_behaviours_replay_on_the_reference():
    summary = group_spec.replay_simulated_behaviours(count=100, depth=40, seed=7)
    assert summary.ok, "\n".join(summary.mismatches)
    assert summary.behaviours == 100 and summary.steps == 100 * 40
    for action in (
        "JoinGroup",
        "CompleteJoin",
        "SyncGroup",
        "LeaveGroup",
        "ExpireSession",
        "OffsetCommit",
        "Crash",
    ):
        assert summary.actions.get(action, 0) > 0, f"no {action} in the simulated behaviours"


def test_replay_notices_a_spec_state_the_reference_does_not_reach():
    behaviour = group_spec.simulate(count=1, depth=20, seed=5)[0]
    changed = [(act, dict(state)) for act, state in behaviour]
    changed[12][1]["generation"] += 1
    with pytest.raises(group_spec.TraceMismatch, match="step 12"):
        group_spec.replay(changed)


def test_tla_values_round_trip_through_the_parser():
    h = group_spec.Harness()
    state = h.abstract()
    for name in group_spec.VARIABLES:
        assert parse_value(group_spec.tla(state[name])) == state[name], name


def test_join_into_a_preparing_group_whose_only_member_left():
    """Found by the spec check: with no members left, Kafka's supportsProtocols accepts any protocol."""
    h = group_spec.Harness(arbitrary=False)
    h.join("c1")
    h.leave(
        "c1"
    )  # during the initial join phase: the group stays PreparingRebalance, with no members
    h.join("c2")
    check = group_spec.check_traces([h.steps])
    assert check.accepted, f"TLC: {check.violated} at record {check.failed_index}"
