"""Kafka's StickyAssignorTest and the AbstractStickyAssignorTest cases it inherits, ported
scenario by scenario (non-rack-aware paths).

The shared cases are ``AbstractStickyAssignorTests`` in sticky_cases.py (Kafka's abstract
test class); ``TestStickyAssignor`` here supplies the hooks for the eager protocol.
Kafka runs most cases once per RackConfig; the rack-aware runs expect the same result, so
each is ported once, without racks. Assignments are compared as sorted lists: the
``Assignor`` interface sorts them (Kafka's lists come out in its internal order).

Every Kafka case is ported; some only in part or smaller:
- testRackAwareAssignmentWithUniformSubscription, testRackAwareAssignmentWithNonEqualSubscription:
  only the runs where Kafka does not use rack-aware logic (no broker racks, or every
  partition on every rack with preferRackAwareLogic off) are ported.
- testLargeAssignmentAndGroupWithUniformSubscription, testLargeAssignmentAndGroupWithNonEqualSubscription:
  performance tests over 1M partitions and 2000 consumers in Kafka; ported with 20k and 10k
  partitions over 500 consumers. testAssignmentAndGroupWithNonEqualSubscriptionNotTimeout
  keeps Kafka's sizes.
- testReassignmentWithRandomSubscriptionsAndChanges (30 of Kafka's 100 rounds) and
  testLargeAssignmentWithMultipleConsumersLeavingAndRandomSubscription: Kafka draws unseeded
  randoms; here a seeded Random.

After the classes: Kafka behaviours that no Kafka test pins (user-data bytes, and quirks
of the algorithm), each checked against Kafka's own classes.
"""

from __future__ import annotations

import pytest
from sticky_cases import (
    AbstractStickyAssignorTests,
    consumer1,
    consumer2,
    consumer3,
    grouped,
    is_fully_balanced,
    subscription,
    topic,
    topic1,
    topic2,
    topic3,
    tp,
    tp0,
    tp1,
    tp2,
)

from coordspec.reference.assignors import ASSIGNORS, CooperativeStickyAssignor, StickyAssignor
from coordspec.reference.assignors.sticky import (
    DEFAULT_GENERATION,
    MemberData,
    StickyAssignorError,
    decode_user_data,
    encode_user_data,
)
from coordspec.reference.consumer_protocol import Subscription, TopicPartitions


class TestStickyAssignor(AbstractStickyAssignorTests):
    """Kafka: StickyAssignorTest (which extends AbstractStickyAssignorTest)."""

    def create_assignor(self):
        return StickyAssignor()

    def build_subscription_v0(self, topics, partitions, generation, consumer_index):
        return Subscription(
            tuple(topics), encode_user_data(partitions, generation), (), DEFAULT_GENERATION
        )

    def build_subscription_v1(self, topics, partitions, generation, consumer_index):
        return Subscription(
            tuple(topics),
            encode_user_data(partitions, generation),
            grouped(partitions),
            DEFAULT_GENERATION,
        )

    def build_subscription_v2_above(self, topics, partitions, generation, consumer_index):
        return Subscription(
            tuple(topics), encode_user_data(partitions, generation), grouped(partitions), generation
        )

    def generate_user_data(self, topics, partitions, generation):
        return encode_user_data(partitions, generation)

    def build_subscription_with_old_schema(self, topics, partitions, consumer_index):
        return Subscription(
            tuple(topics), encode_user_data(partitions, 0, version=0), (), DEFAULT_GENERATION
        )

    def verify_owned_but_racks_match(self, topics, consumer_topics, owned):
        # StickyAssignor ignores the owned partitions field (no user data here): same as fresh.
        self.verify_assignment(
            topics,
            consumer_topics,
            owned,
            [
                "t1-5, t2-0, t2-2, t2-4, t2-6",
                "t1-3, t2-1, t2-3, t2-5, t3-0",
                "t1-0, t1-1, t1-2, t1-4, t3-1",
            ],
        )

    def test_registered_under_its_protocol_name(self):
        assert isinstance(ASSIGNORS["sticky"], StickyAssignor)

    def test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation_with_equal_partitions_per_consumer(
        self,
    ):
        """Kafka: StickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersInSameGenerationWithEqualPartitionsPerConsumer"""
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
        assert assignment[consumer3] == [tp(topic, 0)]
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

    def test_all_consumers_have_owned_partition_invalidated_when_claimed_by_multiple_consumers_in_same_generation_with_unequal_partitions_per_consumer(
        self,
    ):
        """Kafka: StickyAssignorTest.testAllConsumersHaveOwnedPartitionInvalidatedWhenClaimedByMultipleConsumersInSameGenerationWithUnequalPartitionsPerConsumer"""
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
        assert assignment[consumer3] == [tp(topic, 0)]
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

    @pytest.mark.parametrize("is_all_subscriptions_equal", [True, False])
    def test_assignment_with_multiple_generations1(self, is_all_subscriptions_equal):
        """Kafka: StickyAssignorTest.testAssignmentWithMultipleGenerations1"""
        all_topics = [topic, topic2]
        consumer2_topics = all_topics if is_all_subscriptions_equal else [topic]
        partitions_per_topic = {topic: 6, topic2: 6}
        self.subscriptions[consumer1] = subscription(all_topics, 0)
        self.subscriptions[consumer2] = subscription(consumer2_topics, 1)
        self.subscriptions[consumer3] = subscription(all_topics, 2)
        assignment = self.assign(partitions_per_topic)
        r1p1, r1p2, r1p3 = assignment[consumer1], assignment[consumer2], assignment[consumer3]
        assert len(r1p1) == 4 and len(r1p2) == 4 and len(r1p3) == 4
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

        self.subscriptions[consumer1] = self.build_subscription_v2_above(
            all_topics, r1p1, self.generation_id, 0
        )
        self.subscriptions[consumer2] = self.build_subscription_v2_above(
            consumer2_topics, r1p2, self.generation_id, 1
        )
        del self.subscriptions[consumer3]
        assignment = self.assign(partitions_per_topic)
        r2p1, r2p2 = assignment[consumer1], assignment[consumer2]
        assert len(r2p1) == 6 and len(r2p2) == 6
        if is_all_subscriptions_equal:  # only true when all subscriptions are equal
            assert set(r1p1) <= set(r2p1)
        assert set(r1p2) <= set(r2p2)
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)
        assert set(r2p2) & set(r1p3)

        del self.subscriptions[consumer1]
        self.subscriptions[consumer2] = self.build_subscription_v2_above(
            consumer2_topics, r2p2, 2, 1
        )
        self.subscriptions[consumer3] = self.build_subscription_v2_above(all_topics, r1p3, 1, 2)
        assignment = self.assign(partitions_per_topic)
        r3p2, r3p3 = assignment[consumer2], assignment[consumer3]
        assert len(r3p2) == 6 and len(r3p3) == 6
        assert not set(r3p2) & set(r3p3)
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

    @pytest.mark.parametrize("is_all_subscriptions_equal", [True, False])
    def test_assignment_with_multiple_generations2(self, is_all_subscriptions_equal):
        """Kafka: StickyAssignorTest.testAssignmentWithMultipleGenerations2"""
        all_topics = [topic, topic2, topic3]
        consumer1_topics = all_topics if is_all_subscriptions_equal else [topic]
        consumer3_topics = all_topics if is_all_subscriptions_equal else [topic, topic2]
        partitions_per_topic = {topic: 4, topic2: 4, topic3: 4}
        self.subscriptions[consumer1] = subscription(consumer1_topics, 0)
        self.subscriptions[consumer2] = subscription(all_topics, 1)
        self.subscriptions[consumer3] = subscription(consumer3_topics, 2)
        assignment = self.assign(partitions_per_topic)
        r1p1, r1p2, r1p3 = assignment[consumer1], assignment[consumer2], assignment[consumer3]
        assert len(r1p1) == 4 and len(r1p2) == 4 and len(r1p3) == 4
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

        del self.subscriptions[consumer1]
        self.subscriptions[consumer2] = self.build_subscription_v2_above(all_topics, r1p2, 1, 1)
        del self.subscriptions[consumer3]
        assignment = self.assign(partitions_per_topic)
        r2p2 = assignment[consumer2]
        assert len(r2p2) == 12
        assert set(r1p2) <= set(r2p2)
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

        self.subscriptions[consumer1] = self.build_subscription_v2_above(
            consumer1_topics, r1p1, 1, 0
        )
        self.subscriptions[consumer2] = self.build_subscription_v2_above(all_topics, r2p2, 2, 1)
        self.subscriptions[consumer3] = self.build_subscription_v2_above(
            consumer3_topics, r1p3, 1, 2
        )
        assignment = self.assign(partitions_per_topic)
        assert [len(assignment[c]) for c in (consumer1, consumer2, consumer3)] == [4, 4, 4]
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

    @pytest.mark.parametrize("is_all_subscriptions_equal", [True, False])
    def test_assignment_with_conflicting_previous_generations(self, is_all_subscriptions_equal):
        """Kafka: StickyAssignorTest.testAssignmentWithConflictingPreviousGenerations"""
        partitions_per_topic = {topic: 4, topic2: 4, topic3: 4}
        all_topics = [topic, topic2, topic3]
        consumer1_topics = all_topics if is_all_subscriptions_equal else [topic]
        consumer2_topics = all_topics if is_all_subscriptions_equal else [topic, topic2]
        t = {name: [tp(name, i) for i in range(4)] for name in (topic, topic2, topic3)}
        c1p0 = (
            [t[topic][0], t[topic][1], t[topic][2], t[topic2][2], t[topic2][3], t[topic3][0]]
            if is_all_subscriptions_equal
            else t[topic]
        )
        c2p0 = [t[topic][0], t[topic][1], *t[topic2]]
        c3p0 = [t[topic][2], t[topic][3], *t[topic3]]
        self.subscriptions[consumer1] = self.build_subscription_v2_above(
            consumer1_topics, c1p0, 1, 0
        )
        self.subscriptions[consumer2] = self.build_subscription_v2_above(
            consumer2_topics, c2p0, 2, 1
        )
        self.subscriptions[consumer3] = self.build_subscription_v2_above(all_topics, c3p0, 2, 2)
        assignment = self.assign(partitions_per_topic)
        c1, c2, c3 = assignment[consumer1], assignment[consumer2], assignment[consumer3]
        assert len(c1) == 4 and len(c2) == 4 and len(c3) == 4
        assert set(c2) <= set(c2p0)
        assert set(c3) <= set(c3p0)
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

    def test_schema_backward_compatibility(self):
        """Kafka: StickyAssignorTest.testSchemaBackwardCompatibility"""
        partitions_per_topic = {topic: 3}
        self.subscriptions[consumer1] = subscription([topic], 0)
        self.subscriptions[consumer2] = subscription([topic], 1)
        self.subscriptions[consumer3] = subscription([topic], 2)
        c1p0, c2p0 = [tp0, tp2], [tp1]
        self.subscriptions[consumer1] = self.build_subscription_v2_above([topic], c1p0, 1, 0)
        self.subscriptions[consumer2] = self.build_subscription_with_old_schema([topic], c2p0, 1)
        assignment = self.assign(partitions_per_topic)
        c1, c2, c3 = assignment[consumer1], assignment[consumer2], assignment[consumer3]
        assert len(c1) == 1 and len(c2) == 1 and len(c3) == 1
        assert set(c1) <= set(c1p0)
        assert set(c2) <= set(c2p0)
        self.verify_validity_and_balance(self.subscriptions, assignment, partitions_per_topic)
        assert is_fully_balanced(assignment)

    def test_member_data_with_inconsistent_data(self):
        """Kafka: StickyAssignorTest.testMemberDataWithInconsistentData"""
        owned_in_user_data, owned_in_subscription = [tp1], [tp0]
        # what a Java sticky member sends after onAssignment([tp1], generation 1)
        user_data = encode_user_data(owned_in_user_data, self.generation_id)
        sub = Subscription((topic,), user_data, grouped(owned_in_subscription))
        member_data = self.member_data(sub)
        # StickyAssignor always honours its user data
        assert list(member_data.partitions) == owned_in_user_data
        assert member_data.generation == self.generation_id

    def test_member_data_will_honor_user_data(self):
        """Kafka: StickyAssignorTest.testMemberDataWillHonorUserData"""
        owned = [tp(topic1, 0), tp(topic2, 1)]
        generation_in_user_data = self.generation_id - 1
        sub = Subscription(
            (topic,),
            self.generate_user_data([topic], owned, generation_in_user_data),
            (),
            self.generation_id,
        )
        member_data = self.member_data(sub)
        assert list(member_data.partitions) == owned
        assert member_data.generation == generation_in_user_data

    def test_assignor_with_old_version_subscriptions(self):
        """Kafka: StickyAssignorTest.testAssignorWithOldVersionSubscriptions"""
        partitions_per_topic = {topic1: 3}
        topics = [topic1]
        self.subscriptions[consumer1] = self.build_subscription_v0(
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

    # StickyAssignorUserData, as Kafka encodes it (not a Kafka test: Kafka checks it only through round trips)

    def test_user_data_v1_bytes_are_kafkas_layout(self):
        # int32 topic count, int16-length topic, int32 partition count, int32 partitions, int32 generation
        assert encode_user_data([tp("t", 0), tp("t", 2)], 5) == (
            b"\x00\x00\x00\x01"
            b"\x00\x01t"
            b"\x00\x00\x00\x02"
            b"\x00\x00\x00\x00\x00\x00\x00\x02"
            b"\x00\x00\x00\x05"
        )

    def test_user_data_matches_bytes_from_kafkas_serializer(self):
        # StickyAssignor.serializeTopicPartitionAssignment([topic1-0, topic2-1, topic1-2, a-5, orders-3], 7)
        golden = bytes.fromhex(
            "000000040006746f7069633100000002000000000000000200016100000001000000050006746f70"
            "696332000000010000000100066f7264657273000000010000000300000007"
        )
        partitions = [
            tp("topic1", 0),
            tp("topic2", 1),
            tp("topic1", 2),
            tp("a", 5),
            tp("orders", 3),
        ]
        assert encode_user_data(partitions, 7) == golden
        assert decode_user_data(golden) == MemberData(
            (tp("topic1", 0), tp("topic1", 2), tp("a", 5), tp("topic2", 1), tp("orders", 3)), 7
        )

    def test_user_data_v0_decodes_without_generation(self):
        data = encode_user_data([tp("t", 1)], 0, version=0)
        assert decode_user_data(data) == MemberData((tp("t", 1),), None)

    def test_unparseable_user_data_means_nothing_owned_at_generation_minus_one(self):
        assert decode_user_data(b"\x00\x00\x00\x05\x00") == MemberData((), DEFAULT_GENERATION)
        assert decode_user_data(b"") == MemberData((), None)
        assert decode_user_data(None) == MemberData((), None)

    def test_user_data_groups_topics_in_java_hash_map_order(self):
        # Kafka groups the partitions by topic in a HashMap: "kk" and "paUnA" share a bucket,
        # and computeIfAbsent puts the later one first.
        data = encode_user_data([tp("kk", 1), tp("paUnA", 2)], 1)
        assert data.index(b"paUnA") < data.index(b"kk")
        assert set(decode_user_data(data).partitions) == {tp("kk", 1), tp("paUnA", 2)}


# Kafka behaviours no Kafka test covers, kept on purpose (each result was checked against
# Kafka's own StickyAssignor/CooperativeStickyAssignor classes, built from the source).


def test_members_without_topics_met_first_count_as_identical_subscriptions():
    """Kafka takes the first non-empty subscription (in Java HashMap order) as the
    reference, so a member with no topics met before it passes for "identical" and the
    constrained algorithm hands it partitions of a topic it does not subscribe to."""
    sticky = StickyAssignor()
    # Java's HashMap visits consumer4 before consumer1
    assert sticky.assign(
        {"t": 4}, {"consumer4": Subscription(()), "consumer1": Subscription(("t",))}
    ) == {"consumer4": [("t", 1), ("t", 3)], "consumer1": [("t", 0), ("t", 2)]}
    # ... and consumer1 before consumer4: the general algorithm, which respects subscriptions
    assert sticky.assign(
        {"t": 4}, {"consumer1": Subscription(()), "consumer4": Subscription(("t",))}
    ) == {"consumer1": [], "consumer4": [("t", 0), ("t", 1), ("t", 2), ("t", 3)]}


def test_a_repeated_topic_can_pass_for_an_identical_subscription():
    """Kafka compares list sizes and containment: [t, t] matches {t, u}."""
    assignment = StickyAssignor().assign(
        {"t": 4, "u": 2},
        {"consumer1": Subscription(("t", "t")), "consumer2": Subscription(("t", "u"))},
    )
    assert assignment == {
        "consumer1": [("t", 0), ("t", 2), ("u", 0)],
        "consumer2": [("t", 1), ("t", 3), ("u", 1)],
    }


def test_a_claimed_partition_past_the_topic_end_is_kept_and_stalls_the_unassigned_list():
    """An owned partition that does not exist (say the topic was recreated smaller) is kept,
    and Kafka's in-step walk over the sorted partitions then treats every later partition
    as unassigned: u-0 ends up with both members."""
    assignment = CooperativeStickyAssignor().assign(
        {"t": 4, "u": 2},
        {
            "consumer1": Subscription(("t", "u"), None, (TopicPartitions("t", (7, 0)),), 3),
            "consumer2": Subscription(("t", "u"), None, (TopicPartitions("u", (0,)),), 3),
        },
    )
    assert assignment == {
        "consumer1": [("t", 0), ("t", 1), ("t", 7), ("u", 0)],
        "consumer2": [("t", 2), ("t", 3), ("u", 0), ("u", 1)],
    }


def test_a_stale_previous_owner_that_cannot_take_part_fails_as_in_kafka():
    """x owned t-0 a generation ago and now subscribes to u alone: the general algorithm
    wants t-0 back with x, which it has set aside, and Kafka fails with a
    NullPointerException. The reference raises StickyAssignorError."""
    subscriptions = {
        "x": Subscription(("u",), encode_user_data([("t", 0), ("u", 0)], 1)),
        "y": Subscription(("t",), encode_user_data([("t", 0), ("t", 1), ("t", 2), ("t", 3)], 2)),
        "z": Subscription(("t",), encode_user_data([], 2)),
    }
    with pytest.raises(StickyAssignorError):
        StickyAssignor().assign({"t": 4, "u": 1}, subscriptions)
