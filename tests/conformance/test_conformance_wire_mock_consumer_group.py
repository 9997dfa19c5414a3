"""librdkafka's mock cluster and the consumer group (KIP-848), checked through the kafka
target: these tests pin what a run of the cg-* scenarios against it reports (confluent-kafka
2.16.1, librdkafka 2.16.0; the mock's source read at librdkafka commit 4c3b017c3de8), so that
a change in the mock, the codec or the oracle shows up. Kafka's side: 4.0's group coordinator
(spec/consumer-group.md)."""

from __future__ import annotations

import asyncio
import io
import signal

import pytest

from coordspec.conformance.suite import run
from coordspec.conformance.suite.kafka_target import KafkaTarget
from coordspec.conformance.suite.loader import SCENARIO_DIR
from coordspec.conformance.suite.mock_target import MockCluster, start_mock
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.records import TopicPartitions
from coordspec.reference.group.requests import ConsumerGroupHeartbeat

pytestmark = pytest.mark.wire


def test_the_mock_serves_heartbeat_v1_alone_and_no_describe():
    """ApiVersions: ConsumerGroupHeartbeat v1 only (Kafka 4.0: v0-v1) and no
    ConsumerGroupDescribe (Kafka 4.0: v0), so the scenarios that describe the group or pin
    v0 are not run on the mock."""
    target = start_mock()
    try:
        assert target.versions["ConsumerGroupHeartbeat"] == range(1, 2)
        assert target.versions["ConsumerGroupDescribe"] == range(0)
        result = run(
            target,
            scenarios=[SCENARIO_DIR / "cg-join-gets-every-partition.yaml"],
            out=io.StringIO(),
        ).results[0]
    finally:
        target.stop()
    assert result.status == "not_run"
    assert "no version in common" in result.reason


def test_a_join_by_topic_names_alone_aborts_the_mock():
    """CG-9: a join naming its topics and no regex (subscribed_topic_regex null, as Kafka's
    own consumer sends it) is answered by Kafka; the mock asserts that names and regex are
    both null or both set (validate_subscription in rdkafka_mock_cgrp.c) and the process
    aborts. The run reports the closed connection at the scenario's first step."""
    cluster = MockCluster().start()
    target = KafkaTarget(cluster.addresses[0], name="librdkafka-mock")
    target.on_stop(cluster.stop)
    try:
        target.check()
        result = run(
            target,
            scenarios=[SCENARIO_DIR / "cg-full-heartbeat-gets-the-assignment.yaml"],
            out=io.StringIO(),
        ).results[0]
        assert cluster.process is not None
        assert cluster.process.wait(10) == -signal.SIGABRT
    finally:
        target.stop()
    assert result.status == "failed"
    assert result.failure.kind == "connection"
    assert result.failure.step == 1
    assert "CG-9" in result.failure.rules
    assert " after ConsumerGroupHeartbeat v1 (correlation id " in result.failure.message


def test_a_first_join_with_a_regex_gets_epoch_2_and_partitions_by_topic_id():
    """With a regex beside the names the mock lets a member join, and the codec maps its
    answer's topic ids back to the catalog's names. A new group's first member gets member
    epoch 2 from the mock (its group starts at epoch 1 and the first target assignment bumps
    it); Kafka's starts at 0 and the first join takes it to 1 (CG-10)."""
    target = start_mock()

    async def join():
        session = await target.open("coordspec-cg-join", target.config)
        try:
            await session.send(
                "c1",
                ConsumerGroupHeartbeat(
                    1,
                    1,
                    0,
                    group_id=session.group_id,
                    member_id="m1",
                    rebalance_timeout_ms=10_000,
                    subscribed_topic_names=("foo",),
                    subscribed_topic_regex="",
                    topic_partitions=(),
                ),
            )
            return (await session.receive("c1", 5_000))[0]
        finally:
            await session.close()

    try:
        answer = asyncio.run(join())
    finally:
        target.stop()
    assert answer.error_code == ErrorCode.NONE
    assert answer.member_id == "m1"
    assert answer.member_epoch == 2
    [assigned] = answer.assignment
    assert isinstance(assigned, TopicPartitions) and assigned.topic_id == "foo"
    assert sorted(assigned.partitions) == list(range(target.partitions["foo"]))
