"""The group commit of ``__consumer_offsets``: every commit of a burst from many connections,
each with several in flight, survives a kill -9 once acknowledged, and each connection's
replies come in its request order."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordspec.broker.testing import BrokerProcess, Connection

pytestmark = pytest.mark.wire

CONNECTIONS = 40
GROUPS = 4
COMMITS_PER_CONNECTION = 3  # pipelined on one connection, the same partition: the last one wins
OFFSET_COMMIT, OFFSET_FETCH, CREATE_TOPICS = 8, 9, 19


def commit(group: str, partition: int, offset: int) -> dict:
    return {
        "group_id": group,
        "generation_id_or_member_epoch": -1,
        "member_id": "",
        "topics": [
            {
                "name": "burst",
                "partitions": [{"partition_index": partition, "committed_offset": offset}],
            }
        ],
    }


def slot(i: int) -> tuple[str, int]:
    """Connection ``i`` commits to its own group and partition."""
    return f"burst-{i % GROUPS}", i // GROUPS


def test_a_burst_of_concurrent_commits_survives_a_kill_9(tmp_path: Path) -> None:
    data = tmp_path / "data"
    broker = BrokerProcess(data).start()
    try:
        admin = Connection(broker.host, broker.port)
        created = admin.request(
            CREATE_TOPICS,
            7,
            {
                "topics": [
                    {
                        "name": "burst",
                        "num_partitions": CONNECTIONS // GROUPS,
                        "replication_factor": 1,
                    }
                ],
                "timeout": 10000,
            },
        )
        assert created.topics[0].error_code == 0
        connections = [Connection(broker.host, broker.port) for _ in range(CONNECTIONS)]
        for k in range(
            COMMITS_PER_CONNECTION
        ):  # every connection has all its commits in flight at once
            for i, connection in enumerate(connections):
                connection.send(OFFSET_COMMIT, 8, commit(*slot(i), offset=1000 * k + i))
        for connection in connections:
            answers = [connection.receive() for _ in range(COMMITS_PER_CONNECTION)]
            assert [correlation_id for correlation_id, _ in answers] == list(
                range(1, COMMITS_PER_CONNECTION + 1)
            )
            assert all(body.topics[0].partitions[0].error_code == 0 for _, body in answers)
        broker.kill()  # every commit above was acknowledged: none may be lost
        for connection in [admin, *connections]:
            connection.close()

        broker.start()
        reader = Connection(broker.host, broker.port)
        last = 1000 * (COMMITS_PER_CONNECTION - 1)
        for g in range(GROUPS):
            fetched = reader.request(
                OFFSET_FETCH, 8, {"groups": [{"group_id": f"burst-{g}", "topics": None}]}
            )
            offsets = {
                p.partition_index: p.committed_offset
                for t in fetched.groups[0].topics
                for p in t.partitions
            }
            expected = {
                slot(i)[1]: last + i for i in range(CONNECTIONS) if slot(i)[0] == f"burst-{g}"
            }
            assert offsets == expected
        reader.close()
    finally:
        broker.stop()
