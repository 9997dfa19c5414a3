"""The ``coordinator:`` steps (ResignCoordinator, BecomeCoordinator, LoadGroup): the oracle
catches a broker that gets the coordinator's lifecycle wrong (CF-2, CF-5, CF-7, GM-43), the
loader refuses steps out of order, and a target that cannot take them does not run them."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

import pytest

from coordspec.conformance.suite import run
from coordspec.conformance.suite.loader import SCENARIO_DIR, ScenarioError, load
from coordspec.conformance.suite.reference_target import ReferenceSession, ReferenceTarget
from coordspec.conformance.suite.target import CATALOG_TOPICS
from coordspec.reference.choices import SeededChoices
from coordspec.reference.errors import ErrorCode


class ServesAtOnce(ReferenceSession):
    """Serves the group from its log as soon as it leads the partition, before loading."""

    async def become_coordinator(self) -> None:
        await self.restart()


class RebalancesParkedRequests(ReferenceSession):
    """Answers the parked requests REBALANCE_IN_PROGRESS when it resigns."""

    async def resign_coordinator(self) -> None:
        await super().resign_coordinator()
        for inbox in self.inbox.values():
            inbox.extend(
                (dataclasses.replace(r, error_code=ErrorCode.REBALANCE_IN_PROGRESS), at)
                for r, at in [inbox.popleft() for _ in range(len(inbox))]
            )


class KeepsServing(ReferenceSession):
    """Goes on answering for the group after it resigned."""

    async def resign_coordinator(self) -> None:
        pass

    async def become_coordinator(self) -> None:
        pass


class BuggyTarget(ReferenceTarget):
    def __init__(self, session: type[ReferenceSession], moves_coordinator: bool = True) -> None:
        super().__init__()
        self.name = session.__name__
        self.session = session
        self.moves_coordinator = moves_coordinator

    async def open(self, group_id, config, *, faults=False):
        return self.session(config, SeededChoices(0, arbitrary=True), CATALOG_TOPICS)


def failure_of(target: ReferenceTarget, name: str):
    outcome = run(
        target,
        scenarios=[SCENARIO_DIR / f"{name}.yaml"],
        version_selection="latest",
        out=io.StringIO(),
    )
    (result,) = outcome.results
    assert result.status == "failed"
    return result.failure


def test_a_broker_that_serves_before_loading_is_caught():
    failure = failure_of(BuggyTarget(ServesAtOnce), "commit-while-loading")
    assert failure.kind == "oracle" and failure.step == 4
    assert "expected COORDINATOR_LOAD_IN_PROGRESS" in failure.message


def test_a_broker_that_answers_a_parked_join_otherwise_on_resigning_is_caught():
    failure = failure_of(BuggyTarget(RebalancesParkedRequests), "unload-answers-parked-join")
    assert failure.kind == "oracle" and failure.step == 4
    assert "expected NOT_COORDINATOR" in failure.message


def test_a_broker_that_answers_after_resigning_is_caught():
    failure = failure_of(BuggyTarget(KeepsServing), "not-coordinator-after-resigning")
    assert failure.kind == "oracle" and failure.step == 6
    assert "expected NOT_COORDINATOR" in failure.message


def test_a_target_that_cannot_move_its_coordinator_does_not_run_the_steps():
    target = BuggyTarget(ReferenceSession, moves_coordinator=False)
    outcome = run(
        target,
        scenarios=[SCENARIO_DIR / "commit-while-loading.yaml"],
        version_selection="latest",
        out=io.StringIO(),
    )
    (result,) = outcome.results
    assert result.status == "not_run" and "(coordinator: ...)" in result.reason


HEAD = "checks: the coordinator's lifecycle\nrules: [CF-7]\nclients: [c1]\nsteps:\n"


@pytest.mark.parametrize(
    ("steps", "line", "message"),
    [
        (
            "  - coordinator: LoadGroup\n",
            5,
            "coordinator: LoadGroup must follow BecomeCoordinator, not LoadGroup",
        ),
        (
            "  - coordinator: ResignCoordinator\n  - coordinator: ResignCoordinator\n",
            6,
            "coordinator: ResignCoordinator must follow LoadGroup, not ResignCoordinator",
        ),
        (
            "  - coordinator: ResignCoordinator\n  - fault: restart\n",
            6,
            "fault: the broker is not serving the group after coordinator: ResignCoordinator",
        ),
        (
            (
                "  - c1: JoinGroup\n    expect: parked\n  - coordinator: ResignCoordinator\n"
                "  - coordinator: BecomeCoordinator\n  - coordinator: LoadGroup\n"
            ),
            9,
            "coordinator: LoadGroup while c1's JoinGroup is parked; await it first",
        ),
        (
            "  - coordinator: ResignCoordinator\n  - c1: TxnOffsetCommit\n",
            6,
            "TxnOffsetCommit: the broker is not serving the group after coordinator: Resign",
        ),
        ("  - coordinator: Elect\n", 5, "coordinator: coordinator: Input should be"),
    ],
)
def test_steps_out_of_order_are_one_line(tmp_path: Path, steps, line, message):
    path = tmp_path / "lifecycle.yaml"
    path.write_text(HEAD + steps)
    with pytest.raises(ScenarioError) as caught:
        load(path)
    assert caught.value.line == line
    assert message in str(caught.value) and "\n" not in str(caught.value)
