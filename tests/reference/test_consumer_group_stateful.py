"""A Hypothesis state machine: consumers of a KIP-848 group against the reference.

Clients join, heartbeat (acknowledging their revocations or not), change their
subscriptions (by names and by regex), leave (static ones for a while with -2), come back,
and keep heartbeating with stale epochs as zombies, while time moves and session and
rebalance timeouts fence them, the coordinator resolves the regexes, and topics are deleted,
created again (a new id) and given more partitions (CG-66..CG-70). The ``Monitor`` checks ``AtMostOneOwnerPerPartition`` and
``MemberEpochNotAheadOfGroup`` after every step (CG-12, CG-21); the machine adds that every
request is answered at once and, once subscriptions stop changing and every client
heartbeats acknowledging what it was told, the group converges: Stable, every member at the
target epoch holding its target, and every subscribed partition held (CG-20..CG-23).
Examples: --examples N (default 300).
"""

from __future__ import annotations

from dataclasses import dataclass

import hypothesis.strategies as st
from hypothesis import settings
from hypothesis.stateful import RuleBasedStateMachine, rule

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.consumer.state import (
    STATIC_LEAVE_EPOCH,
    Partitions,
    from_topic_partitions,
    to_topic_partitions,
)
from coordspec.reference.group.coordinator import GroupCoordinator
from coordspec.reference.group.effects import Reply
from coordspec.reference.group.invariants import Monitor
from coordspec.reference.group.requests import (
    ConsumerGroupHeartbeat,
    NewMetadataImage,
    ResolveRegularExpressions,
    Tick,
)
from coordspec.reference.group.responses import ConsumerGroupHeartbeatResponse

GROUP = "g"
TOPICS = {"a": 4, "b": 3}
SUBSCRIPTIONS = st.sampled_from([("a",), ("b",), ("a", "b"), ("a", "missing")])
REGEXES = st.sampled_from(["a|b", "b", "", "mis.*"])
CLIENTS = st.integers(0, 3)


@dataclass
class Client:
    member_id: str
    instance_id: str | None
    epoch: int = 0
    owned: Partitions = frozenset()
    joined: bool = False
    subscription: tuple[str, ...] = ("a",)


class ConsumerGroupMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.coordinator = GroupCoordinator(topics=TOPICS, observer=Monitor())
        self.now_ms = 0
        self.requests = 0
        self.incarnations = 0
        self.clients = [Client(f"m{i}", f"i{i}" if i % 2 else None) for i in range(4)]
        self.topics = dict(TOPICS)
        self.topic_ids = {t: t for t in TOPICS}
        self.created = 0  # topics created again, each under a new id

    def send(self, client: Client, **fields: object) -> ConsumerGroupHeartbeatResponse:
        self.requests += 1
        effects = self.coordinator.handle(
            ConsumerGroupHeartbeat(
                self.requests,
                1,
                self.now_ms,
                group_id=GROUP,
                member_id=client.member_id,
                instance_id=client.instance_id,
                **fields,  # type: ignore[arg-type]
            )
        )
        (reply,) = [e for e in effects if isinstance(e, Reply)]  # answered at once
        assert isinstance(reply.response, ConsumerGroupHeartbeatResponse)
        return reply.response

    def join(self, client: Client) -> None:
        if client.instance_id is None or client.epoch != STATIC_LEAVE_EPOCH:
            self.incarnations += 1  # a new member id, as a restarted consumer makes
            client.member_id = f"m{self.incarnations}-{client.member_id.split('-')[-1]}"
        response = self.send(
            client,
            member_epoch=0,
            rebalance_timeout_ms=2000,
            subscribed_topic_names=client.subscription,
            topic_partitions=(),
        )
        client.owned = frozenset()
        self.learn(client, response)

    def learn(self, client: Client, response: ConsumerGroupHeartbeatResponse) -> None:
        if response.error_code == ErrorCode.NONE:
            client.joined, client.epoch = True, response.member_epoch
            if response.assignment is not None:
                client.owned = from_topic_partitions(response.assignment)
        else:
            assert response.error_code in (
                ErrorCode.FENCED_MEMBER_EPOCH,
                ErrorCode.UNKNOWN_MEMBER_ID,
                ErrorCode.UNRELEASED_INSTANCE_ID,
                ErrorCode.GROUP_ID_NOT_FOUND,
            ), response
            client.joined, client.owned, client.epoch = False, frozenset(), 0

    @rule(index=CLIENTS, subscription=SUBSCRIPTIONS)
    def join_group(self, index: int, subscription: tuple[str, ...]) -> None:
        client = self.clients[index]
        if not client.joined:
            client.subscription = subscription
            self.join(client)

    @rule(index=CLIENTS, acknowledge=st.booleans())
    def heartbeat(self, index: int, acknowledge: bool) -> None:
        client = self.clients[index]
        if client.joined:
            owned = to_topic_partitions(client.owned) if acknowledge else None
            self.learn(client, self.send(client, member_epoch=client.epoch, topic_partitions=owned))

    @rule(index=CLIENTS, subscription=SUBSCRIPTIONS)
    def resubscribe(self, index: int, subscription: tuple[str, ...]) -> None:
        client = self.clients[index]
        if client.joined:
            client.subscription = subscription
            response = self.send(
                client, member_epoch=client.epoch, subscribed_topic_names=subscription
            )
            self.learn(client, response)

    @rule(index=CLIENTS, regex=REGEXES)
    def subscribe_by_regex(self, index: int, regex: str) -> None:
        client = self.clients[index]
        if client.joined:
            response = self.send(client, member_epoch=client.epoch, subscribed_topic_regex=regex)
            self.learn(client, response)

    @rule()
    def resolve_regular_expressions(self) -> None:
        self.coordinator.handle(ResolveRegularExpressions(GROUP, self.now_ms))

    @rule(change=st.sampled_from(["delete b", "create b", "grow a"]))
    def new_metadata_image(self, change: str) -> None:
        if change == "delete b":
            self.topics.pop("b", None)
        elif change == "create b" and "b" not in self.topics:
            self.created += 1
            self.topics["b"], self.topic_ids["b"] = 3, f"b~{self.created}"
        elif change == "grow a":
            self.topics["a"] += 1
        ids = {t: self.topic_ids[t] for t in self.topics}
        self.coordinator.handle(NewMetadataImage(dict(self.topics), self.now_ms, ids))

    @rule(index=CLIENTS, delta=st.sampled_from([-1, 1, 5]))
    def zombie(self, index: int, delta: int) -> None:
        """A heartbeat with a stale or future epoch: fenced, never accepted blindly."""
        client = self.clients[index]
        if client.joined and client.epoch + delta > 0:
            response = self.send(client, member_epoch=client.epoch + delta)
            if delta > 0:  # ahead: fenced, unless the member is already gone
                assert response.error_code in (
                    ErrorCode.FENCED_MEMBER_EPOCH,
                    ErrorCode.UNKNOWN_MEMBER_ID,
                    ErrorCode.GROUP_ID_NOT_FOUND,
                )

    @rule(index=CLIENTS, temporarily=st.booleans())
    def leave(self, index: int, temporarily: bool) -> None:
        client = self.clients[index]
        if not client.joined:
            return
        epoch = STATIC_LEAVE_EPOCH if temporarily and client.instance_id else -1
        response = self.send(client, member_epoch=epoch)
        client.joined, client.owned = False, frozenset()
        client.epoch = epoch if response.error_code == ErrorCode.NONE else 0

    @rule(ms=st.sampled_from([100, 1000, 2500, 30_000, 50_000]))
    def tick(self, ms: int) -> None:
        self.now_ms += ms
        self.coordinator.handle(Tick(now_ms=self.now_ms))

    @rule()
    def settle(self) -> None:
        """Subscriptions stop changing and every client heartbeats, acknowledging what it was
        told (rejoining if it was fenced), its regexes resolved: the group converges
        (CG-20..CG-23)."""
        self.resolve_regular_expressions()
        for _ in range(8):
            for client in self.clients:
                if client.joined:
                    owned = to_topic_partitions(client.owned)
                    self.learn(
                        client, self.send(client, member_epoch=client.epoch, topic_partitions=owned)
                    )
                else:
                    self.join(client)
        group = self.coordinator.consumer_groups[GROUP]
        assert group.state == "Stable", group
        for member in group.members.values():
            assert member.member_epoch == group.assignment_epoch
            assert member.assigned == group.target.get(member.member_id, frozenset())
        subscribed = {t for m in group.members.values() for t in group.subscription(m)}
        held = set().union(*(m.assigned for m in group.members.values()))
        assert held == {
            (self.topic_ids[t], p)
            for t, n in self.topics.items()
            if t in subscribed
            for p in range(n)
        }


TestConsumerGroupMachine = ConsumerGroupMachine.TestCase
TestConsumerGroupMachine.settings = settings(stateful_step_count=40)
