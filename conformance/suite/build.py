"""Turn a scenario's request step into a reference request, and learn from replies.

Fields a step leaves out are what a client would send: its member id, its generation,
its group instance id (dropped at versions that cannot carry it, as an encoder would), the
protocol the group chose. A field the step gives is sent as given; a field the version
cannot carry is then a scenario error, reported with its line.
"""

from __future__ import annotations

import uuid

from coordspec.conformance.suite import scenario as sc
from coordspec.conformance.suite.symbols import ClientState, Symbols
from coordspec.reference.assignors.leader import encode_assignments
from coordspec.reference.consumer_protocol import Subscription, encode_subscription
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import requests as rq
from coordspec.reference.group.consumer.heartbeat import CLIENT_MEMBER_ID_VERSION
from coordspec.reference.group.records import TopicPartitions
from coordspec.reference.group.responses import (
    ConsumerGroupHeartbeatResponse,
    JoinGroupResponse,
    Response,
)
from coordspec.reference.wire.versions import INSTANCE_ID_SINCE


def partition_of(name: str) -> tuple[str, int]:
    match = sc.PARTITION.match(name)
    return match["topic"], int(match["partition"])


def build(
    step: sc.RequestStep, version: int, request_id: int, now_ms: int, symbols: Symbols
) -> rq.Request:
    client = symbols.clients[step.client]
    f = step.fields
    given = f.model_fields_set
    r = symbols.resolve

    def member_id() -> str:
        return r(f.member_id) if f.member_id is not None else client.member_id

    def instance_id() -> str | None:
        if "group_instance_id" in given:
            return r(f.group_instance_id)
        return client.group_instance_id if version >= INSTANCE_ID_SINCE[step.api] else None

    def generation() -> int:
        return r(f.generation_id) if f.generation_id is not None else client.generation_id

    def commit_generation() -> int:
        """A consumer group's member commits with its member epoch (CG-60)."""
        if f.generation_id is None and client.member_epoch > 0:
            return client.member_epoch
        return generation()

    envelope = (request_id, version, now_ms)
    if step.api == "JoinGroup":
        if "group_instance_id" in given:
            client.group_instance_id = r(f.group_instance_id)
        return rq.JoinGroup(
            *envelope,
            group_id=r(f.group_id),
            session_timeout_ms=r(f.session_timeout_ms),
            rebalance_timeout_ms=r(f.rebalance_timeout_ms),
            member_id=member_id(),
            group_instance_id=instance_id(),
            protocol_type=f.protocol_type,
            protocols=tuple(_protocol(p, f.topics) for p in f.protocols),
            reason=f.reason,
            client_id=f.client_id if f.client_id is not None else client.name,
        )
    if step.api == "SyncGroup":
        assignments = {}
        for member, partitions in (f.assignments or {}).items():
            assignments.update(
                encode_assignments({r(member): [partition_of(p) for p in partitions]})
            )
        return rq.SyncGroup(
            *envelope,
            group_id=r(f.group_id),
            generation_id=generation(),
            member_id=member_id(),
            group_instance_id=instance_id(),
            protocol_type=f.protocol_type if version >= 5 or "protocol_type" in given else None,
            protocol_name=r(f.protocol_name)
            if "protocol_name" in given
            else client.protocol_name
            if version >= 5
            else None,
            assignments=tuple(rq.Assignment(m, a) for m, a in assignments.items()),
        )
    if step.api == "Heartbeat":
        return rq.Heartbeat(
            *envelope,
            group_id=r(f.group_id),
            generation_id=generation(),
            member_id=member_id(),
            group_instance_id=instance_id(),
        )
    if step.api == "LeaveGroup":
        if f.members is None:
            members = (rq.MemberIdentity(client.member_id, instance_id()),)
        else:
            members = tuple(
                rq.MemberIdentity(r(m.member_id), r(m.group_instance_id), m.reason)
                for m in f.members
            )
        return rq.LeaveGroup(*envelope, group_id=r(f.group_id), members=members)
    if step.api in ("OffsetCommit", "TxnOffsetCommit"):
        topics: dict[str, list[rq.CommitPartition]] = {}
        for name, value in f.offsets.items():
            topic, partition = partition_of(name)
            commit = value if isinstance(value, sc.CommitOffset) else sc.CommitOffset(offset=value)
            topics.setdefault(topic, []).append(
                rq.CommitPartition(partition, commit.offset, commit.leader_epoch, commit.metadata)
            )
        committed = tuple(rq.CommitTopic(t, tuple(ps)) for t, ps in topics.items())
    if step.api == "TxnOffsetCommit":
        # Below v3 the request has no member fields (KIP-447 added them).
        member = version >= INSTANCE_ID_SINCE["TxnOffsetCommit"]
        return rq.TxnOffsetCommit(
            *envelope,
            transactional_id=f.transactional_id,
            group_id=r(f.group_id),
            producer_id=f.producer_id,
            producer_epoch=f.producer_epoch,
            generation_id=commit_generation() if member else -1,
            member_id=member_id() if member else "",
            group_instance_id=instance_id(),
            topics=committed,
        )
    if step.api == "OffsetCommit":
        return rq.OffsetCommit(
            *envelope,
            group_id=r(f.group_id),
            generation_id=commit_generation(),
            member_id=member_id(),
            group_instance_id=instance_id(),
            retention_time_ms=f.retention_time_ms,
            topics=committed,
        )
    if step.api == "OffsetFetch":
        if f.groups is None:
            return rq.OffsetFetch(
                *envelope,
                group_id=r(f.group_id),
                topics=_fetched(f.partitions),
                require_stable=f.require_stable,
            )
        first, *others = (
            rq.FetchGroup(r(g.group_id), _fetched(g.partitions), r(g.member_id), g.member_epoch)
            for g in f.groups
        )
        return rq.OffsetFetch(
            *envelope,
            group_id=first.group_id,
            topics=first.topics,
            require_stable=f.require_stable,
            member_id=first.member_id,
            member_epoch=first.member_epoch,
            other_groups=tuple(others),
        )
    if step.api == "OffsetDelete":
        deleted = tuple(
            rq.OffsetDeleteTopic(t, tuple(rq.OffsetDeletePartition(p) for p in ps))
            for t, ps in _by_topic(f.partitions).items()
        )
        return rq.OffsetDelete(*envelope, group_id=r(f.group_id), topics=deleted)
    if step.api == "DescribeGroups":
        return rq.DescribeGroups(*envelope, groups=tuple(r(g) for g in f.groups))
    if step.api == "ListGroups":
        return rq.ListGroups(
            *envelope, states_filter=tuple(f.states_filter), types_filter=tuple(f.types_filter)
        )
    if step.api == "ConsumerGroupHeartbeat":
        return _consumer_heartbeat(step, version, envelope, client, symbols)
    if step.api == "ConsumerGroupDescribe":
        return rq.ConsumerGroupDescribe(*envelope, group_ids=tuple(r(g) for g in f.group_ids))
    return rq.DeleteGroups(*envelope, groups_names=tuple(r(g) for g in f.groups))


def _consumer_heartbeat(
    step: sc.RequestStep, version: int, envelope: tuple, client: ClientState, symbols: Symbols
) -> rq.ConsumerGroupHeartbeat:
    """What a KIP-848 consumer sends, where the step does not say: see ConsumerGroupHeartbeatStep."""
    f, r = step.fields, symbols.resolve
    given = f.model_fields_set
    if version >= CLIENT_MEMBER_ID_VERSION and not client.member_id:
        client.member_id = client_member_id(client.name)  # KIP-1082: the client names itself
    if "instance_id" in given:
        client.group_instance_id = r(f.instance_id)
    epoch = r(f.member_epoch) if f.member_epoch is not None else client.member_epoch
    joining = epoch == 0

    def field(name: str, on_join, later):
        return getattr(f, name) if name in given else on_join if joining else later

    owned = field("topic_partitions", [], list(client.assigned))
    by_regex = "subscribed_topic_regex" in given
    names = field("subscribed_topic_names", None if by_regex else ["foo"], None)
    return rq.ConsumerGroupHeartbeat(
        *envelope,
        group_id=r(f.group_id),
        member_id=r(f.member_id) if f.member_id is not None else client.member_id,
        member_epoch=epoch,
        instance_id=client.group_instance_id,
        rebalance_timeout_ms=field("rebalance_timeout_ms", 10_000, -1),
        subscribed_topic_names=None if names is None else tuple(names),
        subscribed_topic_regex=f.subscribed_topic_regex,
        server_assignor=f.server_assignor,
        topic_partitions=None
        if owned is None
        else tuple(TopicPartitions(t, ps) for t, ps in _by_topic(owned).items()),
        client_id=f.client_id if f.client_id is not None else client.name,
    )


def client_member_id(client: str) -> str:
    """A v1+ client's own member id: UUID-like and the same in every run. It starts with the
    client's number, so that c1 < c2 < ... in the string order the assignors follow (SA-5),
    as the ids the reference hands out at v0 are: a scenario's assignments hold at both."""
    rest = str(uuid.uuid5(uuid.NAMESPACE_URL, f"coordspec:{client}"))[8:]
    return f"{int(client[1:]):08x}{rest}"


def _fetched(partitions: list[str] | str) -> tuple[rq.FetchTopic, ...] | None:
    if partitions == "all":
        return None
    return tuple(rq.FetchTopic(t, ps) for t, ps in _by_topic(list(partitions)).items())


def _by_topic(partitions: list[str]) -> dict[str, tuple[int, ...]]:
    by_topic: dict[str, tuple[int, ...]] = {}
    for name in partitions:
        topic, partition = partition_of(name)
        by_topic[topic] = (*by_topic.get(topic, ()), partition)
    return by_topic


def _protocol(spec: str | sc.ProtocolSpec, topics: list[str]) -> rq.Protocol:
    if isinstance(spec, str):
        return rq.Protocol(spec, encode_subscription(Subscription(tuple(topics))))
    if spec.metadata is not None:
        return rq.Protocol(spec.name, spec.metadata.encode())
    return rq.Protocol(spec.name, encode_subscription(Subscription(tuple(spec.topics or topics))))


def learn(client: ClientState, symbols: Symbols, response: Response) -> None:
    """A client keeps the member id it is given, and the generation and protocol it joined;
    a consumer group member its epoch and assignment."""
    if isinstance(response, ConsumerGroupHeartbeatResponse):
        _learn_heartbeat(client, response)
        return
    if not isinstance(response, JoinGroupResponse):
        return
    if response.member_id:
        client.member_id = response.member_id
    if response.error_code == ErrorCode.NONE:
        client.generation_id = response.generation_id
        client.protocol_name = response.protocol_name or None
        symbols.generation = response.generation_id


def _learn_heartbeat(client: ClientState, response: ConsumerGroupHeartbeatResponse) -> None:
    """As a KIP-848 consumer: a member fenced or gone gives up its partitions and joins again
    with epoch 0 (keeping its member id); otherwise it takes its epoch, and its assignment
    when the answer carries one."""
    if response.error_code in _REJOIN or (
        response.error_code == ErrorCode.NONE and response.member_epoch < 0
    ):
        client.member_epoch, client.assigned = 0, ()
        return
    if response.error_code != ErrorCode.NONE:
        return
    if response.member_id:
        client.member_id = response.member_id
    client.member_epoch = response.member_epoch
    if response.assignment is not None:
        client.assigned = tuple(
            f"{t.topic_id}-{p}" for t in response.assignment for p in t.partitions
        )


# The errors after which Kafka's consumer leaves its partitions and joins again.
_REJOIN = frozenset({ErrorCode.FENCED_MEMBER_EPOCH, ErrorCode.UNKNOWN_MEMBER_ID})
