"""The consumer embedded protocol codec (subscriptions and assignments, v0-v3)."""

from __future__ import annotations

import hypothesis.strategies as st
import pytest
from hypothesis import given

from coordspec.reference.consumer_protocol import (
    Assignment,
    MalformedConsumerProtocol,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

names = st.text(min_size=1, max_size=12)
partitions = st.builds(
    TopicPartitions, names, st.lists(st.integers(0, 2**31 - 1), max_size=5).map(tuple)
)


def test_v0_subscription_bytes_are_kafkas_layout():
    # int16 version, int32 topic count, int16-length topic, int32 user-data length (-1 = null)
    assert (
        encode_subscription(Subscription(("foo",)), version=0) == b"\x00\x00"
        b"\x00\x00\x00\x01"
        b"\x00\x03foo"
        b"\xff\xff\xff\xff"
    )


def test_v0_assignment_bytes_are_kafkas_layout():
    data = encode_assignment(Assignment((TopicPartitions("foo", (0, 2)),)), version=0)
    assert (
        data == b"\x00\x00"
        b"\x00\x00\x00\x01"
        b"\x00\x03foo"
        b"\x00\x00\x00\x02"
        b"\x00\x00\x00\x00\x00\x00\x00\x02"
        b"\xff\xff\xff\xff"
    )


@given(
    st.lists(names, max_size=4),
    st.none() | st.binary(max_size=8),
    st.lists(partitions, max_size=3),
    st.integers(-1, 100),
    st.none() | names,
)
def test_subscription_round_trips_at_v3(topics, user_data, owned, generation, rack):
    sub = Subscription(tuple(topics), user_data, tuple(owned), generation, rack)
    assert decode_subscription(encode_subscription(sub)) == sub


@given(st.lists(partitions, max_size=3), st.none() | st.binary(max_size=8))
def test_assignment_round_trips(parts, user_data):
    assignment = Assignment(tuple(parts), user_data)
    assert decode_assignment(encode_assignment(assignment)) == assignment


def test_older_versions_drop_the_newer_fields():
    sub = Subscription(("a",), None, (TopicPartitions("a", (1,)),), 7, "rack-1")
    assert decode_subscription(encode_subscription(sub, version=1)) == Subscription(
        ("a",), None, (TopicPartitions("a", (1,)),)
    )
    assert decode_subscription(encode_subscription(sub, version=2)).generation_id == 7


@pytest.mark.parametrize(
    "data", [b"", b"\x00", b"\x00\x00\x00\x00\x00\x05\x00\x01a", b"\x00\x00\x7f\xff\xff\xff"]
)
def test_truncated_or_absurd_bytes_are_reported(data):
    with pytest.raises(MalformedConsumerProtocol, match="consumer subscription"):
        decode_subscription(data)
    with pytest.raises(MalformedConsumerProtocol, match="consumer assignment"):
        decode_assignment(data)
