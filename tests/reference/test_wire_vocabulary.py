"""The Kafka wire vocabulary of the group APIs (reference/wire), in h11's SIMPLE_CASES shape.

Each case pairs a reference value with the kio value it stands for, at one version: the
request, and the response to it. Every case runs at every version the reference answers,
in both directions: reference -> kio -> reference and kio -> reference -> kio are the
identity, and each side maps to the other. The kio side is written as the mapping
``build`` fits to the version's schema (a field the version lacks is left out).
"""

from __future__ import annotations

import dataclasses
import uuid
from collections.abc import Callable
from typing import Any

import kio.index
import pytest

from coordspec.reference.errors import ErrorCode, UsageError
from coordspec.reference.group import requests as rq
from coordspec.reference.group import responses as rs
from coordspec.reference.group.records import TopicPartitions
from coordspec.reference.group.requests import API_KEYS, VERSIONS
from coordspec.reference.wire.entities import build, type_hints
from coordspec.reference.wire.group_apis import (
    Envelope,
    TopicIds,
    merged,
    one_per_group,
    request_from_kio,
    request_to_kio,
    response_from_kio,
    response_values,
)
from coordspec.reference.wire.versions import INSTANCE_ID_SINCE

E = ErrorCode
ID, NOW, CLIENT_ID, HOST = 7, 1_000, "app-1", "/10.0.0.1"
FOO, BAR = uuid.UUID(int=1), uuid.UUID(int=2)
IDS = TopicIds({"foo": FOO, "bar": BAR})  # the consumer group's APIs name topics by id


@dataclasses.dataclass(frozen=True)
class Case:
    """One exchange at one version: the reference's side and kio's side of each message."""

    request: rq.Request
    kio_request: dict[str, Any]
    response: rs.Response
    kio_response: dict[str, Any]


def join_group(v: int) -> Case:
    request = rq.JoinGroup(
        ID,
        v,
        NOW,
        group_id="g",
        session_timeout_ms=10_000,
        rebalance_timeout_ms=30_000 if v >= 1 else -1,
        member_id="m",
        group_instance_id="i" if v >= 5 else None,
        protocol_type="consumer",
        protocols=(rq.Protocol("range", b"\x01"), rq.Protocol("sticky", b"")),
        reason="joining" if v >= 8 else None,
        client_id=CLIENT_ID,
        client_host=HOST,
    )
    kio_request = {
        "group_id": "g",
        "session_timeout": 10_000,
        "rebalance_timeout": 30_000,
        "member_id": "m",
        "group_instance_id": "i",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b"\x01"}, {"name": "sticky", "metadata": b""}],
        "reason": "joining",
    }
    response = rs.JoinGroupResponse(
        E.NONE,
        generation_id=3,
        protocol_type="consumer",
        protocol_name="range",
        leader="m",
        skip_assignment=v >= 9,
        member_id="m",
        members=(rs.JoinGroupMember("m", "i", b"\x01"),),
    ).at_version(v)
    kio_response = {
        "error_code": 0,
        "generation_id": 3,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "leader": "m",
        "skip_assignment": v >= 9,
        "member_id": "m",
        "members": [{"member_id": "m", "group_instance_id": "i", "metadata": b"\x01"}],
    }
    return Case(request, kio_request, response, kio_response)


def join_group_refused(v: int) -> Case:
    """A first join: no member id yet, and an error answer with the defaults."""
    request = rq.JoinGroup(
        ID, v, NOW, group_id="g", protocols=(), client_id=CLIENT_ID, client_host=HOST
    )
    kio_request = {
        "group_id": "g",
        "session_timeout": 10_000,
        "rebalance_timeout": -1,
        "member_id": "",
        "group_instance_id": None,
        "protocol_type": "consumer",
        "protocols": [],
        "reason": None,
    }
    response = rs.JoinGroupResponse(E.MEMBER_ID_REQUIRED, member_id="m-1").at_version(v)
    kio_response = {
        "error_code": int(E.MEMBER_ID_REQUIRED),
        "generation_id": -1,
        "protocol_type": None,
        "protocol_name": None if v >= 7 else "",
        "leader": "",
        "member_id": "m-1",
        "members": [],
    }
    return Case(request, kio_request, response, kio_response)


def sync_group(v: int) -> Case:
    request = rq.SyncGroup(
        ID,
        v,
        NOW,
        group_id="g",
        generation_id=3,
        member_id="m",
        group_instance_id="i" if v >= 3 else None,
        protocol_type="consumer" if v >= 5 else None,
        protocol_name="range" if v >= 5 else None,
        assignments=(rq.Assignment("m", b"\x02"), rq.Assignment("n", b"")),
    )
    kio_request = {
        "group_id": "g",
        "generation_id": 3,
        "member_id": "m",
        "group_instance_id": "i",
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignments": [
            {"member_id": "m", "assignment": b"\x02"},
            {"member_id": "n", "assignment": b""},
        ],
    }
    response = rs.SyncGroupResponse(E.NONE, "consumer", "range", b"\x02").at_version(v)
    kio_response = {
        "error_code": 0,
        "protocol_type": "consumer",
        "protocol_name": "range",
        "assignment": b"\x02",
    }
    return Case(request, kio_request, response, kio_response)


def heartbeat(v: int) -> Case:
    request = rq.Heartbeat(
        ID,
        v,
        NOW,
        group_id="g",
        generation_id=3,
        member_id="m",
        group_instance_id="i" if v >= 3 else None,
    )
    kio_request = {"group_id": "g", "generation_id": 3, "member_id": "m", "group_instance_id": "i"}
    response = rs.HeartbeatResponse(E.REBALANCE_IN_PROGRESS)
    return Case(request, kio_request, response, {"error_code": int(E.REBALANCE_IN_PROGRESS)})


def leave_group(v: int) -> Case:
    if v >= 3:
        members = (
            rq.MemberIdentity("m", "i", "bye" if v >= 5 else None),
            rq.MemberIdentity("n", None, None),
        )
    else:  # one member id at the top level
        members = (rq.MemberIdentity("m"),)
    request = rq.LeaveGroup(ID, v, NOW, group_id="g", members=members)
    kio_request = {
        "group_id": "g",
        "member_id": "m",
        "members": [
            {"member_id": "m", "group_instance_id": "i", "reason": "bye"},
            {"member_id": "n", "group_instance_id": None, "reason": None},
        ],
    }
    response = rs.LeaveGroupResponse(
        E.NONE,
        (
            rs.LeaveMemberResponse("m", "i", E.NONE),
            rs.LeaveMemberResponse("n", None, E.UNKNOWN_MEMBER_ID),
        ),
    ).at_version(v)
    kio_response = {
        "error_code": 0,
        "members": [
            {"member_id": "m", "group_instance_id": "i", "error_code": 0},
            {"member_id": "n", "group_instance_id": None, "error_code": int(E.UNKNOWN_MEMBER_ID)},
        ],
    }
    return Case(request, kio_request, response, kio_response)


def offset_commit(v: int) -> Case:
    request = rq.OffsetCommit(
        ID,
        v,
        NOW,
        group_id="g",
        generation_id=3,
        member_id="m",
        group_instance_id="i" if v >= 7 else None,
        retention_time_ms=5_000 if v <= 4 else -1,
        topics=(
            rq.CommitTopic(
                "foo",
                (
                    rq.CommitPartition(0, 42, 7 if v >= 6 else -1, "meta"),
                    rq.CommitPartition(1, 43, 7 if v >= 6 else -1, None),
                ),
            ),
        ),
    )
    kio_request = {
        "group_id": "g",
        "generation_id_or_member_epoch": 3,
        "member_id": "m",
        "group_instance_id": "i",
        "retention_time": 5_000,
        "topics": [
            {
                "name": "foo",
                "partitions": [
                    {
                        "partition_index": 0,
                        "committed_offset": 42,
                        "committed_leader_epoch": 7,
                        "committed_metadata": "meta",
                    },
                    {
                        "partition_index": 1,
                        "committed_offset": 43,
                        "committed_leader_epoch": 7,
                        "committed_metadata": None,
                    },
                ],
            }
        ],
    }
    response = rs.OffsetCommitResponse(
        (
            rs.CommitTopicResponse(
                "foo",
                (
                    rs.CommitPartitionResponse(0, E.NONE),
                    rs.CommitPartitionResponse(1, E.ILLEGAL_GENERATION),
                ),
            ),
        )
    )
    kio_response = {
        "topics": [
            {
                "name": "foo",
                "partitions": [
                    {"partition_index": 0, "error_code": 0},
                    {"partition_index": 1, "error_code": int(E.ILLEGAL_GENERATION)},
                ],
            }
        ]
    }
    return Case(request, kio_request, response, kio_response)


def _fetched(v: int) -> rs.OffsetFetchResponse:
    return rs.OffsetFetchResponse(
        E.NONE, (rs.FetchTopicResponse("foo", (rs.FetchPartitionResponse(0, 42, 7, "meta"),)),)
    ).at_version(v)


_FETCHED_TOPICS = [
    {
        "name": "foo",
        "partitions": [
            {
                "partition_index": 0,
                "committed_offset": 42,
                "committed_leader_epoch": 7,
                "metadata": "meta",
                "error_code": 0,
            }
        ],
    }
]


def offset_fetch(v: int) -> Case:
    request = rq.OffsetFetch(
        ID, v, NOW, group_id="g", topics=(rq.FetchTopic("foo", (0, 1)),), require_stable=v >= 7
    )
    topics = [{"name": "foo", "partition_indexes": [0, 1]}]
    if v >= 8:  # a batch of groups; a classic client sends no member id or epoch
        group = {"group_id": "g", "member_id": None, "member_epoch": -1, "topics": topics}
        kio_request: dict[str, Any] = {"groups": [group], "require_stable": True}
        kio_response: dict[str, Any] = {
            "groups": [{"group_id": "g", "topics": _FETCHED_TOPICS, "error_code": 0}]
        }
    else:
        kio_request = {"group_id": "g", "topics": topics, "require_stable": True}
        kio_response = {"topics": _FETCHED_TOPICS, "error_code": 0}
    return Case(request, kio_request, _fetched(v), kio_response)


def offset_fetch_several(v: int) -> Case | None:
    """v8+: several groups, the first at the top of the reference's request and answer; v9 with
    the member fields a KIP-848 client sends."""
    if v < 8:
        return None
    member = ("m", 3) if v >= 9 else (None, -1)
    request = rq.OffsetFetch(
        ID,
        v,
        NOW,
        group_id="g",
        topics=(rq.FetchTopic("foo", (0,)),),
        member_id=member[0],
        member_epoch=member[1],
        other_groups=(rq.FetchGroup("h", None, *member),),
    )
    response = rs.OffsetFetchResponse(
        E.NONE,
        _fetched(v).topics,
        (rs.FetchGroupResponse("h", E.COORDINATOR_LOAD_IN_PROGRESS),),
    )
    first = {"group_id": "g", "member_id": member[0], "member_epoch": member[1]}
    topics = [{"name": "foo", "partition_indexes": [0]}]
    other = {"group_id": "h", "member_id": member[0], "member_epoch": member[1], "topics": None}
    kio_request = {"groups": [{**first, "topics": topics}, other], "require_stable": False}
    code = int(E.COORDINATOR_LOAD_IN_PROGRESS)
    kio_response = {
        "groups": [
            {"group_id": "g", "topics": _FETCHED_TOPICS, "error_code": 0},
            {"group_id": "h", "topics": [], "error_code": code},
        ]
    }
    return Case(request, kio_request, response, kio_response)


def offset_fetch_all(v: int) -> Case | None:
    """Every committed partition (null topics, v2+), answered with a group error."""
    if v < 2:
        return None
    request = rq.OffsetFetch(ID, v, NOW, group_id="g", topics=None)
    response = rs.OffsetFetchResponse(E.COORDINATOR_LOAD_IN_PROGRESS)
    code = int(E.COORDINATOR_LOAD_IN_PROGRESS)
    if v >= 8:
        group = {"group_id": "g", "member_id": None, "member_epoch": -1, "topics": None}
        kio_request: dict[str, Any] = {"groups": [group], "require_stable": False}
        kio_response = {"groups": [{"group_id": "g", "topics": [], "error_code": code}]}
    else:
        kio_request = {"group_id": "g", "topics": None, "require_stable": False}
        kio_response = {"topics": [], "error_code": code}
    return Case(request, kio_request, response, kio_response)


def describe_groups(v: int) -> Case:
    request = rq.DescribeGroups(ID, v, NOW, groups=("g", "h"))
    response = rs.DescribeGroupsResponse(
        (
            rs.DescribedGroup(
                E.NONE,
                "g",
                "Stable",
                "consumer",
                "range",
                (rs.DescribedMember("m", "i", CLIENT_ID, HOST, b"\x01", b"\x02"),),
            ),
            rs.DescribedGroup(E.NONE, "h", "Dead"),
        )
    ).at_version(v)
    member = {
        "member_id": "m",
        "group_instance_id": "i",
        "client_id": CLIENT_ID,
        "client_host": HOST,
        "member_metadata": b"\x01",
        "member_assignment": b"\x02",
    }
    kio_response = {
        "groups": [
            {
                "error_code": 0,
                "group_id": "g",
                "group_state": "Stable",
                "protocol_type": "consumer",
                "protocol_data": "range",
                "members": [member],
            },
            {
                "error_code": 0,
                "group_id": "h",
                "group_state": "Dead",
                "protocol_type": "",
                "protocol_data": "",
                "members": [],
            },
        ]
    }
    return Case(request, {"groups": ["g", "h"]}, response, kio_response)


def list_groups(v: int) -> Case:
    types = ("consumer",) if v >= 5 else ()
    request = rq.ListGroups(
        ID, v, NOW, states_filter=("Stable",) if v >= 4 else (), types_filter=types
    )
    response = rs.ListGroupsResponse(
        E.NONE, (rs.ListedGroup("g", "consumer", "Stable", "consumer"),)
    ).at_version(v)
    listed = {"group_id": "g", "protocol_type": "consumer", "group_state": "Stable"}
    kio_response = {"error_code": 0, "groups": [{**listed, "group_type": "consumer"}]}
    fields = {"states_filter": ["Stable"], "types_filter": list(types)}
    return Case(request, fields, response, kio_response)


def delete_groups(v: int) -> Case:
    request = rq.DeleteGroups(ID, v, NOW, groups_names=("g", "h"))
    response = rs.DeleteGroupsResponse(
        (rs.DeletableGroupResult("g", E.NONE), rs.DeletableGroupResult("h", E.NON_EMPTY_GROUP))
    )
    kio_response = {
        "results": [
            {"group_id": "g", "error_code": 0},
            {"group_id": "h", "error_code": int(E.NON_EMPTY_GROUP)},
        ]
    }
    return Case(request, {"groups_names": ["g", "h"]}, response, kio_response)


def offset_delete(v: int) -> Case:
    request = rq.OffsetDelete(
        ID,
        v,
        NOW,
        group_id="g",
        topics=(
            rq.OffsetDeleteTopic("foo", (rq.OffsetDeletePartition(0),)),
            rq.OffsetDeleteTopic("bar", (rq.OffsetDeletePartition(1), rq.OffsetDeletePartition(2))),
        ),
    )
    kio_request = {
        "group_id": "g",
        "topics": [
            {"name": "foo", "partitions": [{"partition_index": 0}]},
            {"name": "bar", "partitions": [{"partition_index": 1}, {"partition_index": 2}]},
        ],
    }
    response = rs.OffsetDeleteResponse(
        E.NONE,
        (
            rs.OffsetDeleteTopicResponse(
                "foo", (rs.OffsetDeletePartitionResponse(0, E.GROUP_SUBSCRIBED_TO_TOPIC),)
            ),
        ),
    )
    kio_response = {
        "error_code": 0,
        "topics": [
            {
                "name": "foo",
                "partitions": [
                    {"partition_index": 0, "error_code": int(E.GROUP_SUBSCRIBED_TO_TOPIC)}
                ],
            }
        ],
    }
    return Case(request, kio_request, response, kio_response)


def offset_delete_refused(v: int) -> Case:
    request = rq.OffsetDelete(ID, v, NOW, group_id="g")
    response = rs.OffsetDeleteResponse(E.GROUP_ID_NOT_FOUND)
    kio_response = {"error_code": int(E.GROUP_ID_NOT_FOUND), "topics": []}
    return Case(request, {"group_id": "g", "topics": []}, response, kio_response)


def consumer_group_heartbeat(v: int) -> Case:
    request = rq.ConsumerGroupHeartbeat(
        ID,
        v,
        NOW,
        group_id="g",
        member_id="m",
        member_epoch=3,
        instance_id="i",
        rack_id="r",
        rebalance_timeout_ms=30_000,
        subscribed_topic_names=("foo", "bar"),
        subscribed_topic_regex="b.*" if v >= 1 else None,
        server_assignor="uniform",
        topic_partitions=(TopicPartitions("foo", (0, 1)),),
        client_id=CLIENT_ID,
        client_host=HOST,
    )
    kio_request = {
        "group_id": "g",
        "member_id": "m",
        "member_epoch": 3,
        "instance_id": "i",
        "rack_id": "r",
        "rebalance_timeout": 30_000,
        "subscribed_topic_names": ["foo", "bar"],
        "subscribed_topic_regex": "b.*",
        "server_assignor": "uniform",
        "topic_partitions": [{"topic_id": FOO, "partitions": [0, 1]}],
    }
    response = rs.ConsumerGroupHeartbeatResponse(
        E.NONE, "m", 4, 5_000, (TopicPartitions("foo", (0,)), TopicPartitions("bar", (2,)))
    )
    kio_response = {
        "error_code": 0,
        "member_id": "m",
        "member_epoch": 4,
        "heartbeat_interval": 5_000,
        "assignment": {
            "topic_partitions": [
                {"topic_id": FOO, "partitions": [0]},
                {"topic_id": BAR, "partitions": [2]},
            ]
        },
    }
    return Case(request, kio_request, response, kio_response)


def consumer_group_heartbeat_unchanged(v: int) -> Case:
    """Null fields: nothing changed since the last heartbeat, and no new assignment."""
    request = rq.ConsumerGroupHeartbeat(
        ID, v, NOW, group_id="g", member_id="m", member_epoch=4, client_id="", client_host=""
    )
    kio_request = {"group_id": "g", "member_id": "m", "member_epoch": 4, "rebalance_timeout": -1}
    response = rs.ConsumerGroupHeartbeatResponse(E.FENCED_MEMBER_EPOCH)
    kio_response = {"error_code": int(E.FENCED_MEMBER_EPOCH), "member_epoch": 0}
    return Case(request, kio_request, response, kio_response)


def consumer_group_describe(v: int) -> Case:
    request = rq.ConsumerGroupDescribe(ID, v, NOW, group_ids=("g", "h"))
    member = rs.DescribedConsumerMember(
        "m",
        None,
        "r",
        4,
        CLIENT_ID,
        HOST,
        ("foo", "bar"),
        None,
        (rs.DescribedTopicPartitions("foo", "foo", (0,)),),
        (
            rs.DescribedTopicPartitions("foo", "foo", (0,)),
            rs.DescribedTopicPartitions("bar", "bar", (1,)),
        ),
    )
    response = rs.ConsumerGroupDescribeResponse(
        (
            rs.DescribedConsumerGroup(E.NONE, "g", "Reconciling", 5, 5, "uniform", (member,)),
            rs.DescribedConsumerGroup(E.GROUP_ID_NOT_FOUND, "h"),
        )
    )
    kio_response = {
        "groups": [
            {
                "error_code": 0,
                "group_id": "g",
                "group_state": "Reconciling",
                "group_epoch": 5,
                "assignment_epoch": 5,
                "assignor_name": "uniform",
                "members": [
                    {
                        "member_id": "m",
                        "rack_id": "r",
                        "member_epoch": 4,
                        "client_id": CLIENT_ID,
                        "client_host": HOST,
                        "subscribed_topic_names": ["foo", "bar"],
                        "assignment": {
                            "topic_partitions": [
                                {"topic_id": FOO, "topic_name": "foo", "partitions": [0]}
                            ]
                        },
                        "target_assignment": {
                            "topic_partitions": [
                                {"topic_id": FOO, "topic_name": "foo", "partitions": [0]},
                                {"topic_id": BAR, "topic_name": "bar", "partitions": [1]},
                            ]
                        },
                    }
                ],
                "authorized_operations": rs.AUTHORIZED_OPERATIONS_OMITTED,
            },
            {
                "error_code": int(E.GROUP_ID_NOT_FOUND),
                "group_id": "h",
                "authorized_operations": rs.AUTHORIZED_OPERATIONS_OMITTED,
            },
        ]
    }
    kio_request = {"group_ids": ["g", "h"], "include_authorized_operations": False}
    return Case(request, kio_request, response, kio_response)


SIMPLE_CASES: list[tuple[str, Callable[[int], Case | None]]] = [
    ("JoinGroup", join_group),
    ("JoinGroup", join_group_refused),
    ("SyncGroup", sync_group),
    ("Heartbeat", heartbeat),
    ("LeaveGroup", leave_group),
    ("OffsetCommit", offset_commit),
    ("OffsetFetch", offset_fetch),
    ("OffsetFetch", offset_fetch_all),
    ("OffsetFetch", offset_fetch_several),
    ("DescribeGroups", describe_groups),
    ("ListGroups", list_groups),
    ("DeleteGroups", delete_groups),
    ("OffsetDelete", offset_delete),
    ("OffsetDelete", offset_delete_refused),
    ("ConsumerGroupHeartbeat", consumer_group_heartbeat),
    ("ConsumerGroupHeartbeat", consumer_group_heartbeat_unchanged),
    ("ConsumerGroupDescribe", consumer_group_describe),
]
AT_EVERY_VERSION = [
    pytest.param(api, made, id=f"{case.__name__}-v{v}")
    for api, case in SIMPLE_CASES
    for v in VERSIONS[api]
    if (made := case(v)) is not None
]


def _request_class(api: str, v: int) -> type:
    return kio.index.load_request_schema(API_KEYS[api], v)


def _response_class(api: str, v: int) -> type:
    return kio.index.load_response_schema(API_KEYS[api], v)


def _envelope(request: rq.Request) -> Envelope:
    return Envelope(
        request.request_id,
        request.api_version,
        request.now_ms,
        getattr(request, "client_id", ""),
        getattr(request, "client_host", ""),
    )


@pytest.mark.parametrize(("api", "c"), AT_EVERY_VERSION)
def test_a_request_maps_both_ways(api: str, c: Case) -> None:
    v = c.request.api_version
    entity = build(_request_class(api, v), c.kio_request)
    envelope = _envelope(c.request)
    assert request_to_kio(c.request, IDS) == entity
    assert request_from_kio(api, entity, envelope, IDS) == c.request
    # Round trips, each from its own side.
    assert request_from_kio(api, request_to_kio(c.request, IDS), envelope, IDS) == c.request
    assert request_to_kio(request_from_kio(api, entity, envelope, IDS), IDS) == entity


@pytest.mark.parametrize(("api", "c"), AT_EVERY_VERSION)
def test_a_response_maps_both_ways(api: str, c: Case) -> None:
    v = c.request.api_version
    cls = _response_class(api, v)
    asked = build(_request_class(api, v), c.kio_request)
    entity = build(cls, c.kio_response)
    assert build(cls, response_values(api, v, asked, c.response, IDS)) == entity
    assert response_from_kio(api, v, entity, IDS) == c.response
    written = build(cls, response_values(api, v, asked, c.response, IDS))
    assert response_from_kio(api, v, written, IDS) == c.response
    read = response_from_kio(api, v, entity, IDS)
    assert build(cls, response_values(api, v, asked, read, IDS)) == entity


def test_a_topic_without_an_id_is_not_sent_and_an_unknown_id_reads_as_its_text() -> None:
    request = consumer_group_heartbeat(1).request
    with pytest.raises(ValueError, match="topic 'foo', which has no id on the broker"):
        request_to_kio(request, TopicIds({}))
    entity = build(
        _response_class("ConsumerGroupHeartbeat", 1), consumer_group_heartbeat(1).kio_response
    )
    read = response_from_kio("ConsumerGroupHeartbeat", 1, entity, TopicIds({"foo": FOO}))
    assert read.assignment == (TopicPartitions("foo", (0,)), TopicPartitions(str(BAR), (2,)))


def _has_instance_id(cls: type) -> bool:
    hints = type_hints(cls)
    if "group_instance_id" in hints:
        return True
    members = hints.get("members")  # LeaveGroup v3+
    return members is not None and "group_instance_id" in type_hints(members.__args__[0])


@pytest.mark.parametrize("api", sorted(INSTANCE_ID_SINCE))
def test_the_instance_id_gate_is_kios_and_the_references(api: str) -> None:
    since = INSTANCE_ID_SINCE[api]
    for v in VERSIONS[api]:
        assert _has_instance_id(_request_class(api, v)) == (v >= since), v
    cls = getattr(rq, api)
    if api == "LeaveGroup":
        make = lambda v: cls(ID, v, NOW, members=(rq.MemberIdentity("m", "i"),))
    else:
        make = lambda v: cls(ID, v, NOW, group_instance_id="i")
    assert make(since).api_version == since
    if since - 1 in VERSIONS[api]:
        with pytest.raises(UsageError):
            make(since - 1)


def test_an_instance_id_below_its_version_is_not_read_from_the_wire() -> None:
    """kio's JoinGroup v4 has no group_instance_id: the reference request holds none."""
    entity = build(_request_class("JoinGroup", 4), {"group_id": "g", "group_instance_id": "i"})
    request = request_from_kio("JoinGroup", entity, Envelope(ID, 4, NOW, CLIENT_ID, HOST))
    assert request.group_instance_id is None  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("api", "v", "field", "answers"),
    [
        ("DescribeGroups", 5, "groups", "groups"),
        ("DeleteGroups", 2, "groups_names", "results"),
        ("OffsetFetch", 8, "groups", "groups"),
    ],
)
def test_a_request_naming_several_groups_is_asked_one_group_at_a_time(
    api: str, v: int, field: str, answers: str
) -> None:
    names = ["a", "b", "c"]
    if api == "OffsetFetch":
        named: list[Any] = [{"group_id": g, "topics": None} for g in names]
    else:
        named = names
    body = build(_request_class(api, v), {field: named})
    parts = one_per_group(api, v, body)
    assert [len(getattr(p, field)) for p in parts] == [1, 1, 1]
    read = [request_from_kio(api, p, Envelope(ID, v, NOW)) for p in parts]
    assert [r.group_ids for r in read] == [("a",), ("b",), ("c",)]
    values = [{answers: [{"group_id": g}]} for g in names]
    assert merged(api, v, values) == {answers: [{"group_id": g} for g in names]}
    assert merged(api, v, []) == {answers: []}


def test_a_request_about_one_group_is_asked_as_it_is() -> None:
    body = build(_request_class("OffsetFetch", 7), {"group_id": "g", "topics": None})
    assert one_per_group("OffsetFetch", 7, body) == (body,)
    assert merged("OffsetFetch", 7, [{"topics": []}]) == {"topics": []}


@pytest.mark.parametrize(
    ("request_", "group_ids"),
    [
        (rq.Heartbeat(ID, 3, NOW, group_id="g"), ("g",)),
        (rq.JoinGroup(ID, 5, NOW, group_id=""), ("",)),
        (rq.OffsetFetch(ID, 7, NOW, group_id=None), ()),
        (rq.OffsetFetch(ID, 8, NOW, group_id="a", other_groups=(rq.FetchGroup("b"),)), ("a", "b")),
        (rq.DescribeGroups(ID, 5, NOW, groups=("a", None, "b")), ("a", "b")),
        (rq.DeleteGroups(ID, 2, NOW, groups_names=(None,)), ()),
        (rq.OffsetDelete(ID, 0, NOW, group_id="g"), ("g",)),
        (rq.ListGroups(ID, 4, NOW), ()),
    ],
)
def test_group_ids_name_the_groups_a_request_is_about(
    request_: rq.Request, group_ids: tuple[str, ...]
) -> None:
    assert request_.group_ids == group_ids
