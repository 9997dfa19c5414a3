"""The expectation keys that state what Kafka's coordinator tests assert beyond ids and errors:
instance ids and subscriptions in the leader's member list, empty versus encoded-empty
assignments, leader epochs and metadata of fetched offsets, per-member leave answers."""

from __future__ import annotations

import pytest

from coordspec.conformance.suite import expect
from coordspec.conformance.suite.scenario import ExpectationError, RecordSpec, parse_expectation
from coordspec.conformance.suite.symbols import Symbols
from coordspec.reference.consumer_protocol import (
    Assignment,
    Subscription,
    encode_assignment,
    encode_subscription,
)
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import responses as rs
from coordspec.reference.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
    TopicPartitions,
)

NONE = ErrorCode.NONE


def _symbols() -> Symbols:
    symbols = Symbols("g", ("c1", "c2"))
    symbols.clients["c1"].member_id, symbols.clients["c2"].member_id = "m-1", "m-2"
    return symbols


def _check(api: str, version: int, raw: dict, response: rs.Response) -> str | None:
    expected = parse_expectation(api, raw)
    assert expected != "parked"
    return expect.check(api, version, expected, response, _symbols())


JOIN = rs.JoinGroupResponse(
    NONE,
    1,
    leader="m-1",
    member_id="m-1",
    members=(
        rs.JoinGroupMember("m-1", "static-1", encode_subscription(Subscription(("foo", "bar")))),
        rs.JoinGroupMember("m-2", None, encode_subscription(Subscription(("baz",)))),
    ),
)


def test_instances_and_subscriptions_of_the_leaders_member_list():
    holds = {
        "instances": {"$m1": "static-1", "$m2": None},
        "subscriptions": {"$m1": ["foo", "bar"], "$m2": ["baz"]},
    }
    assert _check("JoinGroup", 9, holds, JOIN) is None
    wrong = _check("JoinGroup", 9, {"instances": {"$m1": "static-1", "$m2": "static-2"}}, JOIN)
    assert wrong is not None and wrong.startswith("expect.instances: expected")
    assert _check("JoinGroup", 9, {"subscriptions": {"$m1": ["foo"], "$m2": ["baz"]}}, JOIN)


def test_a_subscription_that_does_not_decode_is_named_so():
    join = rs.JoinGroupResponse(NONE, 1, members=(rs.JoinGroupMember("m-1", None, b"\x00"),))
    problem = _check("JoinGroup", 9, {"subscriptions": {"$m1": ["foo"]}}, join)
    assert problem is not None and "undecodable subscription" in problem


@pytest.mark.parametrize(
    ("assignment", "encoded"),
    [(b"", False), (encode_assignment(Assignment(())), True)],
)
def test_an_empty_assignment_is_not_an_encoded_empty_one(assignment, encoded):
    sync = rs.SyncGroupResponse(NONE, assignment=assignment)
    assert _check("SyncGroup", 5, {"assignment": [], "assignment_encoded": encoded}, sync) is None
    assert _check("SyncGroup", 5, {"assignment_encoded": not encoded}, sync) is not None


def test_leader_epochs_and_metadata_of_fetched_offsets():
    fetched = rs.OffsetFetchResponse(
        NONE,
        (
            rs.FetchTopicResponse(
                "foo",
                (
                    rs.FetchPartitionResponse(0, 10, 7, "m"),
                    rs.FetchPartitionResponse(1, 11, -1, ""),
                ),
            ),
        ),
    )
    holds = {"leader_epochs": {"foo-0": 7, "foo-1": -1}, "metadata": {"foo-0": "m", "foo-1": ""}}
    assert _check("OffsetFetch", 9, holds, fetched) is None
    assert _check("OffsetFetch", 9, {"leader_epochs": {"foo-0": 7, "foo-1": 3}}, fetched)
    assert _check("OffsetFetch", 9, {"metadata": {"foo-0": "x", "foo-1": ""}}, fetched)


def test_a_leave_of_neither_member_id_nor_instance_id_is_keyed_by_the_empty_string():
    left = rs.LeaveGroupResponse(
        NONE, (rs.LeaveMemberResponse("", None, ErrorCode.UNKNOWN_MEMBER_ID),)
    )
    assert _check("LeaveGroup", 5, {"leave": {"": "UNKNOWN_MEMBER_ID"}}, left) is None


def test_the_new_keys_belong_to_their_apis():
    with pytest.raises(ExpectationError, match="SyncGroup has no expectation 'instances'"):
        parse_expectation("SyncGroup", {"instances": {}})
    with pytest.raises(ExpectationError, match=r"expect\.subscriptions"):
        parse_expectation("JoinGroup", {"subscriptions": {"$m1": "foo"}})


def _fetched_offset(offset: int) -> tuple[rs.FetchTopicResponse, ...]:
    return (rs.FetchTopicResponse("foo", (rs.FetchPartitionResponse(0, offset),)),)


def test_each_group_of_an_offset_fetch_is_read_by_its_group_id():
    several = rs.OffsetFetchResponse(
        NONE,
        _fetched_offset(5),
        (rs.FetchGroupResponse("g-b", ErrorCode.GROUP_AUTHORIZATION_FAILED, ()),),
    )
    expected = parse_expectation(
        "OffsetFetch",
        {
            "offsets": {"foo-0": 5},
            "groups": {
                "$group-b": {"error": "GROUP_AUTHORIZATION_FAILED", "offsets": {}},
                "$group": {"error": "NONE", "offsets": {"foo-0": 5}},
            },
        },
    )
    assert expected != "parked"
    assert expect.check("OffsetFetch", 8, expected, several, _symbols(), first_group="g") is None
    wrong = parse_expectation("OffsetFetch", {"groups": {"$group-b": {"error": "NONE"}}})
    assert wrong != "parked"
    assert expect.check("OffsetFetch", 8, wrong, several, _symbols(), first_group="g") == (
        "expect.groups.$group-b.error: expected 'NONE', got 'GROUP_AUTHORIZATION_FAILED'"
    )
    missing = parse_expectation("OffsetFetch", {"groups": {"$group-c": {"error": "NONE"}}})
    assert missing != "parked"
    assert expect.check("OffsetFetch", 8, missing, several, _symbols(), first_group="g") == (
        "expect.groups: the answer has no group 'g-c'"
    )


def _commit(group: str, partition: int, offset: int) -> Record:
    return Record(OffsetCommitKey(group, "foo", partition), OffsetCommitValue(offset, -1, "", 0))


def test_the_records_a_step_wrote_match_in_any_order_and_all_of_them():
    written = [
        _commit("g", 0, 5),
        Record(OffsetCommitKey("g-b", "foo", 1), None),
        Record(GroupMetadataKey("g"), GroupMetadataValue("consumer", 1, "range", "m-1", 0, ())),
        Record(GroupMetadataKey("g-b"), None),
    ]
    specs = (
        RecordSpec(kind="group_tombstone", group="$group-b"),
        RecordSpec(kind="group_metadata", generation=1),
        RecordSpec(kind="offset_tombstone", group="$group-b", partition="foo-1"),
        RecordSpec(kind="offset_commit", partition="foo-0", offset=5),
    )
    assert expect.check_records(specs, written, _symbols()) is None
    assert expect.check_records(specs[:3], written, _symbols()) is not None  # one left over
    assert expect.check_records((), [], _symbols()) is None
    other_offset = (*specs[:3], RecordSpec(kind="offset_commit", partition="foo-0", offset=6))
    assert expect.check_records(other_offset, written, _symbols()) == (
        "expect.records: expected [group_tombstone ($group-b), group_metadata ($group, "
        "generation 1), offset_tombstone ($group-b, foo-1), offset_commit ($group, foo-0, "
        "offset 6)], got [offset_commit ($group, foo-0, offset 5), offset_tombstone ($group-b, "
        "foo-1), group_metadata ($group, generation 1), group_tombstone ($group-b)]"
    )


def test_a_consumer_heartbeat_assignment_is_decoded_or_unchanged():
    given = rs.ConsumerGroupHeartbeatResponse(
        NONE, "m-1", 2, 5000, (TopicPartitions("foo", (0, 2)), TopicPartitions("bar", (1,)))
    )
    assert (
        _check("ConsumerGroupHeartbeat", 1, {"assignment": ["bar-1", "foo-2", "foo-0"]}, given)
        is None
    )
    assert "got 'unchanged'" in _check(
        "ConsumerGroupHeartbeat", 1, {"assignment": []}, rs.ConsumerGroupHeartbeatResponse(NONE)
    )
    assert "expected 'unchanged'" in _check(
        "ConsumerGroupHeartbeat", 1, {"assignment": "unchanged"}, given
    )
    assert (
        _check("ConsumerGroupHeartbeat", 1, {"member_id": "$m1", "member_epoch": 2}, given) is None
    )
    with pytest.raises(ExpectationError, match="SyncGroup has no 'unchanged' answer"):
        parse_expectation("SyncGroup", {"assignment": "unchanged"})


def test_a_consumer_group_description_is_read_from_its_first_group():
    described = rs.ConsumerGroupDescribeResponse(
        (
            rs.DescribedConsumerGroup(NONE, "g", "Reconciling", 3, 2, "uniform", members=()),
            rs.DescribedConsumerGroup(ErrorCode.GROUP_ID_NOT_FOUND, "h"),
        )
    )
    raw = {"error": "NONE", "state": "Reconciling", "group_epoch": 3, "assignment_epoch": 2}
    assert _check("ConsumerGroupDescribe", 0, raw, described) is None
    assert "expected 2, got 3" in _check("ConsumerGroupDescribe", 0, {"group_epoch": 2}, described)
