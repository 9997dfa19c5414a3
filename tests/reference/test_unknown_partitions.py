"""GM-56: OffsetCommit of partitions that do not exist, as Kafka 4.0's request layer answers
it (KafkaApis.handleOffsetCommitRequest, OffsetCommitResponse.Builder) before the coordinator."""

from __future__ import annotations

from driver import GROUP_ID, Driver

from coordspec.reference.choices import SeededChoices
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import CommitPartition, CommitTopic
from coordspec.reference.group.requests import (
    AppendCompleted,
    OffsetDelete,
    OffsetDeletePartition,
    OffsetDeleteTopic,
)
from coordspec.reference.group.responses import (
    CommitPartitionResponse,
    CommitTopicResponse,
    OffsetCommitResponse,
    OffsetDeletePartitionResponse,
    OffsetDeleteResponse,
    OffsetDeleteTopicResponse,
)
from coordspec.reference.group.topics import split_known

TOPICS = {"foo": 3, "bar": 3}
NONE, UNKNOWN = ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def _answer(*topics: tuple[str, tuple[tuple[int, ErrorCode], ...]]) -> OffsetCommitResponse:
    return OffsetCommitResponse(
        tuple(
            CommitTopicResponse(name, tuple(CommitPartitionResponse(p, e) for p, e in parts))
            for name, parts in topics
        )
    )


def test_refused_partitions_come_first_and_the_coordinators_topics_merge_into_them():
    d = Driver(topics=TOPICS)
    reply = d.commit({("foo", 0): 1, ("foo", 7): 2, ("bar", 0): 3, ("nope", 0): 4, ("foo", 1): 5})
    assert reply.response == _answer(
        ("foo", ((7, UNKNOWN), (0, NONE), (1, NONE))),
        ("nope", ((0, UNKNOWN),)),
        ("bar", ((0, NONE),)),
    )
    fetched = d.fetch({"foo": (0, 1, 7), "bar": (0,)}).response
    offsets = {
        (t.name, p.partition_index): p.committed_offset
        for t in fetched.topics
        for p in t.partitions
    }
    assert offsets == {("foo", 0): 1, ("foo", 1): 5, ("foo", 7): -1, ("bar", 0): 3}


def test_a_commit_of_no_partition_that_exists_never_reaches_the_coordinator():
    d = Driver(topics=TOPICS)
    reply = d.commit({("nope", 0): 1, ("foo", 3): 2})
    assert reply.response == _answer(("nope", ((0, UNKNOWN),)), ("foo", ((3, UNKNOWN),)))
    assert d.coordinator.groups == {} and reply.records == []  # no simple group created


def test_a_group_error_covers_only_the_partitions_that_exist():
    d = Driver(topics=TOPICS)
    reply = d.commit({("foo", 0): 1, ("nope", 0): 2}, group_id=None)
    assert reply.response == _answer(
        ("nope", ((0, UNKNOWN),)), ("foo", ((0, ErrorCode.INVALID_GROUP_ID),))
    )


def test_the_merge_waits_for_the_write_and_survives_a_copy_of_the_coordinator():
    d = Driver(topics=TOPICS, complete_appends=False)
    reply = d.commit({("foo", 0): 1, ("nope", 0): 2})
    assert not reply.done  # the commit waits on its write
    twin = d.coordinator.copy(SeededChoices(0), None)
    (append,) = d.appends
    d.complete(append)
    expected = _answer(("nope", ((0, UNKNOWN),)), ("foo", ((0, NONE),)))
    assert reply.response == expected
    (answer,) = twin.handle(AppendCompleted(append.append_id, d.now_ms))
    assert answer.response == expected


def test_without_the_brokers_topics_every_partition_exists():
    reply = Driver().commit({("nope", 0): 1})
    assert reply.response == _answer(("nope", ((0, NONE),)))
    assert GROUP_ID in reply.driver.coordinator.groups


def test_split_keeps_a_topic_whole_when_all_its_partitions_exist():
    foo = CommitTopic("foo", (CommitPartition(0, 1, -1, ""),))
    kept, refused = split_known((foo,), TOPICS.get)
    assert kept[0] is foo and refused == ()


def _delete_answer(error: ErrorCode, *topics) -> OffsetDeleteResponse:
    return OffsetDeleteResponse(
        error,
        tuple(
            OffsetDeleteTopicResponse(n, tuple(OffsetDeletePartitionResponse(p, e) for p, e in ps))
            for n, ps in topics
        ),
    )


def _delete(d: Driver, *names: tuple[str, tuple[int, ...]], group_id: str = GROUP_ID):
    return d.send(
        OffsetDelete,
        group_id=group_id,
        topics=tuple(
            OffsetDeleteTopic(n, tuple(OffsetDeletePartition(p) for p in ps)) for n, ps in names
        ),
    )


def test_an_offset_delete_refuses_unknown_partitions_and_deletes_the_rest():
    d = Driver(topics=TOPICS)
    d.commit({("foo", 0): 1, ("bar", 0): 2})
    reply = _delete(d, ("foo", (0, 9)), ("nope", (0,)), ("bar", (0,)))
    assert reply.response == _delete_answer(
        NONE, ("foo", ((9, UNKNOWN), (0, NONE))), ("nope", ((0, UNKNOWN),)), ("bar", ((0, NONE),))
    )
    fetched = d.fetch({"foo": (0,), "bar": (0,)}).response
    assert [p.committed_offset for t in fetched.topics for p in t.partitions] == [-1, -1]


def test_an_offset_delete_of_nothing_that_exists_still_asks_the_coordinator():
    """Kafka calls the coordinator with no topics: the group's error is the whole answer."""
    d = Driver(topics=TOPICS)
    assert _delete(d, ("nope", (0,)), group_id="unknown").response == _delete_answer(
        ErrorCode.GROUP_ID_NOT_FOUND
    )
    d.commit({("foo", 0): 1})
    assert _delete(d, ("nope", (0,))).response == _delete_answer(NONE, ("nope", ((0, UNKNOWN),)))
