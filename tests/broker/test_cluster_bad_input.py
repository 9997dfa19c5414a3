"""Bad input to the cluster brokers: malformed, truncated and oversized frames, unknown API
keys and versions, requests before ApiVersions, connections beyond ``--max-connections``,
idle ones, and random and mutated frames (coordspec.broker.wire.fuzz). Each gets an error response or
a closed connection, never a crash, a hang or unbounded memory, and every broker keeps
serving clients and its peers (replication, the controller's requests) throughout.

One started cluster with small limits, a real ZooKeeper (tests/broker/cluster_fixtures.py). The
fuzz run sends ``$COORDSPEC_CLUSTER_FUZZ_FRAMES`` frames (default 50,000), two to four per
connection, to the brokers in turn, from ``random.Random($COORDSPEC_CLUSTER_FUZZ_SEED)``.
"""

from __future__ import annotations

import contextlib
import os
import random
import socket
import struct
import time
from collections.abc import Iterator

import kio.index
import pytest
import raw_frames
from cluster_fixtures import (  # noqa: F401 - a pytest fixture
    SETTINGS,
    assert_no_errors,
    wait_for,
    wait_replicated,
    zookeeper_fixture,
)
from kio.serial import entity_reader

from coordspec.broker.apis.create_topics import MAX_RECORDS_PER_USER_OP
from coordspec.broker.cluster.apis import APIS
from coordspec.broker.cluster.launcher import Cluster, ClusterError
from coordspec.broker.testing import Connection, encode_request
from coordspec.broker.wire import fuzz
from coordspec.broker.wire.fuzz import framed
from coordspec.broker.wire.protocol import BadRequest, decode_request

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

MAX_FRAME = 256 * 1024
MAX_CONNECTIONS = 4
IDLE_MS = 8000
FUZZ_FRAMES = int(os.environ.get("COORDSPEC_CLUSTER_FUZZ_FRAMES", "50000"))
FUZZ_SEED = int(os.environ.get("COORDSPEC_CLUSTER_FUZZ_SEED", "6"))
ANSWER_TIMEOUT_S = 20.0
RSS_GROWTH_BOUND_KIB = 32 * 1024  # 100,000 frames grew each broker by about 2 MiB
TOPIC = "bad-input"


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory, zookeeper_connect: str) -> Iterator[Cluster]:
    data_dir = tmp_path_factory.mktemp("cluster")
    limits = {
        "socket.request.max.bytes": MAX_FRAME,
        "max.connections": MAX_CONNECTIONS,
        "connections.max.idle.ms": IDLE_MS,
    }
    try:
        with Cluster(
            data_dir,
            3,
            zookeeper_connect=f"{zookeeper_connect}/{data_dir.name}",
            settings={**SETTINGS, **limits},
        ) as started:
            with contextlib.closing(
                Connection(*started.peers[1], timeout_s=ANSWER_TIMEOUT_S)
            ) as connection:
                body = connection.request(
                    19,
                    7,
                    {
                        "topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 3}],
                        "timeout": 10_000,
                    },
                )
            assert body.topics[0].error_code == 0, body
            wait_replicated(started, TOPIC, 1)
            yield started
            assert_no_errors(started)
            for broker in started.broker_ids:
                assert "internal error" not in started.stderr(broker), started.stderr(broker)
    except ClusterError as e:
        pytest.fail(f"the cluster: {e}", pytrace=False)


# -- raw sockets -------------------------------------------------------------------


def connect(cluster: Cluster, broker: int = 1) -> socket.socket:
    return raw_frames.connect(cluster.peers[broker], ANSWER_TIMEOUT_S)


def read_until_closed(sock: socket.socket) -> bytes:
    return raw_frames.read_until_closed(sock, ANSWER_TIMEOUT_S)


def exchange(cluster: Cluster, data: bytes, broker: int = 1) -> list[bytes]:
    return raw_frames.exchange(cluster.peers[broker], data, ANSWER_TIMEOUT_S)


def api_versions() -> bytes:
    return encode_request(
        18, 3, {"client_software_name": "t", "client_software_version": "1"}, correlation_id=7
    )


def answered(sock: socket.socket) -> bool:
    return raw_frames.answered(sock, api_versions())


def api_versions_works(cluster: Cluster, broker: int = 1) -> bool:
    frames = exchange(cluster, api_versions(), broker)
    return len(frames) == 1 and struct.unpack_from(">ih", frames[0]) == (7, 0)


def rss_kib(cluster: Cluster, broker: int) -> int:
    for line in open(f"/proc/{cluster.processes[broker].pid}/status"):  # noqa: SIM115 - read at once
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    raise AssertionError("no VmRSS")


def commit_and_fetch(cluster: Cluster, group: str, offset: int) -> None:
    """A group's offset committed at its coordinator (replicated to every broker, min ISR 2) and fetched back."""
    with contextlib.closing(
        Connection(*cluster.peers[1], timeout_s=ANSWER_TIMEOUT_S)
    ) as any_broker:
        found = any_broker.request(
            10, 4, {"key_type": 0, "coordinator_keys": [group]}
        ).coordinators[0]
    assert found.error_code == 0, found
    with contextlib.closing(
        Connection(found.host, found.port, timeout_s=ANSWER_TIMEOUT_S)
    ) as coordinator:
        committed = coordinator.request(
            8,
            8,
            {
                "group_id": group,
                "generation_id_or_member_epoch": -1,
                "member_id": "",
                "topics": [
                    {
                        "name": TOPIC,
                        "partitions": [{"partition_index": 0, "committed_offset": offset}],
                    }
                ],
            },
        )
        assert committed.topics[0].partitions[0].error_code == 0, committed
        fetched = coordinator.request(
            9, 8, {"groups": [{"group_id": group, "topics": None}], "require_stable": True}
        )
    partitions = [
        (t.name, p.partition_index, p.committed_offset)
        for t in fetched.groups[0].topics
        for p in t.partitions
    ]
    assert fetched.groups[0].error_code == 0 and partitions == [(TOPIC, 0, offset)], fetched


# -- one case each -------------------------------------------------------------------


def test_requests_before_api_versions_are_served(cluster: Cluster) -> None:
    for broker in cluster.broker_ids:
        frames = exchange(
            cluster,
            encode_request(
                3, 12, {"topics": [], "allow_auto_topic_creation": False}, correlation_id=7
            ),
            broker,
        )
        assert len(frames) == 1 and struct.unpack_from(">i", frames[0]) == (7,)
    commit_and_fetch(
        cluster, "before-api-versions", 3
    )  # a connection whose first request is FindCoordinator, then one whose first is OffsetCommit


def test_a_frame_above_the_maximum_closes_the_connection(cluster: Cluster) -> None:
    with connect(cluster) as sock:
        sock.sendall(
            struct.pack(">i", MAX_FRAME + 1)
        )  # no body follows: refused on the length alone
        assert read_until_closed(sock) == b""
    # A whole request above the maximum is refused too, after one that was answered on the same connection.
    big = encode_request(
        3,
        12,
        {"topics": [{"name": "x" * 200}] * (MAX_FRAME // 200), "allow_auto_topic_creation": False},
    )
    with connect(cluster) as sock:
        assert answered(sock)
        with contextlib.suppress(BrokenPipeError, ConnectionResetError):
            sock.sendall(big)
        assert read_until_closed(sock) == b""
    assert api_versions_works(cluster)


def test_a_negative_length_closes_the_connection(cluster: Cluster) -> None:
    assert exchange(cluster, struct.pack(">i", -5) + b"xxxxx") == []
    assert api_versions_works(cluster)


def test_a_truncated_frame_then_end_of_stream_closes_the_connection(cluster: Cluster) -> None:
    whole = api_versions()
    assert exchange(cluster, whole[:-3]) == []
    assert exchange(cluster, whole[:2]) == []
    assert api_versions_works(cluster)


def test_a_frame_shorter_than_a_header_closes_the_connection(cluster: Cluster) -> None:
    assert exchange(cluster, framed(b"\x00\x12\x00")) == []


def test_an_unknown_api_key_closes_the_connection(cluster: Cluster) -> None:
    assert exchange(cluster, framed(struct.pack(">hhi", 999, 0, 1) + b"\xff\xff")) == []
    # A key Kafka has but the cluster does not serve (DeleteRecords) is closed the same way.
    assert exchange(cluster, encode_request(21, 2, {"topics": [], "timeout": 1000})) == []
    assert api_versions_works(cluster)


def test_an_unsupported_version_closes_the_connection(cluster: Cluster) -> None:
    assert exchange(cluster, framed(struct.pack(">hhi", 11, 99, 1) + b"\x00" * 20)) == []


def test_api_versions_above_the_range_answers_unsupported_version_with_its_own_range(
    cluster: Cluster,
) -> None:
    (frame,) = exchange(
        cluster, framed(struct.pack(">hhi", 18, 77, 42) + b"\x00\x04fuzz" + b"\x00" * 8)
    )
    response, _ = entity_reader(kio.index.load_response_schema(18, 0))(
        frame, 4
    )  # KIP-511: header v0, body v0
    assert struct.unpack_from(">i", frame) == (42,) and response.error_code == 35
    assert [(k.api_key, k.min_version, k.max_version) for k in response.api_keys] == [(18, 0, 4)]


def test_a_body_that_does_not_decode_closes_the_connection(cluster: Cluster) -> None:
    header = struct.pack(">hhih", 11, 5, 1, 4) + b"fuzz"
    assert exchange(cluster, framed(header + b"\x00\x10only-part")) == []
    assert api_versions_works(cluster)


def test_an_internal_request_that_does_not_decode_is_an_invalid_request(cluster: Cluster) -> None:
    # LeaderAndIsr's internal framing (coordspec.broker.cluster.peer_wire) with a body that is not its JSON.
    for body in (b"not json", b'{"controller_id": 1}', b"[]"):
        (frame,) = exchange(cluster, framed(struct.pack(">hhih", 4, 0, 9, 1) + b"c" + body))
        assert struct.unpack(">ih", frame) == (9, 42)
    assert api_versions_works(cluster)


def test_a_stalled_connection_does_not_hold_up_others(cluster: Cluster) -> None:
    with connect(cluster) as stalled:
        stalled.sendall(struct.pack(">i", 1000) + b"partial")
        assert api_versions_works(cluster)


def test_an_idle_client_connection_is_closed(cluster: Cluster) -> None:
    with connect(cluster, 2) as sock:
        assert answered(sock)
        started = time.monotonic()
        sock.settimeout(IDLE_MS / 1000 + ANSWER_TIMEOUT_S)
        assert sock.recv(1) == b""  # closed by the broker, not by the timeout
        assert IDLE_MS / 1000 - 0.5 < time.monotonic() - started < IDLE_MS / 1000 + ANSWER_TIMEOUT_S
    commit_and_fetch(
        cluster, "after-idle", 4
    )  # replication (its peers never idle-closed) still serves the group


def test_client_connections_beyond_the_maximum_are_closed_while_peers_still_connect(
    cluster: Cluster,
) -> None:
    held: dict[int, list[socket.socket]] = {b: [] for b in cluster.broker_ids}
    try:
        for broker in cluster.broker_ids:
            for _ in range(MAX_CONNECTIONS - 1):
                held[broker].append(connect(cluster, broker))
                assert answered(held[broker][-1])
        admin = Connection(
            *cluster.peers[1], timeout_s=ANSWER_TIMEOUT_S
        )  # broker 1's last client connection
        with contextlib.closing(admin):
            assert (
                admin.request(
                    18, 3, {"client_software_name": "t", "client_software_version": "1"}
                ).error_code
                == 0
            )
            for broker in cluster.broker_ids:
                if broker != 1:
                    held[broker].append(connect(cluster, broker))
                    assert answered(held[broker][-1])
                with connect(cluster, broker) as extra:
                    assert not answered(extra), (
                        f"broker {broker} served a connection beyond --max-connections"
                    )
            # Every broker is at its limit of clients; a new topic's followers still connect to its leaders.
            topic = "beyond-the-limit"
            created = admin.request(
                19,
                7,
                {
                    "topics": [{"name": topic, "num_partitions": 3, "replication_factor": 3}],
                    "timeout": 10_000,
                },
            )
            assert created.topics[0].error_code == 0, created

            def refresh() -> None:  # keep the held connections from going idle while waiting
                assert all(
                    answered(sock) for socks in held.values() for sock in socks
                ) and answered(admin.sock)
                time.sleep(0.5)

            wait_for(
                lambda: _replicated(cluster, topic, 3),
                30,
                f"{topic} in sync on every broker",
                poll=refresh,
            )
        assert all(answered(sock) for socks in held.values() for sock in socks)
    finally:
        for sock in (s for socks in held.values() for s in socks):
            sock.close()
    # Once the brokers have noticed the closes, new connections are served again.
    wait_for(
        lambda: all(api_versions_works(cluster, b) for b in cluster.broker_ids),
        15,
        "connections served again",
    )


def test_a_client_that_never_reads_is_no_longer_read_and_holds_up_no_one(cluster: Cluster) -> None:
    with connect(cluster, 3) as flood:
        read = raw_frames.read_from_a_client_that_never_reads(flood, api_versions())
        assert read < 1024 * 1024, (
            f"the broker read {read} more bytes from a client that reads nothing"
        )
        assert api_versions_works(cluster, 3)
        commit_and_fetch(cluster, "beside-a-flood", 6)


def _replicated(cluster: Cluster, topic: str, partitions: int) -> bool:
    try:
        wait_replicated(cluster, topic, partitions, timeout_s=0)
    except AssertionError:
        return False
    return True


# -- random and mutated frames -------------------------------------------------------


CREATE_TOPICS = 19


def test_a_topic_of_more_partitions_than_kraft_allows_is_refused(cluster: Cluster) -> None:
    # validate_only: refused all the same, before any assignment is built.
    topics = [{"name": "huge", "num_partitions": MAX_RECORDS_PER_USER_OP, "replication_factor": 3}]
    (frame,) = exchange(
        cluster, encode_request(19, 7, {"topics": topics, "timeout": 1000, "validate_only": True})
    )
    response, _ = entity_reader(kio.index.load_response_schema(19, 7))(frame, 5)
    assert [(t.name, t.error_code) for t in response.topics] == [
        ("huge", 44)
    ]  # POLICY_VIOLATION, as the single broker


def decodes(frame: bytes) -> bool:
    """Whether ``frame`` is a whole request of an API and version the cluster serves, whose body decodes."""
    if len(frame) < 12 or struct.unpack_from(">i", frame)[0] != len(frame) - 4:
        return False
    key, version = struct.unpack_from(">hh", frame, 4)
    if key not in APIS or version not in APIS[key].versions:
        return False
    try:
        decode_request(frame[4:], key, version)
    except BadRequest:
        return False
    return True


def test_random_and_mutated_frames_never_crash_hang_or_grow_a_broker(cluster: Cluster) -> None:
    choose = fuzz.RandomChoices(FUZZ_SEED)
    picker = random.Random(FUZZ_SEED)
    before = {b: rss_kib(cluster, b) for b in cluster.broker_ids}
    sent, connections, answers, requests_first = 0, 0, 0, 0
    while sent < FUZZ_FRAMES:
        frames = [fuzz.frame(choose) for _ in range(picker.randint(2, 4))]
        broker = cluster.broker_ids[connections % len(cluster.broker_ids)]
        answered_here = len(exchange(cluster, b"".join(frames), broker))
        if frames and decodes(
            frames[0]
        ):  # a request: answered before anything after it can close the connection
            requests_first += 1
            assert answered_here >= 1, (
                f"broker {broker} closed on a request it serves without answering: {frames[0][:64].hex()}"
            )
        sent, connections, answers = sent + len(frames), connections + 1, answers + answered_here
        if connections % 500 == 0:
            assert cluster.running() == set(cluster.broker_ids), (
                f"a broker died after {sent} frames"
            )
    assert cluster.running() == set(cluster.broker_ids)
    growth = {b: rss_kib(cluster, b) - before[b] for b in cluster.broker_ids}
    print(
        f"{sent} frames in {connections} connections, {requests_first} starting with a request that decodes, "
        f"{answers} answers; RSS growth KiB {growth}"
    )
    assert requests_first > connections // 100, (
        "too few frames decode for the fuzzing to reach the handlers"
    )
    assert all(g < RSS_GROWTH_BOUND_KIB for g in growth.values()), growth
    for broker in cluster.broker_ids:
        assert api_versions_works(cluster, broker)
    commit_and_fetch(cluster, "after-fuzzing", 5)
    assert_no_errors(cluster)
