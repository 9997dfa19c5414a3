"""The leader's step between JoinGroup and SyncGroup: decode, assign, encode."""

from __future__ import annotations

from coordspec.reference.assignors import ASSIGNORS
from coordspec.reference.assignors.leader import lead, subscriptions_of
from coordspec.reference.consumer_protocol import (
    Subscription,
    decode_assignment,
    encode_subscription,
)
from coordspec.reference.group.responses import JoinGroupMember


def members() -> list[JoinGroupMember]:
    return [
        JoinGroupMember("b", "instance-b", encode_subscription(Subscription(("t", "u")))),
        JoinGroupMember("a", None, encode_subscription(Subscription(("t",)))),
    ]


def test_subscriptions_carry_the_instance_ids_joingroup_listed():
    subs = subscriptions_of(members())
    assert subs["b"].group_instance_id == "instance-b" and subs["b"].topics == ("t", "u")
    assert subs["a"].group_instance_id is None


def test_lead_encodes_exactly_what_the_assignor_decided():
    for name, assignor in ASSIGNORS.items():
        expected = assignor.assign({"t": 3, "u": 2}, subscriptions_of(members()))
        encoded = lead(name, {"t": 3, "u": 2}, members())
        assert set(encoded) == {"a", "b"}
        for member_id, data in encoded.items():
            decoded = [
                (tp.topic, p) for tp in decode_assignment(data).partitions for p in tp.partitions
            ]
            assert sorted(decoded) == sorted(expected[member_id]), name
        handed = sorted(
            p
            for data in encoded.values()
            for tp in decode_assignment(data).partitions
            for p in ((tp.topic, x) for x in tp.partitions)
        )
        assert handed == sorted([("t", 0), ("t", 1), ("t", 2), ("u", 0), ("u", 1)]), name
