"""Kafka's CooperativeStickyAssignorTest, ported scenario by scenario, with the
AbstractStickyAssignorTest cases it inherits (``AbstractStickyAssignorTests`` from
test_assignors_sticky.py, run here with the cooperative hooks, as Kafka does).

As in Kafka, ``verify_validity_and_balance`` also checks that no partition is assigned in
the rebalance that revokes it, and plays the follow-up rebalances (members report what
they now own) until nothing is revoked, mutating the given assignment and subscriptions.

Skipped:
- CooperativeStickyAssignorTest.testUniformSubscriptionTransferOwnershipListIsRight: its
  expectation comes from rack-aware assignment (replication factor 1 over two racks).
- The rack-aware runs of the inherited testRackAware* cases (see test_assignors_sticky.py).
"""

from __future__ import annotations

from sticky_cases import (
    AbstractStickyAssignorTests,
    consumer1,
    consumer2,
    consumer3,
    grouped,
    is_fully_balanced,
    owned_list,
    topic,
    topic1,
    topic2,
    tp,
    tp0,
    tp1,
)

from coordspec.reference.assignors import ASSIGNORS, CooperativeStickyAssignor
from coordspec.reference.assignors.cooperative_sticky import decode_generation, encode_user_data
from coordspec.reference.assignors.sticky import DEFAULT_GENERATION
from coordspec.reference.consumer_protocol import Subscription


class TestCooperativeStickyAssignor(AbstractStickyAssignorTests):
    """Kafka: CooperativeStickyAssignorTest (which extends AbstractStickyAssignorTest)."""

    def setup_method(self) -> None:
        super().setup_method()
        # A Java CooperativeStickyAssignor writes the generation it last saw
        # (onAssignment) into its user data; the tests build subscriptions through one.
        self.user_data_generation = DEFAULT_GENERATION

    def create_assignor(self):
        return CooperativeStickyAssignor()

    def on_assignment(self, generation: int) -> None:
        self.user_data_generation = generation

    def subscription_user_data(self) -> bytes:
        return encode_user_data(self.user_data_generation)

    def build_subscription_v0(self, topics, partitions, generation, consumer_index):
        return None  # cooperative-sticky needs subscription v1 or above

    def build_subscription_v1(self, topics, partitions, generation, consumer_index):
        self.on_assignment(generation)
        return Subscription(
            tuple(topics), self.subscription_user_data(), grouped(partitions), DEFAULT_GENERATION
        )

    def build_subscription_v2_above(self, topics, partitions, generation, consumer_index):
        return Subscription(
            tuple(topics), self.subscription_user_data(), grouped(partitions), generation
        )

    def generate_user_data(self, topics, partitions, generation):
        self.on_assignment(
            self.generation_id
        )  # as in Kafka, the test's generation, not the argument
        return self.subscription_user_data()

    def verify_owned_but_racks_match(self, topics, consumer_topics, owned):
        # Cooperative: owned partitions are kept, so the first rebalance stops halfway.
        intermediate = ["t1-2, t1-3, t1-4", "t2-0, t2-1, t2-2, t2-3", "t3-0, t3-1"]
        self.verify_assignment(topics, consumer_topics, owned, intermediate)
        self.verify_assignment(
            topics,
            consumer_topics,
            intermediate,
            [
                "t1-2, t1-3, t1-4, t2-4, t2-5",
                "t2-0, t2-1, t2-2, t2-3, t2-6",
                "t1-0, t1-1, t1-5, t3-0, t3-1",
            ],
        )

    def verify_validity_and_balance(self, subscriptions, assignments, partitions_per_topic) -> None:
        """Kafka's cooperative override: follow-up rebalances until nothing is revoked."""
        rebalances = 0
        while self.verify_cooperative_validity(subscriptions, assignments):
            for consumer, assigned in assignments.items():
                old = subscriptions[consumer]
                subscriptions[consumer] = self.build_subscription_v2_above(
                    list(old.topics), assigned, self.generation_id, -1
                )
            assignments.clear()
            assignments.update(self.assign(partitions_per_topic, subscriptions))
            rebalances += 1
            assert rebalances <= 4
        super().verify_validity_and_balance(subscriptions, assignments, partitions_per_topic)

    @staticmethod
    def verify_cooperative_validity(subscriptions, assignments) -> bool:
        """No partition is both revoked and newly assigned; True if anything is revoked."""
        added, revoked = set(), set()
        for consumer, assigned in assignments.items():
            owned = set(owned_list(subscriptions[consumer]))
            revoked |= owned - set(assigned)
            added |= set(assigned) - owned
        assert not added & revoked, (
            f"assigned in the same rebalance that revokes them: {added & revoked}"
        )
        return bool(revoked)

    def test_registered_under_its_protocol_name(self):
        assert isinstance(ASSIGNORS["cooperative-sticky"], CooperativeStickyAssignor)

    def test_encode_and_decode_generation(self):
        """Kafka: CooperativeStickyAssignorTest.testEncodeAndDecodeGeneration"""
        sub = Subscription((topic,), self.subscription_user_data())
        assert self.member_data(sub).generation == DEFAULT_GENERATION

        generation = 10
        self.on_assignment(generation)
        sub = Subscription((topic,), self.subscription_user_data())
        assert self.member_data(sub).generation == generation

    def test_decode_generation(self):
        """Kafka: CooperativeStickyAssignorTest.testDecodeGeneration"""
        assert self.member_data(Subscription((topic,))).generation is None

    def test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation_with_equal_partitions_per_consumer(
        self,
    ):
        """Kafka: CooperativeStickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersInSameGenerationWithEqualPartitionsPerConsumer"""
        partitions_per_topic = {topic: 3}
        self.subscriptions[consumer1] = self.build_subscription_v2_above(
            [topic], [tp(topic, 0), tp(topic, 1)], self.generation_id, 0
        )
        self.subscriptions[consumer2] = self.build_subscription_v2_above(
            [topic], [tp(topic, 0), tp(topic, 2)], self.generation_id, 1
        )
        self.subscriptions[consumer3] = self.build_subscription_v2_above(
            [topic], [], self.generation_id, 2
        )
        assignment = self.assign(partitions_per_topic)
        assert assignment[consumer1] == [tp(topic, 1)]
        assert assignment[consumer2] == [tp(topic, 2)]
        # topic-0 counts as owned, so it waits until both claimants have revoked it
        assert assignment[consumer3] == []
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

    def test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation_with_unequal_partitions_per_consumer(
        self,
    ):
        """Kafka: CooperativeStickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersInSameGenerationWithUnequalPartitionsPerConsumer"""
        partitions_per_topic = {topic: 4}
        self.subscriptions[consumer1] = self.build_subscription_v2_above(
            [topic], [tp(topic, 0), tp(topic, 1)], self.generation_id, 0
        )
        self.subscriptions[consumer2] = self.build_subscription_v2_above(
            [topic], [tp(topic, 0), tp(topic, 2)], self.generation_id, 1
        )
        self.subscriptions[consumer3] = self.build_subscription_v2_above(
            [topic], [], self.generation_id, 2
        )
        assignment = self.assign(partitions_per_topic)
        assert assignment[consumer1] == [tp(topic, 1), tp(topic, 3)]
        assert assignment[consumer2] == [tp(topic, 2)]
        assert assignment[consumer3] == []
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

    def test_member_data_with_inconsistent_data(self):
        """Kafka: CooperativeStickyAssignorTest.testMemberDataWithInconsistentData"""
        owned_in_subscription = [tp0]
        self.on_assignment(self.generation_id)  # after onAssignment([tp1], generation 1)
        sub = Subscription((topic,), self.subscription_user_data(), grouped(owned_in_subscription))
        member_data = self.member_data(sub)
        # no generation in the subscription: the user data's generation, the subscription's partitions
        assert list(member_data.partitions) == owned_in_subscription
        assert member_data.generation == self.generation_id

    def test_member_data_with_empty_partitions_and_equal_generation(self):
        """Kafka: CooperativeStickyAssignorTest.testMemberDataWithEmptyPartitionsAndEqualGeneration"""
        owned = [tp(topic1, 0), tp(topic2, 1)]
        sub = Subscription(
            (topic,),
            self.generate_user_data([topic], owned, self.generation_id),
            (),
            self.generation_id,
        )
        member_data = self.member_data(sub)
        assert list(member_data.partitions) == []
        assert member_data.generation == self.generation_id

    def test_member_data_with_empty_partitions_and_higher_generation(self):
        """Kafka: CooperativeStickyAssignorTest.testMemberDataWithEmptyPartitionsAndHigherGeneration"""
        owned = [tp(topic1, 0), tp(topic2, 1)]
        sub = Subscription(
            (topic,),
            self.generate_user_data([topic], owned, self.generation_id - 1),
            (),
            self.generation_id,
        )
        member_data = self.member_data(sub)
        assert list(member_data.partitions) == []
        assert member_data.generation == self.generation_id

    def test_assignor_with_old_version_subscriptions(self):
        """Kafka: CooperativeStickyAssignorTest.testAssignorWithOldVersionSubscriptions"""
        partitions_per_topic = {topic1: 3}
        topics = [topic1]
        self.subscriptions[consumer1] = self.build_subscription_v1(
            topics, [tp(topic1, 0)], self.generation_id, 0
        )
        self.subscriptions[consumer2] = self.build_subscription_v1(
            topics, [tp(topic1, 1)], self.generation_id, 1
        )
        self.subscriptions[consumer3] = self.build_subscription_v2_above(
            topics, [], self.generation_id, 2
        )
        assignment = self.assign(partitions_per_topic)
        assert assignment[consumer1] == [tp(topic1, 0)]
        assert assignment[consumer2] == [tp(topic1, 1)]
        assert assignment[consumer3] == [tp(topic1, 2)]
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

    # the cooperative user data (not Kafka tests)

    def test_user_data_is_the_generation_as_int32(self):
        assert encode_user_data(7) == b"\x00\x00\x00\x07"
        assert decode_generation(b"\x00\x00\x00\x07") == 7
        assert (
            decode_generation(b"\x00\x07") == DEFAULT_GENERATION
        )  # too short: Kafka falls back to -1
        assert decode_generation(None) is None

    def test_withheld_partitions_are_reported(self):
        self.subscriptions[consumer1] = self.build_subscription_v2_above(
            [topic], [tp0, tp1], self.generation_id, 0
        )
        self.subscriptions[consumer2] = self.build_subscription_v2_above(
            [topic], [], self.generation_id, 1
        )
        assignment = self.assign({topic: 2})
        assert assignment == {consumer1: [tp0], consumer2: []}
        assert self.outcome.withheld == {tp1: consumer2}
