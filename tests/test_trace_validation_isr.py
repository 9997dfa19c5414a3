"""Trace validation between tla/IsrVersionedWrites.tla and the replication model
(conformance/traces_isr.py): random runs of the model are behaviours of the spec (TLC checks
them all in one run), and corrupted traces are not."""

from __future__ import annotations

import pytest

from conformance import traces_isr


@pytest.fixture(scope="module")
def random_traces():
    return traces_isr.validate_random_traces(count=60, steps=30, seed=1)


def test_random_model_traces_are_behaviours_of_the_spec(random_traces):
    summary = random_traces
    check = summary.check
    assert check.accepted, f"TLC: {check.violated} in trace {check.failed_trace} at record {check.failed_index}"
    assert summary.traces == 60 and all(len(t) >= 31 for t in summary.trace_list)
    assert check.distinct == check.states == sum(len(t) for t in summary.trace_list)
    # every action of the spec is exercised
    for action in ("ElectController", "ElectLeader", "LeaderAndIsr", "Produce", "Replicate", "AdvanceHighWatermark",
                   "ShrinkIsr", "ExpandIsr", "StepDown", "CrashBroker", "PauseBroker", "ResumeBroker", "ExpireSession",
                   "StartBroker"):
        assert summary.actions.get(action, 0) > 0, f"no {action} in the random traces"
    assert any(s.state["committed"] for t in summary.trace_list for s in t), "no record committed"
    assert {1, 2} <= {s.state["controllerEpoch"] for t in summary.trace_list for s in t}
    assert {1, 2} <= {s.state["partState"]["leaderEpoch"] for t in summary.trace_list for s in t}
    # the only moves not taken are the documented model/spec differences (conformance/traces_isr.py)
    assert all(reason[:3] in ("(a)", "(b)") for reason in summary.skipped), summary.skipped


def test_a_zk_version_that_jumps_by_two_is_rejected_at_its_record(random_traces):
    good = random_traces.trace_list
    bad, index = traces_isr.corrupt_version_jump(good[3])
    check = traces_isr.check_traces([*good[:3], bad, *good[4:6]])
    assert not check.accepted and check.violated == "Deadlock"
    assert (check.failed_trace, check.failed_index) == (4, index)


def test_an_isr_write_on_a_stale_version_is_rejected_at_its_record(random_traces):
    found = next((r for r in map(traces_isr.corrupt_stale_isr_write, random_traces.trace_list) if r is not None), None)
    assert found is not None, "no ISR write in the random traces"
    bad, index = found
    check = traces_isr.check_traces([bad])
    assert not check.accepted and check.violated == "Deadlock"
    assert (check.failed_trace, check.failed_index) == (1, index)


def test_a_trace_that_does_not_start_in_init_is_rejected(random_traces):
    trace = traces_isr._copy(random_traces.trace_list[0])
    trace[0].state["zkVersion"] = 1
    check = traces_isr.check_traces([trace])
    assert not check.accepted
