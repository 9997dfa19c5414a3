"""The group coordinator's safety properties, each under one name.

The same names appear in the TLA+ specs (``tla/``), in spec/group-membership.md and in
the Hypothesis state machines. ``Monitor`` checks all of them after every step of a
:class:`~coordspec.reference.group.coordinator.GroupCoordinator` it observes and raises
:class:`~coordspec.reference.errors.InvariantViolation` on the first one that fails.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from coordspec.reference.consumer_protocol import MalformedConsumerProtocol, decode_assignment
from coordspec.reference.errors import ErrorCode, Invariant, InvariantViolation, registry
from coordspec.reference.group.consumer import invariants as consumer
from coordspec.reference.group.effects import Effect, Reply
from coordspec.reference.group.requests import Event, OffsetCommit, SyncGroup
from coordspec.reference.group.responses import OffsetCommitResponse, SyncGroupResponse
from coordspec.reference.group.state import CONSUMER_PROTOCOL_TYPE, Group
from coordspec.reference.group.transitions import COMPLETING, DEAD, EMPTY, STABLE

if TYPE_CHECKING:
    from coordspec.reference.group.coordinator import GroupCoordinator

INVARIANTS: dict[str, Invariant] = registry(
    # Checked by the Monitor after every step.
    Invariant("GenerationMonotonic", "GM-17", "a group's generation id never decreases", tla=True),
    Invariant(
        "NoStaleGenerationCommit",
        "GM-50",
        "an accepted OffsetCommit came from a current member of the group's current "
        "generation, or from outside group management while the group was Empty",
        tla=True,
    ),
    Invariant(
        "LeaderIsMember",
        "GM-15",
        "a group has a leader exactly when it has members, and the leader is one of them",
        tla=True,
    ),
    Invariant(
        "AtMostOneOwnerPerPartition",
        "GM-22",
        "the assignments handed out in one generation give each partition to at most one member",
        tla=True,
    ),
    Invariant(
        "StableImpliesAllSynced",
        "GM-22",
        "a Stable group holds the leader's assignment of its current generation",
        tla=True,
    ),
    Invariant(
        "StaticMembersMapped",
        "GM-6",
        "each group instance id maps to the one member that carries it",
        tla=False,
    ),
    # Asserted by the coordinator where it acts (state.py, coordinator.py).
    Invariant(
        "ValidTransition",
        "GM-10",
        "every change of a group's state is an edge of transitions.TRANSITIONS, "
        "caused by the input the edge names",
        tla=False,
    ),
    Invariant(
        "SelectedProtocolSupported",
        "GM-16",
        "every member supports the protocol its group selected",
        tla=False,
    ),
    Invariant(
        "AtMostOneReply",
        "GM-35",
        "a request is answered at most once, and only while it awaits its answer",
        tla=False,
    ),
)


def check_leader_is_member(group: Group) -> None:
    if group.state == DEAD:
        return
    if group.members and group.leader_id not in group.members:
        raise InvariantViolation(
            "LeaderIsMember",
            f"group {group.group_id!r}: leader {group.leader_id!r} is not a member",
        )
    if not group.members and group.leader_id is not None:
        raise InvariantViolation(
            "LeaderIsMember",
            f"group {group.group_id!r} has leader {group.leader_id!r} and no members",
        )


def check_stable_implies_all_synced(group: Group) -> None:
    if group.state == STABLE and group.assignment_generation != group.generation_id:
        raise InvariantViolation(
            "StableImpliesAllSynced",
            f"group {group.group_id!r} is Stable at generation {group.generation_id} "
            f"holding the assignment of generation {group.assignment_generation}",
        )


def check_static_members_mapped(group: Group) -> None:
    carried = {
        m.group_instance_id: m.member_id
        for m in group.members.values()
        if m.group_instance_id is not None
    }
    if carried != group.static_members:
        raise InvariantViolation(
            "StaticMembersMapped",
            f"group {group.group_id!r}: instance map {group.static_members} but members carry {carried}",
        )


STATE_CHECKS: tuple[Callable[[Group], None], ...] = (
    check_leader_is_member,
    check_stable_implies_all_synced,
    check_static_members_mapped,
)


@dataclass(frozen=True, slots=True)
class _CommitContext:
    """What the group looked like when an OffsetCommit reached the coordinator."""

    request: OffsetCommit
    existed: bool
    state: object
    generation_id: int
    members: frozenset[str]
    static_members: dict[str, str]


class Monitor:
    """Observes a coordinator (``GroupCoordinator(observer=Monitor())``) and checks every
    invariant, of its classic and its consumer groups (CG-12, CG-21)."""

    def __init__(self) -> None:
        # group id -> (the group object, its generation); a deleted and re-created group starts afresh
        self._generations: dict[str, tuple[Group, int]] = {}
        self._commits: dict[int | str, _CommitContext | consumer.CommitContext] = {}
        self._syncs: dict[int | str, SyncGroup] = {}
        # (group id, incarnation, generation) -> partition -> owner (instance id, or member id)
        self._owners: dict[tuple[str, int, int], dict[tuple[str, int], str]] = {}
        # A group deleted and created again restarts at generation 0: count its incarnations.
        self._incarnations: dict[str, tuple[Group, int]] = {}
        self.steps = 0

    def before(self, coordinator: GroupCoordinator, event: Event) -> None:
        if isinstance(event, OffsetCommit) and event.group_id in coordinator.consumer_groups:
            members = coordinator.consumer_groups[event.group_id].members
            self._commits[event.request_id] = consumer.CommitContext(
                event, {m.member_id: m.member_epoch for m in members.values()}
            )
        elif isinstance(event, OffsetCommit) and event.group_id is not None:
            group = coordinator.groups.get(event.group_id)
            self._commits[event.request_id] = _CommitContext(
                request=event,
                existed=group is not None,
                state=group.state if group else None,
                generation_id=group.generation_id if group else -1,
                members=frozenset(group.members) if group else frozenset(),
                static_members=dict(group.static_members) if group else {},
            )
        elif isinstance(event, SyncGroup):
            self._syncs[event.request_id] = event

    def after(self, coordinator: GroupCoordinator, event: Event, effects: list[Effect]) -> None:
        self.steps += 1
        for effect in effects:
            if isinstance(effect, Reply):
                self._check_reply(coordinator, effect)
        for group_id in coordinator.touched_groups:
            consumer_group = coordinator.consumer_groups.get(group_id)
            if consumer_group is not None:
                for consumer_check in consumer.STATE_CHECKS:
                    consumer_check(consumer_group)
            group = coordinator.groups.get(group_id)
            if group is None:
                continue
            check_generation_monotonic(group, self._generations.get(group_id))
            self._generations[group_id] = (group, group.generation_id)
            for check in STATE_CHECKS:
                check(group)

    def _incarnation(self, group: Group) -> int:
        known = self._incarnations.get(group.group_id)
        if known is None or known[0] is not group:
            known = (group, known[1] + 1 if known else 0)
            self._incarnations[group.group_id] = known
        return known[1]

    def _check_reply(self, coordinator: GroupCoordinator, reply: Reply) -> None:
        response = reply.response
        if isinstance(response, OffsetCommitResponse):
            context = self._commits.pop(reply.request_id, None)
            if context is not None and any(
                p.error_code == ErrorCode.NONE for t in response.topics for p in t.partitions
            ):
                if isinstance(context, consumer.CommitContext):
                    consumer.check_no_stale_member_epoch_commit(context)
                else:
                    check_no_stale_generation_commit(context)
        elif isinstance(response, SyncGroupResponse):
            request = self._syncs.pop(reply.request_id, None)
            if request is not None and response.error_code == ErrorCode.NONE:
                group = coordinator.groups.get(request.group_id)
                if group is not None and group.protocol_type == CONSUMER_PROTOCOL_TYPE:
                    self._record_ownership(group, request, response.assignment)

    def _record_ownership(self, group: Group, request: SyncGroup, assignment: bytes) -> None:
        try:
            decoded = decode_assignment(assignment)
        except MalformedConsumerProtocol:
            return  # not a consumer assignment: nothing to check
        owner = request.group_instance_id or request.member_id
        member = group.members.get(request.member_id)
        if member is not None and member.group_instance_id is not None:
            owner = member.group_instance_id
        owners = self._owners.setdefault(
            (group.group_id, self._incarnation(group), request.generation_id), {}
        )
        check_at_most_one_owner_per_partition(
            owners,
            owner,
            ((tp.topic, p) for tp in decoded.partitions for p in tp.partitions),
            f"group {group.group_id!r} generation {request.generation_id}",
        )


def check_generation_monotonic(group: Group, seen: tuple[Group, int] | None) -> None:
    """``seen``: the group (object) and generation the Monitor saw last under this id; a
    group deleted and created again starts afresh."""
    if seen is not None and seen[0] is group and group.generation_id < seen[1]:
        raise InvariantViolation(
            "GenerationMonotonic",
            f"group {group.group_id!r} went from generation {seen[1]} to {group.generation_id}",
        )


def check_at_most_one_owner_per_partition(
    owners: dict[tuple[str, int], str],
    owner: str,
    partitions: Iterable[tuple[str, int]],
    where: str,
) -> None:
    """Record ``owner`` for ``partitions`` in one generation's ``owners``; a partition
    already handed to another owner is a violation."""
    for key in partitions:
        previous = owners.setdefault(key, owner)
        if previous != owner:
            raise InvariantViolation(
                "AtMostOneOwnerPerPartition",
                f"{where}: {key[0]}-{key[1]} handed to {previous!r} and to {owner!r}",
            )


def check_no_stale_generation_commit(context: _CommitContext) -> None:
    req = context.request
    if req.generation_id < 0:
        if context.existed and context.state != EMPTY:
            raise InvariantViolation(
                "NoStaleGenerationCommit",
                f"group {req.group_id!r}: commit without a generation accepted in {context.state}",
            )
        return
    member_known = req.member_id in context.members
    instance_ok = (
        req.group_instance_id is None
        or context.static_members.get(req.group_instance_id) == req.member_id
    )
    if not (
        context.existed
        and req.generation_id == context.generation_id
        and member_known
        and instance_ok
        and context.state not in (COMPLETING, DEAD)
    ):
        raise InvariantViolation(
            "NoStaleGenerationCommit",
            f"group {req.group_id!r}: commit by {req.member_id!r} at generation {req.generation_id} accepted "
            f"while the group was {context.state} at generation {context.generation_id}",
        )
