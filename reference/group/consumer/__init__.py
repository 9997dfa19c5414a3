"""The consumer group of KIP-848 inside the one group coordinator (spec/consumer-group.md).

Follows Kafka 4.0's ``GroupMetadataManager.consumerGroupHeartbeat`` and the classes it uses
(``ConsumerGroup``, ``ConsumerGroupMember``, ``CurrentAssignmentBuilder``,
``TargetAssignmentBuilder``). A handler computes the records a step writes from the group as
it is; the records are then replayed onto the group (``replay``), which is also how a loaded
partition rebuilds it, so the live path and the loader share one meaning of each record.
"""
