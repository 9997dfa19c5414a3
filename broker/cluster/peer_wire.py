"""Broker-to-broker requests over Kafka's wire: replica fetches and the controller's requests.

Replica fetches are Kafka's Fetch v12 (``replica_id`` set, ``current_leader_epoch``,
``last_fetched_epoch``, answered with ``diverging_epoch`` where the logs part), through kio.

LeaderAndIsr and StopReplica keep Kafka's API keys (4 and 5), but kio has no schema for
them (Kafka 4.0 removed these ZooKeeper-era APIs). They travel in an internal framing: a
request header v1 (key, version 0, correlation id, client id), then the reference's
:mod:`~coordspec.reference.replication.messages` value as JSON; the answer is the correlation id
and an int16 error code. Only brokers of this cluster send them.
"""

from __future__ import annotations

import asyncio
import io
import json
import struct
from typing import Any

import kio.index
from kio.serial import entity_reader, entity_writer

from coordspec.broker.wire.framing import FrameError, frame, read_frame
from coordspec.reference.replication.messages import (
    ControllerRequest,
    LeaderAndIsr,
    LeaderAndIsrPartition,
    StopReplica,
)
from coordspec.reference.replication.znodes import TopicPartition
from coordspec.reference.wire.entities import build

LEADER_AND_ISR, STOP_REPLICA = 4, 5
INTERNAL_KEYS = (LEADER_AND_ISR, STOP_REPLICA)
_HEADER_V1 = struct.Struct(">hhih")  # key, version, correlation id, client id length
_MAX_FRAME = 100 * 1024 * 1024
# The replication model's error names (Kafka's) and their codes on the wire.
ERROR_CODES = {
    "NOT_LEADER_OR_FOLLOWER": 6,
    "UNKNOWN_TOPIC_OR_PARTITION": 3,
    "NOT_ENOUGH_REPLICAS": 19,
    "NOT_ENOUGH_REPLICAS_AFTER_APPEND": 20,
    "FENCED_LEADER_EPOCH": 74,
    "UNKNOWN_LEADER_EPOCH": 75,
}
ERROR_NAMES = {code: name for name, code in ERROR_CODES.items()}


class PeerError(Exception):
    """The peer is unreachable or answered something unreadable."""


def encode_controller_request(request: ControllerRequest) -> tuple[int, bytes]:
    if isinstance(request, LeaderAndIsr):
        body = {
            "controller_id": request.controller_id,
            "controller_epoch": request.controller_epoch,
            "partitions": [
                {
                    "topic": p.topic,
                    "partition": p.partition,
                    "leader": p.leader,
                    "leader_epoch": p.leader_epoch,
                    "isr": list(p.isr),
                    "zk_version": p.zk_version,
                    "replicas": list(p.replicas),
                    "controller_epoch": p.controller_epoch,
                }
                for p in request.partitions
            ],
        }
        return LEADER_AND_ISR, json.dumps(body).encode()
    body = {
        "controller_id": request.controller_id,
        "controller_epoch": request.controller_epoch,
        "partitions": [list(tp) for tp in request.partitions],
        "delete": request.delete,
    }
    return STOP_REPLICA, json.dumps(body).encode()


def decode_controller_request(api_key: int, body: bytes) -> ControllerRequest:
    """Raises ValueError (or KeyError / TypeError) on a body that is not one of ours."""
    value = json.loads(body)
    if api_key == LEADER_AND_ISR:
        partitions = tuple(
            LeaderAndIsrPartition(
                p["topic"],
                int(p["partition"]),
                int(p["leader"]),
                int(p["leader_epoch"]),
                tuple(p["isr"]),
                int(p["zk_version"]),
                tuple(p["replicas"]),
                int(p["controller_epoch"]),
            )
            for p in value["partitions"]
        )
        return LeaderAndIsr(int(value["controller_id"]), int(value["controller_epoch"]), partitions)
    partitions = tuple(TopicPartition(t, int(p)) for t, p in value["partitions"])
    return StopReplica(
        int(value["controller_id"]),
        int(value["controller_epoch"]),
        partitions,
        bool(value["delete"]),
    )


def split_internal(payload: bytes) -> tuple[int, int, bytes]:
    """(api key, correlation id, JSON body) of an internal request frame."""
    if len(payload) < _HEADER_V1.size:
        raise ValueError("internal request shorter than its header")
    api_key, _, correlation_id, client_length = _HEADER_V1.unpack_from(payload)
    return api_key, correlation_id, payload[_HEADER_V1.size + max(client_length, 0) :]


def internal_response(correlation_id: int, error_code: int) -> bytes:
    return frame(struct.pack(">ih", correlation_id, error_code))


class PeerConnection:
    """One connection to another broker; one request at a time."""

    def __init__(self, host: str, port: int, client_id: str, timeout_s: float = 5.0) -> None:
        self.host, self.port, self.client_id, self.timeout_s = host, port, client_id, timeout_s
        self._reader: asyncio.StreamReader | None = None
        self._writer: asyncio.StreamWriter | None = None
        self._correlation = 0

    async def _exchange(self, payload: bytes, timeout_s: float) -> bytes:
        try:
            if self._writer is None:
                self._reader, self._writer = await asyncio.wait_for(
                    asyncio.open_connection(self.host, self.port), self.timeout_s
                )
            self._writer.write(frame(payload))
            await self._writer.drain()
            answer = await asyncio.wait_for(read_frame(self._reader, _MAX_FRAME), timeout_s)
        except (OSError, TimeoutError, asyncio.IncompleteReadError, FrameError) as e:
            self.close()
            raise PeerError(f"{self.host}:{self.port}: {type(e).__name__}: {e}") from None
        if answer is None:
            self.close()
            raise PeerError(f"{self.host}:{self.port} closed the connection")
        return answer

    async def request(
        self, api_key: int, version: int, values: dict[str, Any], timeout_s: float | None = None
    ) -> Any:
        """Send a kio request built from ``values``; the decoded response body."""
        self._correlation += 1
        cls = kio.index.load_request_schema(api_key, version)
        header_cls = cls.__header_schema__
        buffer = io.BytesIO()
        entity_writer(header_cls)(
            buffer,
            build(
                header_cls,
                {
                    "request_api_key": api_key,
                    "request_api_version": version,
                    "correlation_id": self._correlation,
                    "client_id": self.client_id,
                },
            ),
        )
        entity_writer(cls)(buffer, build(cls, values))
        answer = await self._exchange(buffer.getvalue(), timeout_s or self.timeout_s)
        response_cls = kio.index.load_response_schema(api_key, version)
        try:
            _, offset = entity_reader(response_cls.__header_schema__)(answer, 0)
            body, _ = entity_reader(response_cls)(answer, offset)
        except Exception as e:  # noqa: BLE001 - kio raises many kinds
            self.close()
            raise PeerError(
                f"{self.host}:{self.port}: unreadable response ({type(e).__name__})"
            ) from None
        return body

    async def controller_request(self, request: ControllerRequest) -> int:
        """Deliver a LeaderAndIsr or StopReplica; the error code the broker answered."""
        self._correlation += 1
        api_key, body = encode_controller_request(request)
        client = self.client_id.encode()
        answer = await self._exchange(
            _HEADER_V1.pack(api_key, 0, self._correlation, len(client)) + client + body,
            self.timeout_s,
        )
        if len(answer) < 6:
            raise PeerError(f"{self.host}:{self.port}: short answer to an internal request")
        return struct.unpack_from(">h", answer, 4)[0]

    def close(self) -> None:
        if self._writer is not None:
            self._writer.close()
        self._reader = self._writer = None
