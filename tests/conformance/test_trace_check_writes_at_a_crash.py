"""A crash with a write in flight: the trace checker allows the write to be lost or kept.

A coordinator that crashes between appending a request's records and answering it may or
may not have them in its log (not yet on disk, or, on a cluster, not yet on the replica that
takes over), and the group the next coordinator loads differs accordingly. A write whose
answer the broker gave is durable, with every write before it. The traces here are one
consumer's: it joins, syncs, commits offset 5 (answered), sends a commit of offset 9 that
the coordinator crash leaves unanswered, and fetches its offset from the reloaded group.
The broker's side is the reference itself, loading the log the case says survived.
"""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest

from coordspec.conformance.tracecheck.check import check_files
from coordspec.conformance.tracecheck.replay import Settings
from coordspec.reference.choices import SeededChoices
from coordspec.reference.group import GroupConfig, GroupCoordinator, LoadGroups, Tick, json_values
from coordspec.reference.group.effects import AppendRecords, Reply
from coordspec.reference.group.requests import (
    API_KEYS,
    CommitPartition,
    CommitTopic,
    FetchTopic,
    JoinGroup,
    OffsetCommit,
    OffsetFetch,
    Protocol,
    SyncGroup,
)

GROUP = "g"


class Broker:
    """The reference as the traced broker: every exchange becomes two trace lines."""

    def __init__(self) -> None:
        self.coordinator = GroupCoordinator(GroupConfig(), SeededChoices(seed=1))
        self.lines: list[dict] = []
        self.writes: list[tuple] = []  # each append's records, in log order
        self.ids = 0

    def line(self, t_ms: int, **record) -> None:
        self.lines.append(
            {
                "v": 1,
                "source": "test",
                "run": "crash",
                "scenario": None,
                "group_id": GROUP,
                "ts_ms": 0,
                "t_ms": t_ms,
                **record,
            }
        )

    def send(
        self,
        t_ms: int,
        request_type,
        *,
        answer_at_ms: int | None = None,
        answered: bool = True,
        **fields,
    ):
        self.ids += 1
        request = request_type(self.ids, 5, t_ms, group_id=GROUP, **fields)
        self.line(
            t_ms,
            kind="request",
            client="c1",
            api=request.api,
            api_key=API_KEYS[request.api],
            api_version=5,
            correlation_id=self.ids,
            fields=json_values.request_fields(request),
        )
        replies = self._effects(self.coordinator.handle(request))
        if answer_at_ms is not None:
            replies += self._effects(self.coordinator.handle(Tick(answer_at_ms)))
        (response,) = [r.response for r in replies if r.request_id == request.request_id]
        if answered:
            self.line(
                answer_at_ms or t_ms,
                kind="response",
                client="c1",
                api=request.api,
                api_key=API_KEYS[request.api],
                api_version=5,
                correlation_id=self.ids,
                fields=json_values.encode(response),
            )
        return response

    def _effects(self, effects) -> list[Reply]:
        self.writes += [e.records for e in effects if isinstance(e, AppendRecords)]
        return [e for e in effects if isinstance(e, Reply)]

    def restart(self, t_ms: int, surviving_writes: int) -> None:
        """The coordinator crashes and loads the first ``surviving_writes`` appends of its log."""
        self.line(t_ms, kind="fault", fault="restart")
        self.coordinator = GroupCoordinator(GroupConfig(), SeededChoices(seed=2), now_ms=t_ms)
        self.coordinator.handle(
            LoadGroups(tuple(r for w in self.writes[:surviving_writes] for r in w), t_ms)
        )


def committed_offset(response) -> int:
    return response.topics[0].partitions[0].committed_offset


def trace(tmp_path: Path, surviving_writes_after_the_answered_commit: int) -> tuple[Path, int]:
    """The trace of the case, and the offset the reloaded coordinator fetched."""
    broker = Broker()
    joined = broker.send(
        0, JoinGroup, rebalance_timeout_ms=10_000, protocols=(Protocol("range"),)
    )  # MEMBER_ID_REQUIRED, with the id
    joined = broker.send(
        0,
        JoinGroup,
        answer_at_ms=3000,
        rebalance_timeout_ms=10_000,
        member_id=joined.member_id,
        protocols=(Protocol("range"),),
    )
    member, generation = joined.member_id, joined.generation_id
    broker.send(
        3000,
        SyncGroup,
        generation_id=generation,
        member_id=member,
        protocol_type="consumer",
        protocol_name="range",
        assignments=(),
    )

    def commit(t_ms: int, offset: int, answered: bool) -> None:
        broker.send(
            t_ms,
            OffsetCommit,
            answered=answered,
            generation_id=generation,
            member_id=member,
            topics=(CommitTopic("t", (CommitPartition(0, offset),)),),
        )

    commit(3001, 5, answered=True)
    answered_writes = len(broker.writes)
    commit(3002, 9, answered=False)  # in flight when the coordinator crashes
    assert len(broker.writes) == answered_writes + 1
    broker.restart(3003, answered_writes + surviving_writes_after_the_answered_commit)
    fetched = broker.send(3004, OffsetFetch, topics=(FetchTopic("t", (0,)),))
    path = tmp_path / "trace.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in broker.lines))
    return path, committed_offset(fetched)


def violations(path: Path) -> list[dict]:
    return check_files([path], Settings(), out=io.StringIO()).violations


@pytest.mark.parametrize("survived", [0, 1], ids=["write-lost", "write-kept"])
def test_a_write_in_flight_at_the_crash_may_be_lost_or_kept(tmp_path, survived):
    path, fetched = trace(tmp_path, survived)
    assert fetched == (9 if survived else 5)
    assert violations(path) == []


def test_an_answered_write_lost_at_the_crash_is_a_violation(tmp_path):
    path, fetched = trace(tmp_path, -1)  # the answered commit of 5 is gone too
    assert fetched == -1
    (violation,) = violations(path)
    assert violation["api"] == "OffsetFetch" and violation["line"] == len(
        path.read_text().splitlines()
    )
