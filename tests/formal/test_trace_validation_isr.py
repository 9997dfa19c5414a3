"""Spec check between tla/IsrVersionedWrites.tla and the replication model
(conformance/formal/isr.py): random runs of the model are behaviours of the spec (TLC checks
them all in one run), and corrupted traces are not; behaviours TLC simulates from the spec,
constrained to the model's choices, replay on the model, and a corrupted one is caught at its step."""

from __future__ import annotations

import pytest

from coordspec.conformance.formal import isr as isr_spec

pytestmark = pytest.mark.tlc


@pytest.fixture(scope="module")
def random_traces():
    return isr_spec.validate_random_traces(count=60, steps=30, seed=1)


def test_random_model_traces_are_behaviours_of_the_spec(random_traces):
    summary = random_traces
    check = summary.check
    assert check.accepted, (
        f"TLC: {check.violated} in trace {check.failed_trace} at record {check.failed_index}"
    )
    assert summary.traces == 60 and all(len(t) >= 31 for t in summary.trace_list)
    assert check.distinct == check.states == sum(len(t) for t in summary.trace_list)
    # every action of the spec is exercised
    for action in (
        "ElectController",
        "ElectLeader",
        "LeaderAndIsr",
        "Produce",
        "Replicate",
        "AdvanceHighWatermark",
        "ShrinkIsr",
        "ExpandIsr",
        "StepDown",
        "CrashBroker",
        "PauseBroker",
        "ResumeBroker",
        "ExpireSession",
        "StartBroker",
    ):
        assert summary.actions.get(action, 0) > 0, f"no {action} in the random traces"
    assert any(s.state["committed"] for t in summary.trace_list for s in t), "no record committed"
    assert {1, 2} <= {s.state["controllerEpoch"] for t in summary.trace_list for s in t}
    assert {1, 2} <= {s.state["partState"]["leaderEpoch"] for t in summary.trace_list for s in t}
    # the only moves not taken are the documented model/spec differences (conformance/formal/isr.py)
    assert all(reason[:3] in ("(a)", "(b)") for reason in summary.skipped), summary.skipped


def test_a_zk_version_that_jumps_by_two_is_rejected_at_its_record(random_traces):
    good = random_traces.trace_list
    bad, index = isr_spec.corrupt_version_jump(good[3])
    check = isr_spec.check_traces([*good[:3], bad, *good[4:6]])
    assert not check.accepted and check.violated == "Deadlock"
    assert (check.failed_trace, check.failed_index) == (4, index)


def test_an_isr_write_on_a_stale_version_is_rejected_at_its_record(random_traces):
    found = next(
        (
            r
            for r in map(isr_spec.corrupt_stale_isr_write, random_traces.trace_list)
            if r is not None
        ),
        None,
    )
    assert found is not None, "no ISR write in the random traces"
    bad, index = found
    check = isr_spec.check_traces([bad])
    assert not check.accepted and check.violated == "Deadlock"
    assert (check.failed_trace, check.failed_index) == (1, index)


def test_a_trace_that_does_not_start_in_init_is_rejected(random_traces):
    trace = isr_spec._copy(random_traces.trace_list[0])
    trace[0].state["zkVersion"] = 1
    check = isr_spec.check_traces([trace])
    assert not check.accepted


# -- spec -> reference: TLC-simulated behaviours of the constrained spec replayed on the model --------------

SIM_COUNT, SIM_DEPTH, SIM_SEED = 60, 30, 1


@pytest.fixture(scope="module")
def simulated():
    return isr_spec.simulate(SIM_COUNT, SIM_DEPTH, SIM_SEED)


def test_simulated_spec_behaviours_replay_on_the_model(simulated):
    assert len(simulated) == SIM_COUNT
    steps, mismatches = 0, []
    for number, behaviour in enumerate(simulated):
        try:
            steps += isr_spec.replay(behaviour)
        except isr_spec.ReplayMismatch as mismatch:
            mismatches.append(f"behaviour {number + 1}: {mismatch}")
    assert not mismatches, "\n".join(mismatches)
    # the model took every step of every behaviour (Init excluded)
    assert steps == sum(len(b) - 1 for b in simulated) >= SIM_COUNT * 12
    actions = {a["action"] for b in simulated for a, _ in b[1:]}
    for action in (
        "ElectController",
        "ElectLeader",
        "LeaderAndIsr",
        "Produce",
        "Replicate",
        "AdvanceHighWatermark",
        "ShrinkIsr",
        "ExpandIsr",
        "StepDown",
        "CrashBroker",
        "PauseBroker",
        "ResumeBroker",
        "ExpireSession",
        "StartBroker",
    ):
        assert action in actions, f"no {action} in the simulated behaviours"
    assert any(s["committed"] for b in simulated for _, s in b), "no record committed"
    assert {1, 2} <= {s["controllerEpoch"] for b in simulated for _, s in b}


def test_replay_catches_a_corrupted_behaviour_at_the_step_changed(simulated):
    behaviour = max(simulated, key=len)
    for index in (1, len(behaviour) // 2, len(behaviour) - 1):
        bad = isr_spec.corrupt_behaviour(behaviour, index)
        with pytest.raises(isr_spec.ReplayMismatch) as caught:
            isr_spec.replay(bad)
        assert caught.value.step == index, str(caught.value)
