"""Kafka's znodes (reference/replication/znodes.py): the JSON Kafka 2.6 writes, byte for
byte where Kafka fixes the field order, and the codecs' round trips."""

from __future__ import annotations

import json
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordspec.reference.errors import UsageError
from coordspec.reference.replication.znodes import (
    PartitionState,
    TopicAssignment,
    TopicPartition,
    decode_controller,
    decode_controller_epoch,
    decode_isr_change,
    decode_reassignment,
    encode_controller,
    encode_controller_epoch,
    encode_isr_change,
    encode_reassignment,
    state_path,
    state_path_partition,
)


def test_partition_state_is_kafkas_json():
    state = PartitionState(leader=2, leader_epoch=5, isr=(2, 3), controller_epoch=7)
    assert (
        state.encode()
        == b'{"controller_epoch":7,"leader":2,"version":1,"leader_epoch":5,"isr":[2,3]}'
    )
    assert PartitionState.decode("p", state.encode()) == state


@given(
    st.integers(-1, 2**31 - 1),
    st.integers(0, 2**31 - 1),
    st.lists(st.integers(0, 2**31 - 1), max_size=5),
    st.integers(0, 2**31 - 1),
)
def test_partition_state_encodes_as_kafkas_json(leader, leader_epoch, isr, controller_epoch):
    state = PartitionState(leader, leader_epoch, tuple(isr), controller_epoch)
    expected = {
        "controller_epoch": controller_epoch,
        "leader": leader,
        "version": 1,
        "leader_epoch": leader_epoch,
        "isr": isr,
    }
    assert state.encode() == json.dumps(expected, separators=(",", ":")).encode()


def test_a_controller_decision_bumps_the_leader_epoch_and_a_leaders_isr_change_does_not():
    state = PartitionState(2, 5, (2, 3), 7)
    assert state.next(3, (3,), 8) == PartitionState(3, 6, (3,), 8)
    assert state.with_isr((2,)) == PartitionState(2, 5, (2,), 7)


def test_topic_assignment_is_kafkas_json_with_kip_455_fields():
    assignment = TopicAssignment({0: (1, 2), 1: (2, 3)}, {0: (3,)}, {0: (1,)})
    assert assignment.encode() == (
        b'{"version":2,"partitions":{"0":[1,2],"1":[2,3]},"adding_replicas":{"0":[3]},"removing_replicas":{"0":[1]}}'
    )
    assert TopicAssignment.decode("t", assignment.encode()) == assignment
    assert TopicAssignment.decode(
        "t", b'{"version":1,"partitions":{"0":[1]}}'
    ) == TopicAssignment.of({0: [1]})


def test_a_topic_id_is_version_3_with_kafkas_text_form_of_the_uuid():
    """KIP-516 (Kafka 2.8+): ``topic_id`` is Uuid.toString, URL-safe base64 without padding."""
    topic_id = uuid.UUID(int=(7 << 64) | 1)
    assignment = TopicAssignment.of({0: [1]}, topic_id)
    value = json.loads(assignment.encode())
    assert (value["version"], value["topic_id"]) == (3, "AAAAAAAAAAcAAAAAAAAAAQ")
    assert TopicAssignment.decode("t", assignment.encode()) == assignment
    with pytest.raises(UsageError, match="/brokers/topics/t: field 'topic_id' is not a Kafka Uuid"):
        TopicAssignment.decode(
            "/brokers/topics/t", b'{"version":3,"topic_id":"short","partitions":{"0":[1]}}'
        )


def test_controller_reassignment_and_isr_change_znodes_round_trip():
    assert decode_controller("c", encode_controller(4, 1234)) == 4
    assert encode_controller(4, 1234) == b'{"version":1,"brokerid":4,"timestamp":"1234"}'
    assert decode_controller_epoch("e", encode_controller_epoch(12)) == 12
    targets = {TopicPartition("t", 0): (3, 4)}
    assert decode_reassignment("r", encode_reassignment(targets)) == targets
    assert decode_isr_change("i", encode_isr_change([TopicPartition("t", 1)])) == [
        TopicPartition("t", 1)
    ]


def test_state_paths_name_their_partition():
    tp = TopicPartition("orders", 12)
    assert state_path(tp) == "/brokers/topics/orders/partitions/12/state"
    assert state_path_partition(state_path(tp)) == tp
    assert state_path_partition("/brokers/topics/orders/partitions/12") is None


@pytest.mark.parametrize(
    "data",
    [
        b"not json",
        b"[1]",
        b'{"leader":"x","leader_epoch":0,"isr":[1],"controller_epoch":0}',
        b'{"leader":1,"leader_epoch":0,"isr":["a"],"controller_epoch":0}',
    ],
)
def test_a_znode_that_is_not_kafkas_json_is_a_usage_error_naming_the_path(data):
    with pytest.raises(UsageError, match="/brokers/topics/t/partitions/0/state"):
        PartitionState.decode("/brokers/topics/t/partitions/0/state", data)
