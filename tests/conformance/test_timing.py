"""GM-36, TimersFireOnTime: an answer the reference allows, but later than the reference's
deadline plus the tolerance, is a timing divergence, in ``coordspec trace check`` and in
``coordspec conform`` alike (issue 21: cluster brokers once fired group timers seconds to
minutes late, and every check passed)."""

from __future__ import annotations

import asyncio
import io
import json
import time
from pathlib import Path

from coordspec.broker.group_service import GroupService
from coordspec.broker.log.topics import TopicStore
from coordspec.broker.trace import Trace
from coordspec.conformance.cli.trace import main
from coordspec.conformance.suite import run
from coordspec.conformance.suite.oracle import TIMING_TOLERANCE_MS, Oracle
from coordspec.conformance.suite.reference_target import ReferenceTarget
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import GroupConfig, JoinGroup, Protocol
from coordspec.reference.group.responses import JoinGroupResponse

DELAY_MS = 300  # group.initial.rebalance.delay.ms of the broker below
LATE_MS = 2 * TIMING_TOLERANCE_MS  # how late the old cluster brokers' timers fired, at least


def late_timers(service: GroupService, late_ms: int) -> None:
    """The old cluster brokers' defect in the single broker's group service: its driver arms
    each group timer ``late_ms`` after the coordinator's deadline."""
    due = service.coordinator.next_deadline_ms
    service.driver._next_deadline_ms = lambda: None if (d := due()) is None else d + late_ms


def broker_trace(tmp_path: Path, late_ms: int) -> Path:
    """A member joins a new group through the real group service, which writes its trace;
    its JoinGroup is answered when the initial rebalance delay ends (``late_ms`` after)."""
    path, data = tmp_path / "trace.jsonl", tmp_path / "data"
    data.mkdir()

    async def join() -> float:
        trace = Trace(path, 1, int(time.time() * 1000))
        service = GroupService(
            TopicStore(data),
            1,
            GroupConfig(initial_rebalance_delay_ms=DELAY_MS),
            trace,
        )
        if late_ms:
            late_timers(service, late_ms)
        service.start()

        def joining(member_id: str):
            return lambda rid, now: JoinGroup(
                rid, 9, now, group_id="g", member_id=member_id, protocols=(Protocol("range", b""),)
            )

        first = await service.call("c1", joining(""))
        assert first.error_code == ErrorCode.MEMBER_ID_REQUIRED
        started = time.monotonic()
        second = await service.call("c1", joining(first.member_id))
        answered = time.monotonic() - started
        assert second.error_code == ErrorCode.NONE and second.generation_id == 1
        await service.stop()
        trace.close()
        return answered

    assert asyncio.run(join()) >= (DELAY_MS + late_ms) / 1000 - 0.01
    return path


def trace_check(path: Path, capsys, *options: str) -> tuple[int, str]:
    code = main(
        [
            "check",
            str(path),
            "--broker-setting",
            f"group.initial.rebalance.delay.ms={DELAY_MS}",
            *options,
        ]
    )
    return code, capsys.readouterr().out


def test_a_broker_whose_timers_fire_late_is_reported_by_trace_check(tmp_path, capsys):
    code, out = trace_check(broker_trace(tmp_path, LATE_MS), capsys)
    assert code == 1, out
    first = out.splitlines()[0]
    assert first.startswith("VIOLATION GM-36, invariant TimersFireOnTime: group g ")
    assert "JoinGroup v9 from c1" in first
    detail = out.splitlines()[1].strip()
    late = int(detail.split(" answered ")[1].split(" ms")[0].replace(",", ""))
    assert LATE_MS <= late < LATE_MS + 500, detail
    assert (
        "after the reference's deadline (CompleteJoin at the end of "
        "group.initial.rebalance.delay.ms, due at t=" in detail
    )
    assert detail.endswith(f"; tolerance {TIMING_TOLERANCE_MS:,} ms)")
    assert out.splitlines()[-1].startswith("1 violation (1 timing): ")
    # A tolerance stated wider than the lateness lets it pass.
    assert trace_check(tmp_path / "trace.jsonl", capsys, "--timing-tolerance-ms", "60000")[0] == 0


def test_the_same_join_on_time_passes(tmp_path, capsys):
    code, out = trace_check(broker_trace(tmp_path, 0), capsys)
    assert code == 0, out
    assert out.splitlines()[-1].startswith("no violations: ")


def test_timers_due_in_a_pause_of_the_coordinator_may_fire_when_it_resumes(tmp_path, capsys):
    path = broker_trace(tmp_path, LATE_MS)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    answer = next(
        r for r in lines if r["kind"] == "response" and r["fields"]["error_code"] == ErrorCode.NONE
    )
    asked = next(
        r
        for r in lines
        if r["kind"] == "request" and r["correlation_id"] == answer["correlation_id"]
    )
    pause = {**answer, "kind": "fault", "fault": "pause", "down_ms": asked["t_ms"]}
    for name in ("client", "api", "api_key", "api_version", "correlation_id", "fields"):
        del pause[name]
    pause["t_ms"] = answer["t_ms"] - 10  # it resumed just before it answered
    path.write_text("".join(json.dumps(r) + "\n" for r in [*lines, pause]))
    code, out = trace_check(path, capsys)
    assert code == 0, out


def test_an_answer_before_the_deadline_is_still_a_disagreement(tmp_path, capsys):
    """Early is not timing: the reference has not answered yet, so no outcome allows it."""
    path = broker_trace(tmp_path, 0)
    lines = [json.loads(line) for line in path.read_text().splitlines()]
    answer = next(
        r for r in lines if r["kind"] == "response" and r["fields"]["error_code"] == ErrorCode.NONE
    )
    asked = next(
        r
        for r in lines
        if r["kind"] == "request" and r["correlation_id"] == answer["correlation_id"]
    )
    answer["t_ms"] = asked["t_ms"] + 10
    path.write_text("".join(json.dumps(r) + "\n" for r in lines))
    code, out = trace_check(path, capsys)
    assert code == 1 and out.startswith("VIOLATION GM-10: group g ")
    assert "the reference has not answered yet" in out


class LateTimersTarget(ReferenceTarget):
    """The reference target whose session fires every timer ``late_ms`` after its deadline,
    as the old cluster brokers did: replies a timer gives reach the clients that late."""

    name = "late-timers"

    def __init__(self, late_ms: int) -> None:
        super().__init__()
        self.late_ms = late_ms

    async def open(self, group_id, config, **options):
        session = await super().open(group_id, config, **options)
        due, late_ms = session.coordinator.next_deadline_ms, self.late_ms
        session.coordinator.next_deadline_ms = lambda: None if (d := due()) is None else d + late_ms
        return session


SCENARIO = """\
checks: the first member of a group is answered when the initial rebalance delay ends
rules: [GM-10]
versions: {JoinGroup: 9}
clients: [c1]
steps:
  - c1: JoinGroup
    expect: {error: MEMBER_ID_REQUIRED}
  - c1: JoinGroup
    member_id: $m1
    expect: parked
  - await: c1
    within: 8000
    expect: {error: NONE, generation_id: 1}
"""


def test_conform_reports_a_late_answer_as_a_timing_failure(tmp_path):
    path = tmp_path / "late-join.yaml"
    path.write_text(SCENARIO)
    outcome = run(LateTimersTarget(LATE_MS), scenarios=[path], report=tmp_path, out=io.StringIO())
    failure = outcome.results[0].failure
    assert outcome.exit_code == 1 and failure is not None
    assert (failure.kind, failure.step, failure.api) == ("timing", 3, "JoinGroup")
    assert failure.rules == ("GM-36", "GM-10")
    assert failure.message == (
        f"TimersFireOnTime: JoinGroup answered {LATE_MS:,} ms after the reference's deadline "
        "(CompleteJoin at the end of group.initial.rebalance.delay.ms, due at t=3,000 ms; "
        f"tolerance {TIMING_TOLERANCE_MS:,} ms)"
    )
    assert "step 3 (timing): TimersFireOnTime" in (tmp_path / "conformance.md").read_text()


def test_no_answer_by_the_deadline_is_told_apart_from_a_late_one():
    """Silence says when the reference answered, and on what; it is not a timing divergence."""
    oracle = Oracle(GroupConfig())
    joining = dict(group_id="g", protocols=(Protocol("range", b""),))
    oracle.request("c1", JoinGroup(1, 9, 0, member_id="", **joining))
    assert (
        oracle.response("c1", JoinGroupResponse(ErrorCode.MEMBER_ID_REQUIRED, member_id="m"), 0)
        is None
    )
    oracle.request("c1", JoinGroup(2, 9, 0, member_id="m", **joining))
    assert oracle.silence("c1", 2_999) is None
    silent = oracle.silence("c1", 8_000)
    assert silent is not None and silent.kind == "outcome"
    assert silent.message == (
        "the broker has not answered by t=8,000 ms; the reference answered at t=3,000 ms "
        "(CompleteJoin at the end of group.initial.rebalance.delay.ms, due at t=3,000 ms)"
    )


def test_conform_on_time_passes(tmp_path):
    path = tmp_path / "late-join.yaml"
    path.write_text(SCENARIO)
    outcome = run(LateTimersTarget(0), scenarios=[path], out=io.StringIO())
    assert outcome.exit_code == 0, outcome.results[0].reason
