"""The mutants' patches: each makes the reference coordinator, as the project's broker runs
it, behave as a catalogued buggy broker did (catalog.py names the bug behind each id).

A broker process started by ``launch`` installs one (``install(id)`` with ``ACTIVE`` left
on for good); the conform process, and so the oracle, never imports this module then. A
mutated reference target (on_reference.py: for APIs the broker does not serve, and in tests)
installs one for a while and turns ``ACTIVE`` on around its own steps only (``active()``),
so an oracle in the same process stays Kafka.

A patch replaces a reference function everywhere it is bound (modules that imported it by
name, the coordinator's handler tables) by one that runs the bug's version while ``ACTIVE``.
"""

from __future__ import annotations

import contextlib
import dataclasses
import sys
from collections.abc import Callable, Iterator
from typing import Any

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import coordinator as coordinator_module
from coordspec.reference.group import loader, membership, offsets, rebalance, txn_offsets
from coordspec.reference.group.requests import JoinGroup
from coordspec.reference.group.responses import (
    HeartbeatResponse,
    JoinGroupResponse,
    SyncGroupResponse,
)
from coordspec.reference.group.state import Group, Member
from coordspec.reference.group.transitions import COMPLETING, EMPTY, PREPARING, STABLE

ACTIVE = False
_undo: list[Callable[[], None]] = []
_flags: set[str] = set()  # which wrapped call is under way, for patches that act inside another
_loaded: set[str] = set()  # groups this coordinator loaded from the log (#52, #53, #54)


@contextlib.contextmanager
def active() -> Iterator[None]:
    global ACTIVE
    ACTIVE = True
    try:
        yield
    finally:
        ACTIVE = False


@contextlib.contextmanager
def _flag(name: str) -> Iterator[None]:
    _flags.add(name)
    try:
        yield
    finally:
        _flags.discard(name)


def _bindings(original: object) -> Iterator[tuple[Any, str]]:
    """Every (owner, name) of a loaded coordspec module that holds ``original``: module
    globals, and the values of module-level dicts (as a tuple ``(dict, key)``)."""
    for name, module in list(sys.modules.items()):
        if not name.startswith("coordspec.") or module is None:
            continue
        for attr, value in list(vars(module).items()):
            if value is original:
                yield module, attr
            elif isinstance(value, dict):
                yield from ((value, key) for key, item in list(value.items()) if item is original)


def _replace(original: Callable, mutated: Callable) -> None:
    """Bind ``original``'s name to a function running ``mutated(original, ...)`` while ACTIVE."""

    def chooser(*args: Any, **kwargs: Any) -> Any:
        if ACTIVE:
            return mutated(original, *args, **kwargs)
        return original(*args, **kwargs)

    chooser.__name__ = getattr(original, "__name__", "patched")
    for owner, name in list(_bindings(original)):
        if isinstance(owner, dict):
            owner[name] = chooser
            _undo.append(lambda owner=owner, name=name: owner.__setitem__(name, original))
        else:
            setattr(owner, name, chooser)
            _undo.append(lambda owner=owner, name=name: setattr(owner, name, original))


def _replace_method(cls: type, name: str, mutated: Callable) -> None:
    original = cls.__dict__[name]
    if isinstance(original, property):
        getter = original.fget

        def get(self: Any) -> Any:
            return mutated(getter, self) if ACTIVE else getter(self)

        setattr(cls, name, property(get))
    else:

        def method(self: Any, *args: Any, **kwargs: Any) -> Any:
            if ACTIVE:
                return mutated(original, self, *args, **kwargs)
            return original(self, *args, **kwargs)

        setattr(cls, name, method)
    _undo.append(lambda: setattr(cls, name, original))


# -- b.1 JoinGroup / SyncGroup barrier and generation ----------------------------------


def _b1() -> None:
    # The join phase waits the shortest member's rebalance timeout, as Redpanda took the
    # joining request's (-1 for a v0 JoinGroup, which closed the phase at once).
    _replace_method(
        Group,
        "rebalance_timeout_ms",
        lambda original, group: min(
            (m.rebalance_timeout_ms for m in group.members.values()), default=0
        ),
    )


def _b2() -> None:
    # KAFKA-8653: a v0 JoinGroup's rebalance timeout defaulted to -1 (here 0), not the session timeout.
    _replace_method(
        JoinGroup,
        "effective_rebalance_timeout_ms",
        lambda original, req: 0 if req.api_version == 0 else original(req),
    )


SYNC_WAIT = ("TansuSyncWait",)
TANSU_WAIT_MS = 3_000


def _b3() -> None:
    # Tansu: a follower's SyncGroup is answered after a fixed wait, with whatever it has.
    def sync_group(original, c, req):
        original(c, req)
        group = c.groups.get(req.group_id)
        member = group.members.get(req.member_id) if group is not None else None
        parked = member is not None and member.awaiting_sync is not None
        if parked and not group.is_leader(req.member_id):
            key = (*SYNC_WAIT, group.group_id, req.member_id)
            c.timers.schedule(key, c.now_ms + TANSU_WAIT_MS)

    def fire(original, self, key):
        if key[: len(SYNC_WAIT)] != SYNC_WAIT:
            return original(self, key)
        group = self.groups.get(key[1])
        member = group.members.get(key[2]) if group is not None else None
        if member is not None and member.awaiting_sync is not None:
            self.reply_parked(
                member.awaiting_sync,
                "SyncGroup",
                SyncGroupResponse(
                    ErrorCode.NONE, group.protocol_type, group.protocol_name, member.assignment
                ),
            )
            member.awaiting_sync = None

    _replace(membership.sync_group, sync_group)
    _replace_method(coordinator_module.GroupCoordinator, "_fire", fire)


def _b4() -> None:
    # SeaweedFS: a new member with the client.id of a member is taken to be that member.
    def join_group(original, c, req):
        group = c.groups.get(req.group_id)
        if group is not None and not req.member_id and req.group_instance_id is None:
            same = [m for m in group.members.values() if m.client_id == req.client_id]
            if same:
                req = dataclasses.replace(req, member_id=same[0].member_id)
        return original(c, req)

    _replace(membership.join_group, join_group)


def _b5() -> None:
    # SeaweedFS: a member joining during CompletingRebalance is answered with the current
    # generation, which the leader's SyncGroup (for the old member set) then makes Stable.
    def add_member(original, c, group, req, member_id):
        if group.state != COMPLETING:
            return original(c, group, req, member_id)
        with _flag("no-rebalance"):
            original(c, group, req, member_id)
        member = group.members[member_id]
        c.reply(req, membership.current_generation_response(group, member_id))
        member.awaiting_join = None
        member.is_new = False
        group.pending_sync[member_id] = None
        return None

    def maybe_prepare(original, c, group, cause):
        if "no-rebalance" in _flags:
            return None
        return original(c, group, cause)

    _replace(membership.add_member_then_rebalance_or_complete_join, add_member)
    _replace(rebalance.maybe_prepare_rebalance_or_complete_join, maybe_prepare)


def _b6() -> None:
    # devkafka: no join barrier: the join phase completes without waiting for known members.
    _replace_method(Group, "has_all_members_joined", lambda original, group: True)


def _b7() -> None:
    # kfake: a follower rejoining a Stable group with new metadata gets the current generation.
    def join_existing(original, c, group, req):
        member = group.members.get(req.member_id)
        if (
            member is not None
            and group.state == STABLE
            and not group.is_leader(req.member_id)
            and group.validate_member(req.member_id, req.group_instance_id) is None
        ):
            req = dataclasses.replace(req, protocols=member.protocols)
        return original(c, group, req)

    _replace(membership.join_existing_member, join_existing)


def _b8() -> None:
    # kfake: a joiner is admitted if any member shares one of its protocols.
    def supports(original, group, protocol_type, protocols):
        if group.state == EMPTY or group.protocol_type != protocol_type:
            return original(group, protocol_type, protocols)
        offered = {p.name for m in group.members.values() for p in m.protocols}
        return not group.members or any(p.name in offered for p in protocols)

    _replace_method(Group, "supports_protocols", supports)


def _b9() -> None:
    # tisonkun/kafka-api: a follower's SyncGroup assignment is applied like the leader's.
    def sync_group(original, c, req):
        original(c, req)
        group = c.groups.get(req.group_id)
        member = group.members.get(req.member_id) if group is not None else None
        if (
            member is not None
            and member.awaiting_sync is not None
            and group.state == COMPLETING
            and not group.is_leader(req.member_id)
            and req.assignments
        ):
            membership.write_leader_assignment(c, group, req)

    _replace(membership.sync_group, sync_group)


def _b11() -> None:
    # KAFKA-2557: before the split, an old generation during a rebalance heard REBALANCE_IN_PROGRESS.
    def heartbeat(original, c, req):
        group = c.groups.get(req.group_id)
        if (
            group is not None
            and group.state in (PREPARING, COMPLETING)
            and group.validate_member(req.member_id, req.group_instance_id) is None
            and req.generation_id != group.generation_id
        ):
            c.reply(req, HeartbeatResponse(ErrorCode.REBALANCE_IN_PROGRESS))
            return None
        return original(c, req)

    _replace(membership.heartbeat, heartbeat)


# -- b.2 zombies and stale generations -------------------------------------------------


def _b13() -> None:
    # KAFKA-2555: a commit from an old generation is accepted.
    def validate(original, group, req):
        error = original(group, req)
        if error == ErrorCode.ILLEGAL_GENERATION:
            return original(group, dataclasses.replace(req, generation_id=group.generation_id))
        return error

    _replace(offsets.validate_offset_commit, validate)


def _b14() -> None:
    # KAFKA-8421's contract broken: a commit during CompletingRebalance hears ILLEGAL_GENERATION.
    def validate(original, group, req):
        error = original(group, req)
        if error == ErrorCode.REBALANCE_IN_PROGRESS and group.state == COMPLETING:
            return ErrorCode.ILLEGAL_GENERATION
        return error

    _replace(offsets.validate_offset_commit, validate)


def _b16() -> None:
    # franz-go's contract: a member no longer in the group commits and is accepted, so it
    # never learns it is a zombie.
    def commit(original, c, req):
        group = c.groups.get(req.group_id) if req.group_id is not None else None
        ghost = None
        if (
            group is not None
            and group.members
            and group.state in (STABLE, PREPARING)
            and req.member_id
            and req.member_id not in group.members
            and req.generation_id >= 0
        ):
            any_member = next(iter(group.members.values()))
            ghost = dataclasses.replace(any_member, member_id=req.member_id, group_instance_id=None)
            group.members[req.member_id] = ghost
            req = dataclasses.replace(
                req, group_instance_id=None, generation_id=group.generation_id
            )
        try:
            return original(c, req)
        finally:
            if ghost is not None and group.members.get(req.member_id) is ghost:
                del group.members[req.member_id]

    _replace(offsets.commit_offsets, commit)


# -- b.3 sessions, new members, MEMBER_ID_REQUIRED -------------------------------------


def _b20() -> None:
    # KAFKA-7610 unfixed: a v4+ dynamic member is admitted without MEMBER_ID_REQUIRED.
    _replace_method(JoinGroup, "requires_known_member_id", lambda original, req: False)


def _b21() -> None:
    # KAFKA-9752: a new member parked in JoinGroup counts as heartbeating, so it never expires.
    _replace_method(
        Member,
        "has_satisfied_heartbeat",
        lambda original, m: m.awaiting_join is not None or m.awaiting_sync is not None,
    )


def _b22() -> None:
    # Redpanda #22749: members parked in JoinGroup or SyncGroup expire while they wait.
    _replace_method(Member, "has_satisfied_heartbeat", lambda original, m: False)


def _b23() -> None:
    # Redpanda #3300: while PreparingRebalance, members whose session ran out are kept.
    def on_session(original, c, group, member_id):
        if group.state == PREPARING and member_id not in group.pending_members:
            return None
        return original(c, group, member_id)

    _replace(rebalance.on_session_timer, on_session)


def _b25() -> None:
    # KoP #380: a leave does not re-check the join phase, which waits for its timeout.
    def leave(original, c, req):
        with _flag("leaving"):
            return original(c, req)

    def maybe_complete(original, c, group):
        if "leaving" in _flags:
            return None
        return original(c, group)

    _replace(membership.leave_group, leave)
    _replace(rebalance.maybe_complete_join_phase, maybe_complete)


def _b26() -> None:
    # SeaweedFS #9243: an expired member of a Stable group stays until something else rebalances.
    def on_session(original, c, group, member_id):
        if group.state == STABLE and member_id in group.members:
            return None
        return original(c, group, member_id)

    _replace(rebalance.on_session_timer, on_session)


def _b27() -> None:
    # librdkafka #5570's broker side: a member id handed out by MEMBER_ID_REQUIRED never expires.
    def join_new(original, c, group, req):
        before = set(group.pending_members)
        original(c, group, req)
        for member_id in set(group.pending_members) - before:
            c.timers.cancel(rebalance.session_key(group.group_id, member_id))

    _replace(membership.join_new_member, join_new)


def _b28() -> None:
    # Event Hubs: JoinGroup v0 is refused with INVALID_SESSION_TIMEOUT.
    def join_group(original, c, req):
        if req.api_version == 0:
            response = JoinGroupResponse(ErrorCode.INVALID_SESSION_TIMEOUT, member_id=req.member_id)
            c.reply(req, response)
            return None
        return original(c, req)

    _replace(membership.join_group, join_group)


# -- b.4 static membership -------------------------------------------------------------


def _b29() -> None:
    # KAFKA-8500: while PreparingRebalance a second process with a known instance id is
    # admitted as another member instead of replacing the first.
    def join_new(original, c, group, req):
        instance_id = req.group_instance_id
        if (
            group.state == PREPARING
            and instance_id is not None
            and instance_id in group.static_members
        ):
            member_id = c.choices.member_id(instance_id)
            return membership.add_member_then_rebalance_or_complete_join(c, group, req, member_id)
        return original(c, group, req)

    _replace(membership.join_new_member, join_new)


def _b30() -> None:
    # KAFKA-9801: a static member rejoining during CompletingRebalance gets its new id and the
    # current generation, with no new rebalance: the leader assigns to the old id.
    def update_static(original, c, group, req, new_member_id):
        if group.state != COMPLETING:
            return original(c, group, req, new_member_id)
        with _flag("static-in-completing"):
            return original(c, group, req, new_member_id)

    def prepare(original, c, group, cause):
        if "static-in-completing" not in _flags:
            return original(c, group, cause)
        for member in group.members.values():
            if member.awaiting_join is not None:
                response = membership.current_generation_response(group, member.member_id)
                c.reply_parked(member.awaiting_join, "JoinGroup", response)
                member.awaiting_join = None
                group.pending_sync[member.member_id] = None
        return None

    _replace(membership.update_static_member_then_rebalance_or_complete_join, update_static)
    _replace(rebalance.prepare_rebalance, prepare)


def _b31() -> None:
    # KAFKA-10284: a static member's new member id is not what the log keeps: a reload
    # brings the old id back and fences the live member.
    def update_static(original, c, group, req, new_member_id):
        old = group.static_members.get(req.group_instance_id)
        _flags.add(f"static:{new_member_id}:{old}")
        try:
            return original(c, group, req, new_member_id)
        finally:
            _flags.discard(f"static:{new_member_id}:{old}")

    def record(original, group, assignment):
        written = original(group, assignment)
        swaps = [f.split(":")[1:] for f in _flags if f.startswith("static:")]
        if not swaps:
            return written
        new, old = swaps[0]
        value = written.value
        members = tuple(
            dataclasses.replace(m, member_id=old) if m.member_id == new else m
            for m in value.members
        )
        leader = old if value.leader == new else value.leader
        return dataclasses.replace(
            written, value=dataclasses.replace(value, members=members, leader=leader)
        )

    _replace(membership.update_static_member_then_rebalance_or_complete_join, update_static)
    _replace(rebalance.group_metadata_record, record)


def _b33() -> None:
    # KAFKA-14009: a static member rejoining keeps its old rebalance timeout.
    def update(original, c, member, req):
        kept = member.rebalance_timeout_ms
        original(c, member, req)
        if member.is_static:
            member.rebalance_timeout_ms = kept

    _replace(membership.update_member, update)


def _b35() -> None:
    # Redpanda #4189: JoinGroup versions with static membership advertised, the feature refused.
    def join_group(original, c, req):
        if req.group_instance_id is not None:
            c.reply(req, JoinGroupResponse(ErrorCode.UNSUPPORTED_VERSION, member_id=req.member_id))
            return None
        return original(c, req)

    _replace(membership.join_group, join_group)


# -- b.5 / b.6 loading, failover, coordinator errors ------------------------------------


def _b38() -> None:
    # KAFKA-8069: offsets without an expire timestamp are reloaded as expiring at once.
    def replay(original, records):
        groups = original(records)
        for group in groups.values():
            group.offsets = {
                key: dataclasses.replace(value, expire_timestamp=value.commit_timestamp)
                if value.expire_timestamp == -1
                else value
                for key, value in group.offsets.items()
            }
        return groups

    _replace(loader.replay, replay)


def _b39() -> None:
    # KAFKA-13636: during a rebalance offsets expire counted from their commit, subscribed or not.
    def expired(original, c, group):
        if group.state not in (PREPARING, COMPLETING):
            return original(c, group)
        subscribed, group.subscribed_topics = group.subscribed_topics, None
        try:
            with _flag("commit-base"):
                return original(c, group)
        finally:
            group.subscribed_topics = subscribed

    def base(original, group):
        return "commit" if "commit-base" in _flags else original(group)

    _replace(offsets.expired_offset_keys, expired)
    _replace(offsets.expiration_base, base)


def _b41() -> None:
    # KAFKA-4704: a group id deleted and reused for plain offset commits does not load again.
    def replay(original, records):
        deleted: set[str] = set()
        kept = []
        for record in records:
            key = record.key
            group = getattr(key, "group", None)
            if type(key).__name__ == "GroupMetadataKey" and record.value is None:
                deleted.add(group)
            elif type(key).__name__ == "OffsetCommitKey" and group in deleted:
                continue
            kept.append(record)
        return original(kept)

    _replace(loader.replay, replay)


def _b44() -> None:
    # Redpanda #10363: a group without members is dropped when its partition is loaded.
    def replay(original, records):
        return {k: g for k, g in original(records).items() if g.members}

    _replace(loader.replay, replay)


def _b45() -> None:
    # Redpanda #4900: tombstones are ignored on replay: deleted groups and offsets come back.
    def replay(original, records):
        return original([r for r in records if r.value is not None])

    _replace(loader.replay, replay)


def _b46() -> None:
    # Redpanda #31483 (CORE-16998): the retention sweep tombstones an offset an open
    # transaction staged, so the transaction's commit is lost.
    def expired(original, c, group):
        pending, group.pending_offsets = group.pending_offsets, {}
        try:
            return original(c, group)
        finally:
            group.pending_offsets = pending

    _replace(offsets.expired_offset_keys, expired)


def _b47() -> None:
    # Redpanda #5543: a transaction that ends while its group rebalances stays pending there,
    # so a stable OffsetFetch answers UNSTABLE_OFFSET_COMMIT for good.
    def marker_written(original, c, after, error):
        kept = {
            group_id: group.pending_offsets[after.producer_id]
            for group_id, group in c.groups.items()
            if group.state in (PREPARING, COMPLETING) and after.producer_id in group.pending_offsets
        }
        original(c, after, error)
        for group_id, pending in kept.items():
            c.groups[group_id].pending_offsets[after.producer_id] = pending

    _replace(txn_offsets.marker_written, marker_written)


def _b48() -> None:
    # kfake 12889e13: members loaded from the log get no session, so a departed one stays.
    def on_loaded(original, c, group):
        if len(group.members) > c.config.max_size:
            rebalance.prepare_rebalance(c, group, "LoadGroups")

    _replace(loader.on_loaded, on_loaded)


def _remember_loaded() -> None:
    def replay(original, records):
        groups = original(records)
        _loaded.update(groups)
        return groups

    _replace(loader.replay, replay)


def _b52() -> None:
    # Redpanda #10195: after a leadership change, commits to a loaded group are acknowledged
    # but the committed offset stops advancing.
    _remember_loaded()

    def written(original, c, after, error):
        if error == ErrorCode.NONE and after.group_id in _loaded:
            c.reply(after.request, after.response)
            return None
        return original(c, after, error)

    _replace(offsets.offsets_written, written)


def _b53() -> None:
    # AutoMQ #308: after a restart the broker answers NOT_COORDINATOR for the groups it loaded.
    _remember_loaded()

    def join_group(original, c, req):
        if req.group_id in _loaded:
            c.reply(req, JoinGroupResponse(ErrorCode.NOT_COORDINATOR, member_id=req.member_id))
            return None
        return original(c, req)

    _replace(membership.join_group, join_group)


def _b54() -> None:
    # KoP #1550: offset commits to a group whose partition moved answer COORDINATOR_LOAD_IN_PROGRESS.
    _remember_loaded()

    def commit(original, c, req):
        if req.group_id in _loaded:
            c.reply(req, offsets.commit_error_response(req, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS))
            return None
        return original(c, req)

    _replace(offsets.commit_offsets, commit)


def _b55() -> None:
    # Redpanda #3655: a new member's JoinGroup (no member id, generation -1) to a live group
    # answers NOT_COORDINATOR from the broker FindCoordinator named.
    def join_group(original, c, req):
        group = c.groups.get(req.group_id)
        if not req.member_id and group is not None and group.state == STABLE:
            c.reply(req, JoinGroupResponse(ErrorCode.NOT_COORDINATOR, member_id=""))
            return None
        return original(c, req)

    _replace(membership.join_group, join_group)


PATCHES: dict[int, Callable[[], None]] = {
    int(name[2:]): patch
    for name, patch in sorted(globals().items())
    if name.startswith("_b") and name[2:].isdigit()
}


def install(bug: int) -> None:
    """Patch the reference as bug ``bug``'s broker behaved (in effect while ACTIVE)."""
    if _undo:
        raise RuntimeError("a mutant is installed already")
    PATCHES[bug]()


def uninstall() -> None:
    while _undo:
        _undo.pop()()
    _flags.clear()
    _loaded.clear()
