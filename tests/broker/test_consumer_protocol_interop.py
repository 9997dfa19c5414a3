"""The consumer embedded protocol codec agrees with two independent implementations:
kio's types generated from Kafka's own schemas (ConsumerProtocolSubscription and
ConsumerProtocolAssignment, versions 0-3), and the kafka-python client's encoding."""

from __future__ import annotations

import importlib
import io

import hypothesis.strategies as st
import pytest
from hypothesis import given
from kafka.protocol.consumer.metadata import ConsumerProtocolAssignment as PyAssignment
from kafka.protocol.consumer.metadata import ConsumerProtocolSubscription as PySubscription
from kio.serial import entity_reader, entity_writer
from kio.static.primitive import i32

from coordspec.reference.consumer_protocol import (
    Assignment,
    Subscription,
    TopicPartitions,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

pytestmark = pytest.mark.wire

names = st.text(st.characters(min_codepoint=33, max_codepoint=0x2FF), min_size=1, max_size=10)
partition_lists = st.lists(st.integers(0, 2**31 - 1), max_size=4).map(tuple)
topic_partitions = st.lists(st.builds(TopicPartitions, names, partition_lists), max_size=3).map(
    tuple
)
subscriptions = st.builds(
    Subscription,
    st.lists(names, max_size=3).map(tuple),
    st.none() | st.binary(max_size=6),
    topic_partitions,
    st.integers(-1, 2**31 - 1),
    st.none() | names,
)


def at_version(sub: Subscription, version: int) -> Subscription:
    """What survives an encoding at ``version``."""
    return Subscription(
        sub.topics,
        sub.user_data,
        sub.owned_partitions if version >= 1 else (),
        sub.generation_id if version >= 2 else -1,
        sub.rack_id if version >= 3 else None,
    )


def kio_subscription_module(version: int):
    return importlib.import_module(f"kio.schema.consumer_protocol_subscription.v{version}.data")


def kio_encode_subscription(sub: Subscription, version: int) -> bytes:
    module = kio_subscription_module(version)
    fields = {"topics": sub.topics, "user_data": sub.user_data}
    if version >= 1:
        fields["owned_partitions"] = tuple(
            module.TopicPartition(topic=tp.topic, partitions=tuple(i32(p) for p in tp.partitions))
            for tp in sub.owned_partitions
        )
    if version >= 2:
        fields["generation_id"] = i32(sub.generation_id)
    if version >= 3:
        fields["rack_id"] = sub.rack_id
    buffer = io.BytesIO()
    buffer.write(version.to_bytes(2, "big"))
    entity_writer(module.ConsumerProtocolSubscription)(
        buffer, module.ConsumerProtocolSubscription(**fields)
    )
    return buffer.getvalue()


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@given(sub=subscriptions)
def test_subscription_bytes_equal_kios_at_every_version(version, sub):
    assert encode_subscription(sub, version) == kio_encode_subscription(sub, version)


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@given(sub=subscriptions)
def test_kio_reads_what_we_write(version, sub):
    module = kio_subscription_module(version)
    data = encode_subscription(sub, version)
    body = data[2:]  # past the int16 version header
    decoded, consumed = entity_reader(module.ConsumerProtocolSubscription)(body, 0)
    assert consumed == len(body)
    assert tuple(decoded.topics) == sub.topics
    assert decoded.user_data == sub.user_data
    if version >= 2:
        assert decoded.generation_id == sub.generation_id


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@given(partitions=topic_partitions, user_data=st.none() | st.binary(max_size=6))
def test_assignment_bytes_equal_kios(version, partitions, user_data):
    module = importlib.import_module(f"kio.schema.consumer_protocol_assignment.v{version}.data")
    entity = module.ConsumerProtocolAssignment(
        assigned_partitions=tuple(
            module.TopicPartition(topic=tp.topic, partitions=tuple(i32(p) for p in tp.partitions))
            for tp in partitions
        ),
        user_data=user_data,
    )
    buffer = io.BytesIO()
    buffer.write(version.to_bytes(2, "big"))
    entity_writer(module.ConsumerProtocolAssignment)(buffer, entity)
    assert encode_assignment(Assignment(partitions, user_data), version) == buffer.getvalue()


@pytest.mark.parametrize("version", [0, 1, 2, 3])
@given(sub=subscriptions)
def test_subscription_bytes_equal_kafka_pythons(version, sub):
    theirs = PySubscription(
        version=version,
        topics=list(sub.topics),
        user_data=sub.user_data,
        owned_partitions=[
            PySubscription.TopicPartition(topic=tp.topic, partitions=list(tp.partitions))
            for tp in sub.owned_partitions
        ],
        generation_id=sub.generation_id,
        rack_id=sub.rack_id,
    ).encode()
    assert encode_subscription(sub, version) == theirs
    assert decode_subscription(theirs) == at_version(sub, version)


@given(partitions=topic_partitions, user_data=st.none() | st.binary(max_size=6))
def test_assignment_bytes_equal_kafka_pythons(partitions, user_data):
    theirs = PyAssignment(
        version=0,
        user_data=user_data,
        assigned_partitions=[
            PyAssignment.TopicPartition(topic=tp.topic, partitions=list(tp.partitions))
            for tp in partitions
        ],
    ).encode()
    assert encode_assignment(Assignment(partitions, user_data), version=0) == theirs
    assert decode_assignment(theirs) == Assignment(partitions, user_data)


@pytest.mark.parametrize(
    "assignor",
    [
        "kafka.coordinator.assignors.range:RangePartitionAssignor",
        "kafka.coordinator.assignors.roundrobin:RoundRobinPartitionAssignor",
        "kafka.coordinator.assignors.sticky.sticky_assignor:StickyPartitionAssignor",
    ],
)
def test_a_real_clients_join_metadata_decodes(assignor):
    """The bytes kafka-python's consumer puts in JoinGroup for each of its assignors."""
    module_name, class_name = assignor.split(":")
    cls = getattr(importlib.import_module(module_name), class_name)
    metadata = cls().metadata({"orders", "payments"})
    decoded = decode_subscription(metadata.encode())
    assert sorted(decoded.topics) == ["orders", "payments"]
