"""Produce with acks=all respects min.insync.replicas (2 here, given as the cluster's
``--broker-config``; Kafka's default is 1) on a 3-broker cluster: with
two brokers killed the leader's ISR is itself alone and the produce is refused with
NOT_ENOUGH_REPLICAS, while acks=1 is acknowledged (Kafka checks min.insync.replicas for
acks=all only); once one broker is back in the ISR the acks=all produce is acknowledged."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest
from cluster_fixtures import SETTINGS, zookeeper_fixture  # noqa: F401 - the module's ZooKeeper, by name
from test_cluster_failover import assert_no_errors, create_topic
from test_cluster_zombie import produce_to

from coordspec.broker.cluster.launcher import Cluster
from coordspec.reference.replication.znodes import TopicPartition

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

TOPIC = "ledger"
NONE, NOT_ENOUGH_REPLICAS = 0, 19


def test_acks_all_needs_min_insync_replicas(tmp_path: Path, zookeeper_connect: str) -> None:
    with Cluster(
        tmp_path,
        3,
        zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}",
        settings={**SETTINGS, "min.insync.replicas": 2},
    ) as cluster:
        create_topic(cluster.bootstrap, TOPIC, 1)
        tp = TopicPartition(TOPIC, 0)
        survivor = cluster.controller()
        others = [b for b in cluster.broker_ids if b != survivor]
        for broker in others:
            cluster.kill(broker)
        cluster.wait(
            lambda view: view.leader(tp) == survivor and view.states[tp].isr == (survivor,),
            "the survivor alone in the ISR",
            20,
        )
        assert (
            asyncio.run(produce_to(cluster.peers[survivor], TOPIC, 0, b"too-few"))
            == NOT_ENOUGH_REPLICAS
        )
        # Kafka checks min.insync.replicas for acks=all only: acks=1 is appended and answered.
        assert (
            asyncio.run(produce_to(cluster.peers[survivor], TOPIC, 0, b"acks-one", acks=1)) == NONE
        )
        segment = tmp_path / f"broker-{survivor}" / f"{TOPIC}-0" / "replica.log"
        assert b"acks-one" in segment.read_bytes() and b"too-few" not in segment.read_bytes()
        cluster.start_broker(others[0])
        cluster.wait(
            lambda view: len(view.states[tp].isr) == 2, "a second broker back in the ISR", 30
        )
        assert asyncio.run(produce_to(cluster.peers[survivor], TOPIC, 0, b"enough")) == NONE
        assert_no_errors(cluster)
