"""OffsetDelete (GM-63) against the broker from real clients: librdkafka (confluent-kafka)
consumers form the group and commit, kafka-python's admin client deletes offsets
(confluent-kafka's Python binding has no call for OffsetDelete).
"""

from __future__ import annotations

from pathlib import Path

import kafka
import pytest
from confluent_kafka import TopicPartition
from kafka.admin import KafkaAdminClient
from kafka.errors import GroupIdNotFoundError, GroupSubscribedToTopicError, NoError
from test_broker_confluent import (
    BROKER_ARGS,
    Member,
    assert_trace_replays,
    check_trace,
    consumer,
    create_topic,
    poll_all,
    wait_for,
)

from coordspec.broker.testing import BrokerProcess, Connection

pytestmark = pytest.mark.wire


def committed(admin: KafkaAdminClient, group: str) -> dict[tuple[str, int], int]:
    offsets = admin.list_group_offsets({group: None})[group]
    return {(tp.topic, tp.partition): o.offset for tp, o in offsets.items()}


def advertised(bootstrap: str, api_key: int) -> tuple[int, int] | None:
    host, port = bootstrap.split(":")
    connection = Connection(host, int(port))
    try:
        versions = connection.request(
            18, 3, {"client_software_name": "t", "client_software_version": "1"}
        )
    finally:
        connection.close()
    ranges = {int(k.api_key): (k.min_version, k.max_version) for k in versions.api_keys}
    return ranges.get(api_key)


def test_admin_deletes_offsets_but_not_those_of_a_subscribed_topic(tmp_path: Path) -> None:
    with BrokerProcess(tmp_path, *BROKER_ARGS) as broker:
        assert advertised(broker.bootstrap, 47) == (0, 0)  # OffsetDelete v0
        create_topic(broker.bootstrap, "ledger", 2)
        create_topic(broker.bootstrap, "archive", 1)
        member = Member(consumer(broker.bootstrap, "reporting"), "ledger")
        wait_for(lambda: member.assigned() == {0, 1}, poll_all(member), 20, "the assignment")
        member.client.commit(
            offsets=[TopicPartition("ledger", 0, 5), TopicPartition("archive", 0, 7)],
            asynchronous=False,
        )
        admin = KafkaAdminClient(bootstrap_servers=broker.bootstrap)
        try:
            ledger, archive = kafka.TopicPartition("ledger", 0), kafka.TopicPartition("archive", 0)
            assert committed(admin, "reporting") == {("ledger", 0): 5, ("archive", 0): 7}

            # The group is Stable and subscribed to ledger: only archive's offset goes.
            answer = admin.delete_group_offsets("reporting", [ledger, archive])
            assert answer == {ledger: GroupSubscribedToTopicError, archive: NoError}
            assert committed(admin, "reporting") == {("ledger", 0): 5}

            # Once the group is Empty, ledger's offset can go too.
            member.client.close()
            assert admin.delete_group_offsets("reporting", [ledger]) == {ledger: NoError}
            assert committed(admin, "reporting") == {}

            with pytest.raises(GroupIdNotFoundError):
                admin.delete_group_offsets("nobody", [ledger])
        finally:
            admin.close()
    assert_trace_replays(tmp_path / "trace.jsonl")
    check_trace(tmp_path / "trace.jsonl", {"OffsetDelete", "OffsetFetch"})
