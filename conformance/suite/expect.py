"""Check a response against a step's expectations (the scenario's own claims).

Each expectation key reads one view of the response, the same at every version:

* ``error``: the error of the request as a whole. JoinGroup, SyncGroup, Heartbeat,
  ListGroups: the error code. LeaveGroup: the top-level error, or when that is NONE the
  single member's (as v0-2 report it). (Txn)OffsetCommit: the error every partition carries.
  OffsetFetch: the group error (top-level from v2, repeated on every partition below).
  DescribeGroups, DeleteGroups: the first group's. OffsetDelete: the top-level error.
* ``members``: member ids, in any order (JoinGroup's list for the leader, DescribeGroups').
* ``instances`` / ``subscriptions``: JoinGroup's member list, each member's instance id / the
  topics its metadata subscribes to (decoded, in any order).
* ``assignment``: the partitions a SyncGroup reply assigns, decoded, in any order;
  ``assignment_encoded``: whether the reply carries bytes at all (an encoded assignment of
  no partitions is not the empty one Kafka gives a member the leader left out).
* ``offsets`` / ``leader_epochs`` / ``metadata``: OffsetFetch offsets, leader epochs, metadata,
  per partition (of the first group it names); ``partitions``: the errors per partition of
  OffsetFetch (such as UNSTABLE_OFFSET_COMMIT), (Txn)OffsetCommit and OffsetDelete.
* ``groups``: OffsetFetch v8+, each group's answer by group id, read by the keys above.
* ``leave``: LeaveGroup v3+ errors per member id (or group instance id, or "" for neither).
* ``state``, ``protocol``, ``protocol_type``: DescribeGroups' group (ListGroups: this
  run's group entry; ``state`` is ``absent`` if it is not listed); ``listed``: whether
  ListGroups lists this run's group.
* ``assignment`` of ConsumerGroupHeartbeat: the partitions it assigns, or ``unchanged``
  when it carries none; ``state``, ``group_epoch``, ``assignment_epoch``, ``members``:
  ConsumerGroupDescribe's first group; ``group_type``: ListGroups' entry (v5+).
* the rest (``member_id``, ``generation_id``, ``member_epoch``, ...) are the response's fields.
"""

from __future__ import annotations

from collections.abc import Sequence

from coordspec.conformance.suite.scenario import UNCHANGED, Matcher, Pairs, RecordSpec
from coordspec.conformance.suite.symbols import ANY, Symbols, Unbound
from coordspec.reference.consumer_protocol import (
    MalformedConsumerProtocol,
    decode_assignment,
    decode_subscription,
)
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import responses as rs
from coordspec.reference.group.records import (
    EndTransactionMarker,
    GroupMetadataValue,
    OffsetCommitKey,
    OffsetCommitValue,
    Record,
    TopicPartitions,
)

_SAME_ORDERLESS = ("members", "assignment")


def check(
    api: str,
    version: int,
    expected: dict[str, Matcher],
    response: rs.Response,
    symbols: Symbols,
    tolerated: frozenset[str] = frozenset(),
    first_group: str | None = None,
) -> str | None:
    """None if every expectation holds (binding new names as it goes); else the first that
    fails. Keys in ``tolerated`` (fields an ``--allow`` entry accepted here) are not checked.
    ``first_group``: the group an OffsetFetch names first (its answer names no group)."""
    for key, matcher in expected.items():
        if key in tolerated:
            continue
        if key == "groups":
            assert isinstance(response, rs.OffsetFetchResponse)
            problem = _each_group(version, matcher, response, symbols, first_group)
        else:
            problem = _match(key, matcher, view(key, version, response, symbols.group_id), symbols)
        if problem:
            return problem
    return None


def _each_group(
    version: int,
    matcher: Matcher,
    r: rs.OffsetFetchResponse,
    symbols: Symbols,
    first_group: str | None,
) -> str | None:
    """OffsetFetch v8+: each group's expectations against that group's answer."""
    answers = {first_group: rs.OffsetFetchResponse(r.error_code, r.topics)}
    answers.update(
        (g.group_id, rs.OffsetFetchResponse(g.error_code, g.topics)) for g in r.other_groups
    )
    for group, expected in matcher.value:
        try:
            group_id = symbols.resolve(group)
        except Unbound as exc:
            return f"expect.groups: {exc}"
        if group_id not in answers:
            return f"expect.groups: the answer has no group {symbols.describe(group_id)}"
        problem = check("OffsetFetch", version, expected, answers[group_id], symbols)
        if problem:
            return problem.replace("expect.", f"expect.groups.{group}.", 1)
    return None


def _match(key: str, matcher: Matcher, actual: object, symbols: Symbols) -> str | None:
    try:
        if matcher.kind == "equal":
            value = matcher.value
            if value == ANY:
                return None
            if (
                isinstance(value, str)
                and value.startswith("$")
                and not symbols.is_reserved(value)
                and not symbols.is_bound(value)
            ):
                symbols.bind(value, actual)
                return None
            want = _resolve(value, symbols)
            if _same(key, want, actual):
                return None
            return f"expect.{key}: expected {_show(want, symbols)}, got {_show(actual, symbols)}"
        options = [
            _resolve(v, symbols)
            for v in (matcher.value if matcher.kind == "one_of" else (matcher.value,))
        ]
        hit = any(_same(key, o, actual) for o in options)
        if hit == (matcher.kind == "one_of"):
            return None
        what = (
            "one of " + ", ".join(_show(o, symbols) for o in options)
            if matcher.kind == "one_of"
            else f"not {_show(options[0], symbols)}"
        )
        return f"expect.{key}: expected {what}, got {_show(actual, symbols)}"
    except Unbound as exc:
        return f"expect.{key}: {exc}"


def _resolve(value: object, symbols: Symbols) -> object:
    if isinstance(value, Pairs):
        return {symbols.resolve(k): symbols.resolve(v) for k, v in value}
    if isinstance(value, tuple):
        return [symbols.resolve(v) for v in value]
    return symbols.resolve(value)


def _same(key: str, want: object, actual: object) -> bool:
    if key in _SAME_ORDERLESS and isinstance(want, list) and isinstance(actual, list):
        return sorted(map(str, want)) == sorted(map(str, actual))
    if key == "subscriptions" and isinstance(want, dict) and isinstance(actual, dict):
        return {k: sorted(v) for k, v in want.items()} == actual
    return want == actual


def _show(value: object, symbols: Symbols) -> str:
    if isinstance(value, list):
        return (
            "["
            + ", ".join(symbols.describe(v) if isinstance(v, str) else repr(v) for v in value)
            + "]"
        )
    if isinstance(value, dict):
        return (
            "{"
            + ", ".join(
                f"{symbols.describe(k) if isinstance(k, str) else k}: {v!r}"
                for k, v in value.items()
            )
            + "}"
        )
    return symbols.describe(value)


def _common(errors: list[ErrorCode]) -> str:
    names = sorted({e.name for e in errors})
    return names[0] if len(names) == 1 else "NONE" if not names else "mixed: " + "/".join(names)


def view(key: str, version: int, r: rs.Response, group_id: str) -> object:
    """The value expectation ``key`` compares with, read from response ``r``."""
    if key == "error":
        return _error(version, r)
    if isinstance(r, rs.JoinGroupResponse) and key == "members":
        return [m.member_id for m in r.members]
    if isinstance(r, rs.JoinGroupResponse) and key == "instances":
        return {m.member_id: m.group_instance_id for m in r.members}
    if isinstance(r, rs.JoinGroupResponse) and key == "subscriptions":
        return {m.member_id: _topics(m.metadata) for m in r.members}
    if isinstance(r, rs.SyncGroupResponse) and key == "assignment_encoded":
        return bool(r.assignment)
    if isinstance(r, rs.SyncGroupResponse) and key == "assignment":
        if not r.assignment:
            return []
        try:
            decoded = decode_assignment(r.assignment)
        except MalformedConsumerProtocol as exc:
            return f"undecodable assignment: {exc}"
        return [f"{tp.topic}-{p}" for tp in decoded.partitions for p in tp.partitions]
    if isinstance(r, rs.OffsetFetchResponse) and key in _FETCHED:
        return {
            f"{t.name}-{p.partition_index}": getattr(p, _FETCHED[key])
            for t in r.topics
            for p in t.partitions
        }
    if (
        isinstance(
            r,
            (
                rs.OffsetCommitResponse,
                rs.TxnOffsetCommitResponse,
                rs.OffsetDeleteResponse,
                rs.OffsetFetchResponse,
            ),
        )
        and key == "partitions"
    ):
        return {
            f"{t.name}-{p.partition_index}": p.error_code.name
            for t in r.topics
            for p in t.partitions
        }
    if isinstance(r, rs.LeaveGroupResponse) and key == "leave":
        return {m.member_id or m.group_instance_id or "": m.error_code.name for m in r.members}
    if isinstance(r, rs.DescribeGroupsResponse):
        group = r.groups[0] if r.groups else None
        if group is None:
            return None
        return {
            "state": group.group_state,
            "protocol": group.protocol_data,
            "protocol_type": group.protocol_type,
            "members": [m.member_id for m in group.members],
        }[key]
    if isinstance(r, rs.ListGroupsResponse):
        mine = [g for g in r.groups if g.group_id == group_id]
        if key == "listed":
            return bool(mine)
        if not mine:
            return "absent"
        return {
            "state": mine[0].group_state,
            "protocol_type": mine[0].protocol_type,
            "group_type": mine[0].group_type,
        }[key]
    if isinstance(r, rs.ConsumerGroupHeartbeatResponse) and key == "assignment":
        return UNCHANGED if r.assignment is None else _names(r.assignment)
    if isinstance(r, rs.ConsumerGroupDescribeResponse):
        group = r.groups[0] if r.groups else None
        if group is None:
            return None
        return {
            "state": group.group_state,
            "group_epoch": group.group_epoch,
            "assignment_epoch": group.assignment_epoch,
            "members": [m.member_id for m in group.members],
        }[key]
    return getattr(r, key)


def check_records(
    expected: tuple[RecordSpec, ...], written: Sequence[Record], symbols: Symbols
) -> str | None:
    """None if the records a step wrote are those ``expected``, in any order; else what differs."""
    try:
        wanted = [(spec, symbols.resolve(spec.group)) for spec in expected]
    except Unbound as exc:
        return f"expect.records: {exc}"
    left = list(written)
    for spec, group in wanted:
        match = next((r for r in left if _is_record(spec, group, r)), None)
        if match is None:
            break
        left.remove(match)
    else:
        if not left:
            return None
    shown = ", ".join(_shown_spec(spec, group, symbols) for spec, group in wanted)
    got = ", ".join(_shown_record(r, symbols) for r in written)
    return f"expect.records: expected [{shown}], got [{got}]"


def _kind(record: Record) -> str:
    if isinstance(record.key, EndTransactionMarker):
        return "transaction_marker"  # no expectation names one: a step's extra record
    offsets = isinstance(record.key, OffsetCommitKey)
    if record.value is None:
        return "offset_tombstone" if offsets else "group_tombstone"
    return "offset_commit" if offsets else "group_metadata"


def _is_record(spec: RecordSpec, group: object, record: Record) -> bool:
    key, value = record.key, record.value
    if _kind(record) != spec.kind or key.group != group:
        return False
    if isinstance(key, OffsetCommitKey) and spec.partition != f"{key.topic}-{key.partition}":
        return False
    if spec.offset is not None and not (
        isinstance(value, OffsetCommitValue) and value.offset == spec.offset
    ):
        return False
    return spec.generation is None or (
        isinstance(value, GroupMetadataValue) and value.generation == spec.generation
    )


def _group_name(group: object, symbols: Symbols) -> str:
    """A group id as the scenario names it: ``$group``, ``$group-b``."""
    if isinstance(group, str) and group.startswith(symbols.group_id):
        return "$group" + group[len(symbols.group_id) :]
    return repr(group)


def _shown_spec(spec: RecordSpec, group: object, symbols: Symbols) -> str:
    details = [_group_name(group, symbols), spec.partition]
    details += [f"offset {spec.offset}" if spec.offset is not None else None]
    details += [f"generation {spec.generation}" if spec.generation is not None else None]
    return f"{spec.kind} ({', '.join(d for d in details if d)})"


def _shown_record(record: Record, symbols: Symbols) -> str:
    key, value = record.key, record.value
    if isinstance(key, EndTransactionMarker):
        return f"{_kind(record)} ({key.result}, producer {record.producer_id})"
    details = [_group_name(key.group, symbols)]
    if isinstance(key, OffsetCommitKey):
        details.append(f"{key.topic}-{key.partition}")
    if isinstance(value, OffsetCommitValue):
        details.append(f"offset {value.offset}")
    if isinstance(value, GroupMetadataValue):
        details.append(f"generation {value.generation}")
    return f"{_kind(record)} ({', '.join(details)})"


_FETCHED = {
    "offsets": "committed_offset",
    "leader_epochs": "committed_leader_epoch",
    "metadata": "metadata",
}


def _names(topics: Sequence[TopicPartitions]) -> list[str]:
    return [f"{t.topic_id}-{p}" for t in topics for p in t.partitions]


def _topics(metadata: bytes) -> list[str] | str:
    """The topics a member's subscription names, sorted; or why it does not decode."""
    try:
        return sorted(decode_subscription(metadata).topics)
    except MalformedConsumerProtocol as exc:
        return f"undecodable subscription: {exc}"


def _error(version: int, r: rs.Response) -> str:
    if isinstance(r, rs.LeaveGroupResponse):
        if r.error_code == ErrorCode.NONE and len(r.members) == 1:
            return r.members[0].error_code.name
        return r.error_code.name
    if isinstance(r, (rs.OffsetCommitResponse, rs.TxnOffsetCommitResponse)):
        return _common([p.error_code for t in r.topics for p in t.partitions])
    if isinstance(r, rs.OffsetFetchResponse):
        if version >= 2:
            return r.error_code.name
        return _common([p.error_code for t in r.topics for p in t.partitions])
    if isinstance(r, rs.DescribeGroupsResponse):
        return r.groups[0].error_code.name if r.groups else "NONE"
    if isinstance(r, rs.DeleteGroupsResponse):
        return r.results[0].error_code.name if r.results else "NONE"
    if isinstance(r, rs.ConsumerGroupDescribeResponse):
        return r.groups[0].error_code.name if r.groups else "NONE"
    return r.error_code.name
