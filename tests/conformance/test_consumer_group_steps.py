"""The ConsumerGroupHeartbeat step sends what a KIP-848 consumer sends where the scenario does
not say, and the client learns its member id, epoch and assignment from the answers."""

from __future__ import annotations

from pathlib import Path

import pytest

from coordspec.conformance.suite.build import build, client_member_id, learn
from coordspec.conformance.suite.loader import ScenarioError, load
from coordspec.conformance.suite.symbols import Symbols
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.records import TopicPartitions
from coordspec.reference.group.responses import ConsumerGroupHeartbeatResponse

STEPS = """\
checks: the heartbeat step's defaults, one step after another
rules: [CG-9]
clients: [c1, c2]
steps:
  - c1: ConsumerGroupHeartbeat
  - c1: ConsumerGroupHeartbeat
  - c1: ConsumerGroupHeartbeat
    subscribed_topic_names: [foo, bar]
    topic_partitions: null
    instance_id: i1
  - c2: ConsumerGroupDescribe
    group_ids: [$group, $group-b]
"""


@pytest.fixture
def scenario(tmp_path: Path):
    path = tmp_path / "steps.yaml"
    path.write_text(STEPS)
    return load(path)


def test_a_join_then_heartbeats_as_a_consumer_sends_them(scenario):
    symbols = Symbols("g", scenario.clients)
    join = build(scenario.steps[0], 1, 1, 0, symbols)
    assert (join.member_id, join.member_epoch) == (client_member_id("c1"), 0)
    assert (join.rebalance_timeout_ms, join.subscribed_topic_names) == (10_000, ("foo",))
    assert join.topic_partitions == () and join.instance_id is None
    learn(
        symbols.clients["c1"],
        symbols,
        ConsumerGroupHeartbeatResponse(
            ErrorCode.NONE, join.member_id, 3, 5000, (TopicPartitions("foo", (0, 2)),)
        ),
    )
    beat = build(scenario.steps[1], 1, 2, 0, symbols)
    assert (beat.member_epoch, beat.rebalance_timeout_ms, beat.subscribed_topic_names) == (
        3,
        -1,
        None,
    )
    assert beat.topic_partitions == (TopicPartitions("foo", (0, 2)),)
    given = build(scenario.steps[2], 1, 3, 0, symbols)
    assert given.subscribed_topic_names == ("foo", "bar")
    assert given.topic_partitions is None and given.instance_id == "i1"
    describe = build(scenario.steps[3], 0, 4, 0, symbols)
    assert describe.group_ids == ("g", "g-b")


def test_at_v0_a_join_leaves_the_member_id_to_the_coordinator(scenario):
    symbols = Symbols("g", scenario.clients)
    assert build(scenario.steps[0], 0, 1, 0, symbols).member_id == ""
    learn(symbols.clients["c1"], symbols, ConsumerGroupHeartbeatResponse(ErrorCode.NONE, "m-1", 1))
    assert build(scenario.steps[1], 0, 2, 0, symbols).member_id == "m-1"


def test_client_member_ids_are_fixed_and_in_client_order():
    ids = [client_member_id(f"c{n}") for n in (1, 2, 10)]
    assert ids == sorted(ids) and len(set(ids)) == 3
    assert ids[0] == client_member_id("c1") and len(ids[0]) == 36


@pytest.mark.parametrize(
    ("error", "epoch"),
    [(ErrorCode.FENCED_MEMBER_EPOCH, 0), (ErrorCode.UNKNOWN_MEMBER_ID, 0), (ErrorCode.NONE, -1)],
)
def test_a_fenced_or_departed_member_gives_up_its_partitions_and_joins_again(error, epoch):
    symbols = Symbols("g", ("c1",))
    client = symbols.clients["c1"]
    client.member_id, client.member_epoch, client.assigned = "m-1", 4, ("foo-0",)
    learn(client, symbols, ConsumerGroupHeartbeatResponse(error, "m-1", epoch))
    assert (client.member_id, client.member_epoch, client.assigned) == ("m-1", 0, ())


def test_an_unchanged_assignment_is_kept_and_other_errors_change_nothing():
    symbols = Symbols("g", ("c1",))
    client = symbols.clients["c1"]
    client.member_id, client.member_epoch, client.assigned = "m-1", 4, ("foo-0",)
    learn(client, symbols, ConsumerGroupHeartbeatResponse(ErrorCode.NONE, "m-1", 5))
    assert (client.member_epoch, client.assigned) == (5, ("foo-0",))
    learn(client, symbols, ConsumerGroupHeartbeatResponse(ErrorCode.INVALID_REQUEST))
    assert (client.member_epoch, client.assigned) == (5, ("foo-0",))


def test_a_heartbeat_field_of_the_wrong_kind_is_one_line(tmp_path: Path):
    path = tmp_path / "bad.yaml"
    path.write_text(STEPS.replace("topic_partitions: null", "topic_partitions: [foo]"))
    with pytest.raises(ScenarioError, match=r"bad\.yaml:9: ConsumerGroupHeartbeat: "):
        load(path)


def test_a_member_commits_with_its_member_epoch(tmp_path: Path):
    """CG-60: OffsetCommit and TxnOffsetCommit carry a consumer member's epoch unless given."""
    path = tmp_path / "commit.yaml"
    path.write_text(
        "checks: the commit steps of a consumer group member\n"
        "rules: [CG-60]\n"
        "clients: [c1]\n"
        "steps:\n"
        "  - c1: ConsumerGroupHeartbeat\n"
        "  - c1: OffsetCommit\n"
        "    offsets: {foo-0: 1}\n"
        "  - c1: TxnOffsetCommit\n"
        "    offsets: {foo-0: 1}\n"
        "  - c1: OffsetCommit\n"
        "    generation_id: 2\n"
        "    offsets: {foo-0: 1}\n"
    )
    scenario = load(path)
    symbols = Symbols("g", scenario.clients)
    join = build(scenario.steps[0], 1, 1, 0, symbols)
    learn(
        symbols.clients["c1"],
        symbols,
        ConsumerGroupHeartbeatResponse(ErrorCode.NONE, join.member_id, 7, 5000, ()),
    )
    commit = build(scenario.steps[1], 9, 2, 0, symbols)
    txn = build(scenario.steps[2], 3, 3, 0, symbols)
    given = build(scenario.steps[3], 9, 4, 0, symbols)
    assert (commit.member_id, commit.generation_id) == (join.member_id, 7)
    assert (txn.member_id, txn.generation_id) == (join.member_id, 7)
    assert given.generation_id == 2
