"""The phases of a rebalance, shared by every input that starts, advances or ends one.

PreparingRebalance (the join phase) collects JoinGroups; CompleteJoin forms the next
generation and answers them; CompletingRebalance waits for the leader's SyncGroup;
Stable follows once the leader's assignment is written. Follows Kafka 4.x
``GroupMetadataManager`` (prepareRebalance, completeClassicGroupJoin,
tryCompleteInitialRebalanceElseSchedule, expirePendingSync, ...), spec rules GM-10..GM-34.
"""

from __future__ import annotations

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.context import Context
from coordspec.reference.group.records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    Record,
)
from coordspec.reference.group.responses import JoinGroupResponse, SyncGroupResponse
from coordspec.reference.group.state import Group, Member
from coordspec.reference.group.transitions import (
    COMPLETING,
    DEAD,
    EMPTY,
    PREPARING,
    STABLE,
    GroupState,
)


def join_key(group_id: str) -> tuple[str, str]:
    return ("CompleteJoin", group_id)


def sync_key(group_id: str) -> tuple[str, str]:
    return ("ExpirePendingSync", group_id)


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return ("ExpireSession", group_id, member_id)


def schedule_session(c: Context, group: Group, member_id: str, timeout_ms: int) -> None:
    c.timers.schedule(session_key(group.group_id, member_id), c.now_ms + timeout_ms)


def reschedule_heartbeat(c: Context, group: Group, member: Member) -> None:
    schedule_session(c, group, member.member_id, member.session_timeout_ms)


def group_metadata_record(group: Group, assignment: dict[str, bytes]) -> Record:
    """A snapshot of the group; members' subscriptions are their selected protocol's metadata."""
    members = tuple(
        MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout=m.rebalance_timeout_ms,
            session_timeout=m.session_timeout_ms,
            subscription=m.metadata(group.protocol_name)
            if group.protocol_name is not None
            else b"",
            assignment=assignment.get(m.member_id, b""),
        )
        for m in group.members.values()
    )
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=group.protocol_name,
        leader=group.leader_id,
        current_state_timestamp=group.state_timestamp_ms
        if group.state_timestamp_ms is not None
        else -1,
        members=members,
    )
    return Record(GroupMetadataKey(group.group_id), value)


def move(c: Context, group: Group, target: GroupState, cause: str) -> None:
    """Change the group's state by an edge of the transition table, and report it."""
    source = group.state
    group.transition_to(target, cause, c.now_ms)
    c.substeps.moved(group, source, target, cause)


# -- entering the join phase ------------------------------------------------------


def maybe_prepare_rebalance_or_complete_join(c: Context, group: Group, cause: str) -> None:
    if group.state in (EMPTY, COMPLETING, STABLE):
        prepare_rebalance(c, group, cause)
    elif group.state == PREPARING:
        maybe_complete_join_phase(c, group)


def prepare_rebalance(c: Context, group: Group, cause: str) -> None:
    """GM-10/GM-11: start a join phase; from Empty, the initial rebalance delay applies.
    ``cause`` is the input that started it, as the transition table names it."""
    if group.state == COMPLETING:
        reset_and_propagate_assignment_with_error(c, group, ErrorCode.REBALANCE_IN_PROGRESS)
    remove_sync_expiration(c, group)
    initial = group.state == EMPTY
    move(c, group, PREPARING, cause)
    if initial:
        delay_ms = c.config.initial_rebalance_delay_ms
        group.in_initial_delay = True
        group.initial_delay_ms = delay_ms
        group.initial_remaining_ms = max(group.rebalance_timeout_ms() - delay_ms, 0)
        c.timers.schedule(join_key(group.group_id), c.now_ms + delay_ms)
    else:
        group.in_initial_delay = False
        maybe_complete_join_else_schedule(c, group)


def maybe_complete_join_else_schedule(c: Context, group: Group) -> None:
    if group.state == PREPARING and group.has_all_members_joined():
        complete_join(c, group)
    else:
        c.timers.schedule(join_key(group.group_id), c.now_ms + group.rebalance_timeout_ms())


def maybe_complete_join_phase(c: Context, group: Group) -> None:
    """Complete early once everyone rejoined, except during the initial rebalance delay."""
    if (
        group.state != PREPARING
        or not group.has_all_members_joined()
        or group.previous_state == EMPTY
    ):
        return
    complete_join(c, group)


def on_join_timer(c: Context, group: Group) -> None:
    """The join timer fired: extend the initial delay if members keep arriving (GM-10), else complete."""
    if group.in_initial_delay and group.new_member_added and group.initial_remaining_ms != 0:
        group.new_member_added = False
        delay_ms = min(group.initial_delay_ms, group.initial_remaining_ms)
        group.initial_remaining_ms = max(group.initial_remaining_ms - group.initial_delay_ms, 0)
        group.initial_delay_ms = delay_ms
        c.timers.schedule(join_key(group.group_id), c.now_ms + delay_ms)
        return
    complete_join(c, group)


# -- completing the join phase ----------------------------------------------------


def complete_join(c: Context, group: Group) -> None:
    c.substeps.started("CompleteJoin", group)
    form_next_generation(c, group)
    c.substeps.ended("CompleteJoin", group, ())


def form_next_generation(c: Context, group: Group) -> None:
    """GM-14: drop dynamic members that did not rejoin, then form the next generation."""
    c.timers.cancel(join_key(group.group_id))
    group.in_initial_delay = False
    for member in [
        m for m in group.members.values() if m.awaiting_join is None and not m.is_static
    ]:
        group.remove(member.member_id, c.choices)
        c.timers.cancel(session_key(group.group_id, member.member_id))
    if group.state == DEAD:
        return
    if not maybe_elect_new_joined_leader(c, group) and group.members:
        # Only static members that did not rejoin remain: wait another rebalance timeout.
        c.timers.schedule(join_key(group.group_id), c.now_ms + group.rebalance_timeout_ms())
        return
    init_next_generation(c, group)
    if group.state == EMPTY:
        c.write(group.group_id, (group_metadata_record(group, {}),), None)
        return
    members = group.leader_members()
    for member in group.members.values():
        if member.awaiting_join is not None:
            response = JoinGroupResponse(
                error_code=ErrorCode.NONE,
                generation_id=group.generation_id,
                protocol_type=group.protocol_type,
                protocol_name=group.protocol_name,
                leader=group.leader_id or "",
                member_id=member.member_id,
                members=members if group.is_leader(member.member_id) else (),
            )
            c.reply_parked(member.awaiting_join, "JoinGroup", response)
            member.awaiting_join = None
        reschedule_heartbeat(c, group, member)
        member.is_new = False
        group.pending_sync[member.member_id] = None
    c.timers.schedule(sync_key(group.group_id), c.now_ms + group.rebalance_timeout_ms())


def maybe_elect_new_joined_leader(c: Context, group: Group) -> bool:
    """GM-15: a leader that did not rejoin hands over to a member that did."""
    if group.leader_id is None:
        return False
    if group.members[group.leader_id].awaiting_join is not None:
        return True
    joined = [m.member_id for m in group.members.values() if m.awaiting_join is not None]
    if not joined:
        return False
    group.leader_id = c.choices.leader(joined)
    return True


def init_next_generation(c: Context, group: Group) -> None:
    """GM-17: the generation moves by exactly one at every completed join phase."""
    group.generation_id += 1
    if group.members:
        group.protocol_name = group.select_protocol(c.choices)
        move(c, group, COMPLETING, "CompleteJoin")
    else:
        group.protocol_name = None
        move(c, group, EMPTY, "CompleteJoin")
    group.subscribed_topics = group.compute_subscribed_topics()
    group.assignment_generation = None
    group.pending_sync.clear()


# -- the sync phase -----------------------------------------------------------------


def remove_sync_expiration(c: Context, group: Group) -> None:
    group.pending_sync.clear()
    c.timers.cancel(sync_key(group.group_id))


def remove_pending_sync_member(c: Context, group: Group, member_id: str) -> None:
    group.pending_sync.pop(member_id, None)
    if group.state in (COMPLETING, STABLE) and group.pending_sync:
        return
    c.timers.cancel(sync_key(group.group_id))


def set_and_propagate_assignment(c: Context, group: Group, assignment: dict[str, bytes]) -> None:
    """GM-22: store the leader's assignment and answer every parked SyncGroup."""
    for member in group.members.values():
        member.assignment = assignment.get(member.member_id, b"")
    group.assignment_generation = group.generation_id
    propagate_assignment(c, group, ErrorCode.NONE)


def reset_and_propagate_assignment_with_error(c: Context, group: Group, error: ErrorCode) -> None:
    assert group.state == COMPLETING, f"group {group.group_id} resets assignments in {group.state}"
    for member in group.members.values():
        member.assignment = b""
    group.assignment_generation = None
    propagate_assignment(c, group, error)


def propagate_assignment(c: Context, group: Group, error: ErrorCode) -> None:
    ok = error == ErrorCode.NONE
    for member in group.members.values():
        if member.awaiting_sync is None:
            continue
        response = SyncGroupResponse(
            error_code=error,
            protocol_type=group.protocol_type if ok else None,
            protocol_name=group.protocol_name if ok else None,
            assignment=member.assignment,
        )
        c.reply_parked(member.awaiting_sync, "SyncGroup", response)
        member.awaiting_sync = None
        # Expiry is ignored while a member waits on us, so its session restarts now.
        reschedule_heartbeat(c, group, member)


def on_pending_sync_timer(c: Context, group: Group) -> None:
    """GM-34: members that never sent SyncGroup within the rebalance timeout are removed."""
    if group.state not in (COMPLETING, STABLE) or not group.pending_sync:
        return
    for member_id in list(group.pending_sync):
        group.remove(member_id, c.choices)
        c.timers.cancel(session_key(group.group_id, member_id))
    maybe_prepare_rebalance_or_complete_join(c, group, "ExpirePendingSync")


# -- members leaving ------------------------------------------------------------------


def answer_parked_join_unknown(c: Context, member: Member) -> None:
    """A member removed while parked in JoinGroup learns it with UNKNOWN_MEMBER_ID."""
    if member.awaiting_join is not None:
        c.reply_parked(
            member.awaiting_join,
            "JoinGroup",
            JoinGroupResponse(ErrorCode.UNKNOWN_MEMBER_ID, member_id=""),
        )
        member.awaiting_join = None


def on_session_timer(c: Context, group: Group, member_id: str) -> None:
    """GM-33: a member (or a pending member id) whose session ran out is removed."""
    if group.state == DEAD:
        return
    if member_id in group.pending_members:
        remove_pending_member(c, group, member_id)
        return
    member = group.members.get(member_id)
    if member is None or member.has_satisfied_heartbeat():
        return
    answer_parked_join_unknown(c, member)
    group.remove(member_id, c.choices)
    if group.state in (STABLE, COMPLETING):
        maybe_prepare_rebalance_or_complete_join(c, group, "ExpireSession")
    elif group.state == PREPARING and group.has_all_members_joined():
        complete_join(c, group)


def remove_pending_member(c: Context, group: Group, member_id: str) -> None:
    group.remove(member_id, c.choices)
    c.timers.cancel(session_key(group.group_id, member_id))
    if group.state == PREPARING:
        maybe_complete_join_phase(c, group)
