"""Kafka's replication control plane in ZooKeeper mode (Kafka 2.6) as a sans-IO model: the
controller (:mod:`~reference.replication.controller`), brokers with their replicas
(:mod:`~reference.replication.broker`, :mod:`~reference.replication.partition`,
:mod:`~reference.replication.log`), Kafka's znodes (:mod:`~reference.replication.znodes`),
a whole-cluster harness over the ZooKeeper model (:mod:`~reference.replication.cluster`)
and the named invariants (:mod:`~reference.replication.invariants`).

The rules are stated in spec/isr-versioned-writes.md (ISR-1 …).
"""
