"""Frames to fuzz the broker with: a valid request of every API and mutations of it.

One generator, two sources of choices: Hypothesis (tests/broker/test_broker_bad_input.py draws
through a ``Choices`` over ``st.DrawFn``) and ``random.Random`` (benchmarks/fuzz_frames.py
sends a million). Each frame renames its group to a fresh one of the same length, so every
length prefix still holds and no frame parks behind members an earlier one left behind.
"""

from __future__ import annotations

import datetime
import functools
import io
import random
import struct
from collections.abc import Sequence
from typing import Protocol, TypeVar

from kio.records.schema import NewRecordBatch, Record
from kio.records.writers import write_new_batch
from kio.static.primitive import TZAwareMicros

from coordspec.broker.testing import encode_request

T = TypeVar("T")
PLACEHOLDER = "fuzz-group-0000000000000000"
MUTATIONS = ("flip", "body", "truncate", "insert", "version", "key", "length")
_HEADER = 15  # a request header v2 with client id "fuzz": key, version, correlation id, client id, no tags


class Choices(Protocol):
    def integer(self, low: int, high: int) -> int: ...  # both ends included
    def element(self, options: Sequence[T]) -> T: ...
    def binary(self, min_size: int, max_size: int) -> bytes: ...


class RandomChoices:
    def __init__(self, seed: int) -> None:
        self._random = random.Random(seed)

    def integer(self, low: int, high: int) -> int:
        return self._random.randint(low, high)

    def element(self, options: Sequence[T]) -> T:
        return options[self._random.randrange(len(options))]

    def binary(self, min_size: int, max_size: int) -> bytes:
        return self._random.randbytes(self._random.randint(min_size, max_size))


def framed(payload: bytes) -> bytes:
    return struct.pack(">i", len(payload)) + payload


def record_batch() -> bytes:
    timestamp = TZAwareMicros.parse(datetime.datetime(2026, 1, 1, tzinfo=datetime.UTC))
    record = Record(attributes=0, timestamp=timestamp, offset=0, key=b"k", value=b"v", headers=())
    buffer = io.BytesIO()
    write_new_batch(
        buffer,
        NewRecordBatch(
            producer_id=-1, producer_epoch=-1, base_sequence=-1, records=(record,), attributes=0
        ),
    )
    return buffer.getvalue()


def seeds(group: str) -> list[bytes]:
    """A valid request (unframed) of every API but Fetch (a mutated max_wait is a legitimate long poll)."""
    payloads = [
        (18, 3, {"client_software_name": "fuzz", "client_software_version": "1"}),
        (3, 12, {"topics": [{"name": "fuzz-topic"}], "allow_auto_topic_creation": False}),
        (10, 2, {"key": group}),
        (10, 4, {"coordinator_keys": [group, "other"]}),
        (
            11,
            5,
            {
                "group_id": group,
                "session_timeout": 1000,
                "rebalance_timeout": 1000,
                "member_id": "",
                "protocol_type": "consumer",
                "protocols": [{"name": "range", "metadata": b"\x00\x00\x00\x00\x00\x00"}],
            },
        ),
        (
            14,
            5,
            {
                "group_id": group,
                "generation_id": 1,
                "member_id": "m",
                "protocol_type": "consumer",
                "protocol_name": "range",
                "assignments": [{"member_id": "m", "assignment": b""}],
            },
        ),
        (12, 4, {"group_id": group, "generation_id": 1, "member_id": "m"}),
        (13, 5, {"group_id": group, "members": [{"member_id": "m"}]}),
        (
            8,
            8,
            {
                "group_id": group,
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "topics": [
                    {
                        "name": "fuzz-topic",
                        "partitions": [{"partition_index": 0, "committed_offset": 5}],
                    }
                ],
            },
        ),
        (9, 8, {"groups": [{"group_id": group, "topics": None}]}),
        (15, 5, {"groups": [group]}),
        (16, 4, {"states_filter": ["Stable"]}),
        (42, 2, {"groups_names": [group]}),
        (
            2,
            6,
            {
                "replica_id": -1,
                "topics": [
                    {"name": "fuzz-topic", "partitions": [{"partition_index": 0, "timestamp": -1}]}
                ],
            },
        ),
        (
            0,
            9,
            {
                "acks": 1,
                "timeout": 1000,
                "topic_data": [
                    {
                        "name": "fuzz-topic",
                        "partition_data": [{"index": 0, "records": record_batch()}],
                    }
                ],
            },
        ),
        (22, 4, {"transactional_id": None, "transaction_timeout": 1000}),
        (
            19,
            7,
            {
                "topics": [{"name": "fuzz-topic", "num_partitions": 1, "replication_factor": 1}],
                "timeout": 1000,
            },
        ),
        (
            37,
            3,
            {
                "topics": [{"name": "fuzz-topic", "count": 2, "assignments": None}],
                "timeout": 1000,
                "validate_only": True,
            },
        ),
    ]
    return [
        encode_request(key, version, values, correlation_id=7, client_id="fuzz")[4:]
        for key, version, values in payloads
    ]


@functools.cache
def _placeholder_seeds() -> tuple[bytes, ...]:
    return tuple(seeds(PLACEHOLDER))


def mutated(choose: Choices) -> bytes:
    """A seed under a fresh group name, then one mutation: bytes flipped anywhere or one in
    the body, cut short, bytes inserted, another version or API key, or a length prefix that
    lies about the frame."""
    group = f"fuzz-group-{choose.integer(0, 2**64 - 1):016x}".encode()
    payload = bytearray(choose.element(_placeholder_seeds()).replace(PLACEHOLDER.encode(), group))
    kind = choose.element(MUTATIONS)
    if kind == "flip":
        for _ in range(choose.integer(1, 8)):
            payload[choose.integer(0, len(payload) - 1)] = choose.integer(0, 255)
    elif kind == "body":  # one byte of the body: mostly still a request, with an odd value
        payload[choose.integer(min(_HEADER, len(payload) - 1), len(payload) - 1)] = choose.integer(
            0, 255
        )
    elif kind == "truncate":
        del payload[choose.integer(0, len(payload) - 1) :]
    elif kind == "insert":
        at = choose.integer(0, len(payload))
        payload[at:at] = choose.binary(1, 64)
    elif kind == "version":
        struct.pack_into(">h", payload, 2, choose.integer(-(2**15), 2**15 - 1))
    elif kind == "key":  # any key but Fetch's, whose long poll is no hang
        key = choose.integer(-(2**15), 2**15 - 2)
        struct.pack_into(">h", payload, 0, key + 1 if key >= 1 else key)
    else:
        return struct.pack(">i", choose.integer(-(2**31), 2**31 - 1)) + bytes(payload)
    return framed(bytes(payload))


def frame(choose: Choices) -> bytes:
    """One fuzz frame: a mutated seed, random bytes framed, or random bytes with no framing at all."""
    kind = choose.integer(0, 2)
    if kind == 0:
        return mutated(choose)
    if kind == 1:
        return framed(choose.binary(0, 256))
    return choose.binary(0, 64)
