"""The simulated consumers: what a consumer sends next, and what it makes of an answer.
Shared by the one-coordinator simulator and the cluster simulator."""

from __future__ import annotations

import random
from dataclasses import dataclass

from coordspec.reference.consumer_protocol import Assignment as Owned
from coordspec.reference.consumer_protocol import (
    Subscription,
    TopicPartitions,
    encode_assignment,
    encode_subscription,
)
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import json_values
from coordspec.reference.group.requests import (
    API_KEYS,
    Assignment,
    CommitPartition,
    CommitTopic,
    Heartbeat,
    JoinGroup,
    LeaveGroup,
    MemberIdentity,
    OffsetCommit,
    Protocol,
    SyncGroup,
)

TOPIC, PARTITIONS = "foo", 6
SOURCE = "simulate"
_SUBSCRIPTION = encode_subscription(Subscription((TOPIC,)))


@dataclass
class Client:
    name: str
    member_id: str = ""
    generation: int = -1
    phase: str = "join"  # join, sync, stable
    leader: bool = False
    members: tuple[str, ...] = ()
    crashed: bool = False
    waiting: bool = False
    offset: int = 0


def request_for(c: Client, group: str, request_id: int, now: int, rng: random.Random):
    """The next request of a consumer in ``c.phase``, as a consumer sends it."""
    common = {"group_id": group}
    if c.phase == "join":
        return JoinGroup(
            request_id,
            9,
            now,
            **common,
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            member_id=c.member_id,
            protocols=(Protocol("range", _SUBSCRIPTION),),
            client_id=c.name,
        )
    member = {**common, "generation_id": c.generation, "member_id": c.member_id}
    if c.phase == "sync":
        return SyncGroup(
            request_id,
            5,
            now,
            **member,
            protocol_type="consumer",
            protocol_name="range",
            assignments=assign(c.members) if c.leader else (),
        )
    roll = rng.random()
    if roll < 0.05:
        return LeaveGroup(
            request_id, 5, now, group_id=group, members=(MemberIdentity(c.member_id),)
        )
    if roll < 0.5:
        c.offset += rng.randrange(1, 50)
        partitions = tuple(CommitPartition(p, c.offset) for p in range(PARTITIONS))
        if (
            roll < 0.1 and c.generation > 1
        ):  # a commit delayed past a rebalance carries the generation before
            member["generation_id"] = c.generation - 1
        return OffsetCommit(request_id, 9, now, **member, topics=(CommitTopic(TOPIC, partitions),))
    return Heartbeat(request_id, 4, now, **member)


def assign(members: tuple[str, ...]) -> tuple[Assignment, ...]:
    return tuple(
        Assignment(
            m,
            encode_assignment(
                Owned((TopicPartitions(TOPIC, tuple(range(i, PARTITIONS, len(members)))),))
            ),
        )
        for i, m in enumerate(members)
    )


def message(request, response=None) -> dict:
    """A request's (or its response's) fields of a trace record."""
    return {
        "api": request.api,
        "api_key": API_KEYS[request.api],
        "api_version": request.api_version,
        "correlation_id": int(request.request_id),
        "fields": json_values.request_fields(request)
        if response is None
        else json_values.encode(response),
    }


def learn(c: Client, request, response) -> None:
    """What a consumer does with an answer."""
    error = getattr(response, "error_code", None)
    if error is None:  # OffsetCommit: the first partition's error stands for the group's
        error = response.topics[0].partitions[0].error_code if response.topics else ErrorCode.NONE
    if isinstance(request, LeaveGroup) or error in (
        ErrorCode.UNKNOWN_MEMBER_ID,
        ErrorCode.FENCED_INSTANCE_ID,
    ):
        c.member_id, c.phase = "", "join"
    elif isinstance(request, JoinGroup):
        if error == ErrorCode.MEMBER_ID_REQUIRED:
            c.member_id = response.member_id
        elif error == ErrorCode.NONE:
            c.member_id, c.generation, c.phase = response.member_id, response.generation_id, "sync"
            c.leader = response.leader == response.member_id
            c.members = tuple(m.member_id for m in response.members)
    elif isinstance(request, SyncGroup):
        c.phase = "stable" if error == ErrorCode.NONE else "join"
    elif error in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION):
        c.phase = "join"


def run_name(seed: int, options) -> str:
    """A simulated run's name: its seed, and the invocation's token (two invocations with the
    same seeds must not give one run)."""
    return f"sim-{seed}-{options.token}" if options.token else f"sim-{seed}"
