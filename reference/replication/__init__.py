"""Kafka's replication control plane in ZooKeeper mode (Kafka 2.6) as a sans-IO model: the
controller (:mod:`~coordspec.reference.replication.controller`), brokers with their replicas
(:mod:`~coordspec.reference.replication.broker`, :mod:`~coordspec.reference.replication.partition`,
:mod:`~coordspec.reference.replication.log`), Kafka's znodes (:mod:`~coordspec.reference.replication.znodes`),
a whole-cluster harness over the ZooKeeper model (:mod:`~coordspec.reference.replication.cluster`)
and the named invariants (:mod:`~coordspec.reference.replication.invariants`).

The rules are stated in spec/isr-versioned-writes.md (ISR-1 …).
"""
