"""Which spec rule (spec/group-membership.md) an outcome belongs to, and coverage.

A response is attributed to the rule that decides it: its API's rule, or a narrower one for
particular error codes (MEMBER_ID_REQUIRED is GM-3, a fenced commit GM-50 …). A violation
is attributed the same way, from the error the reference allowed and the one the broker
gave; a broker that accepts what the reference refuses also breaks an invariant, named
as in reference/group/invariants.py. An answer the reference allows but later than its
deadline plus the tolerance breaks ``TimersFireOnTime`` (GM-36), which the oracle names.
"""

from __future__ import annotations

import functools
import re
from collections import Counter
from pathlib import Path

from coordspec.reference.errors import ErrorCode as E
from coordspec.reference.group.requests import LoadGroups
from coordspec.reference.group.transitions import TRANSITIONS, Transition

API_RULES = {
    "JoinGroup": "GM-13",
    "SyncGroup": "GM-20",
    "Heartbeat": "GM-30",
    "LeaveGroup": "GM-31",
    "OffsetCommit": "GM-50",
    "OffsetFetch": "GM-54",
    "DescribeGroups": "GM-60",
    "ListGroups": "GM-61",
    "DeleteGroups": "GM-62",
    "OffsetDelete": "GM-63",
    "TxnOffsetCommit": "GM-57",
    "ConsumerGroupHeartbeat": "CG-9",
    "ConsumerGroupDescribe": "CG-50",
}
_ANY_API_ERROR_RULES = {
    E.INVALID_SESSION_TIMEOUT: "GM-1",
    E.INVALID_GROUP_ID: "GM-1",
    E.FENCED_INSTANCE_ID: "GM-7",
    E.UNKNOWN_MEMBER_ID: "GM-7",
    E.COORDINATOR_NOT_AVAILABLE: "GM-8",
    E.NOT_COORDINATOR: "GM-43",
}
_ERROR_RULES = {
    ("JoinGroup", E.MEMBER_ID_REQUIRED): "GM-3",
    ("JoinGroup", E.INCONSISTENT_GROUP_PROTOCOL): "GM-4",
    ("JoinGroup", E.GROUP_MAX_SIZE_REACHED): "GM-5",
    ("SyncGroup", E.REBALANCE_IN_PROGRESS): "GM-20",
    ("SyncGroup", E.ILLEGAL_GENERATION): "GM-20",
    ("OffsetCommit", E.ILLEGAL_GENERATION): "GM-50",
    ("OffsetCommit", E.REBALANCE_IN_PROGRESS): "GM-52",
    ("OffsetCommit", E.OFFSET_METADATA_TOO_LARGE): "GM-53",
    ("DeleteGroups", E.NON_EMPTY_GROUP): "GM-62",
    ("DeleteGroups", E.GROUP_ID_NOT_FOUND): "GM-62",
    ("OffsetDelete", E.NON_EMPTY_GROUP): "GM-63",
    ("OffsetDelete", E.GROUP_ID_NOT_FOUND): "GM-63",
    ("OffsetDelete", E.GROUP_SUBSCRIBED_TO_TOPIC): "GM-63",
    ("TxnOffsetCommit", E.ILLEGAL_GENERATION): "GM-57",
    ("TxnOffsetCommit", E.OFFSET_METADATA_TOO_LARGE): "GM-53",
    ("OffsetFetch", E.UNSTABLE_OFFSET_COMMIT): "GM-59",
    ("ConsumerGroupHeartbeat", E.INVALID_REQUEST): "CG-1",
    ("ConsumerGroupHeartbeat", E.UNSUPPORTED_ASSIGNOR): "CG-1",
    ("ConsumerGroupHeartbeat", E.INVALID_REGULAR_EXPRESSION): "CG-67",
    ("ConsumerGroupHeartbeat", E.GROUP_ID_NOT_FOUND): "CG-3",
    ("ConsumerGroupHeartbeat", E.GROUP_MAX_SIZE_REACHED): "CG-4",
    ("ConsumerGroupHeartbeat", E.FENCED_MEMBER_EPOCH): "CG-5",
    ("ConsumerGroupHeartbeat", E.UNKNOWN_MEMBER_ID): "CG-5",
    ("ConsumerGroupHeartbeat", E.UNRELEASED_INSTANCE_ID): "CG-31",
    ("ConsumerGroupHeartbeat", E.FENCED_INSTANCE_ID): "CG-35",
    ("OffsetCommit", E.STALE_MEMBER_EPOCH): "CG-60",
    ("OffsetFetch", E.STALE_MEMBER_EPOCH): "CG-62",
    ("ConsumerGroupDescribe", E.GROUP_ID_NOT_FOUND): "CG-50",
    ("ConsumerGroupDescribe", E.INVALID_GROUP_ID): "CG-50",
}
# The reference refused with this error and the broker accepted: the invariant that breaks.
_ACCEPTED_REFUSAL = {
    ("OffsetCommit", E.ILLEGAL_GENERATION): "NoStaleGenerationCommit",
    ("OffsetCommit", E.UNKNOWN_MEMBER_ID): "NoStaleGenerationCommit",
    ("OffsetCommit", E.FENCED_INSTANCE_ID): "NoStaleGenerationCommit",
    ("OffsetCommit", E.REBALANCE_IN_PROGRESS): "NoStaleGenerationCommit",
    ("TxnOffsetCommit", E.ILLEGAL_GENERATION): "NoStaleGenerationCommit",
    ("TxnOffsetCommit", E.UNKNOWN_MEMBER_ID): "NoStaleGenerationCommit",
    ("TxnOffsetCommit", E.FENCED_INSTANCE_ID): "NoStaleGenerationCommit",
}


@functools.cache
def titles() -> dict[str, str]:
    """Each spec rule's title, from the spec's pages (installed as ``coordspec.spec``):
    ``**GM-10: the initial rebalance delay** …`` gives GM-10 its title."""
    import coordspec.spec

    found: dict[str, str] = {}
    for folder in map(Path, coordspec.spec.__path__):
        for page in sorted(folder.glob("*.md")) if folder.is_dir() else ():
            text = page.read_text(encoding="utf-8")
            found.update(re.findall(r"^\*\*([A-Z]+-\d+): (.+?)\.?\*\*", text, re.MULTILINE))
    return found


def titled(rule: str) -> str:
    """``GM-10 the initial rebalance delay``."""
    title = titles().get(rule)
    return f"{rule} {title}" if title else rule


def rule_for(api: str, error: int | None, request=None) -> str:
    """The rule that decides a response of ``api`` carrying ``error``."""
    if error is not None and error != E.NONE:
        code = E(error) if error in E._value2member_map_ else None
        if (api, code) in _ERROR_RULES:
            return _ERROR_RULES[(api, code)]
        if code in _ANY_API_ERROR_RULES:
            return _ANY_API_ERROR_RULES[code]
    if api == "OffsetCommit" and request is not None and request.generation_id < 0:
        return "GM-51"
    return API_RULES[api]


def errors_in(value) -> list[int]:
    """Every ``error_code`` in a response (as JSON values), in order."""
    found: list[int] = []
    if type(value) is dict or type(value) is list:
        _collect_errors(value, found)
    return found


def _collect_errors(value, found: list[int]) -> None:
    if type(value) is dict:
        for name, item in value.items():
            if name == "error_code":
                found.append(item)
            elif type(item) is dict or type(item) is list:
                _collect_errors(item, found)
        return
    for item in value:
        if type(item) is dict or type(item) is list:
            _collect_errors(item, found)


def first_error(value) -> int | None:
    """The first non-zero error code in a response, else 0 (None: the response has none)."""
    if type(value) is dict or type(value) is list:
        found = _first_error(value)
        return None if found is _NO_CODE else found
    return None


_NO_CODE = object()


def _first_error(value):
    """As :func:`errors_in` walks, stopping at the first non-zero code; else the first code
    (zero), else ``_NO_CODE``: most responses are all zeros, and no list is built for them."""
    first = _NO_CODE
    for name, item in value.items() if type(value) is dict else enumerate(value):
        if name == "error_code":
            if item:
                return item
        elif type(item) is dict or type(item) is list:
            item = _first_error(item)
            if item is _NO_CODE:
                continue
            if item:
                return item
        else:
            continue
        if first is _NO_CODE:
            first = item
    return first


def classify(api: str, request, allowed: dict | None, broker: dict) -> tuple[str, str]:
    """(rule, invariant or "") for a response the reference does not allow; ``allowed`` is the
    nearest response it does allow (None when it would still park the request)."""
    mine = errors_in(allowed) if allowed is not None else []
    theirs = errors_in(broker)
    for expected, got in zip(mine, theirs, strict=False):
        if expected != got:
            refused = E(expected) if expected in E._value2member_map_ else None
            invariant = _ACCEPTED_REFUSAL.get((api, refused), "") if got == E.NONE else ""
            return rule_for(api, expected or got, request), invariant
    if api == "JoinGroup" and allowed is not None and allowed.get("leader") != broker.get("leader"):
        return "GM-15", "LeaderIsMember"
    if (
        api == "JoinGroup"
        and allowed is not None
        and allowed.get("generation_id") != broker.get("generation_id")
    ):
        return "GM-17", ""
    return rule_for(api, first_error(broker), request), ""


class Coverage:
    """A coordinator observer (``GroupCoordinator(observer=…)``) that notes the states a group
    visits and the transitions it takes, by the rules of reference/group/transitions.py."""

    def __init__(self) -> None:
        self.seen: dict[str, str] = {}
        self.states: Counter[str] = Counter()
        self.transitions: Counter[str] = Counter()

    def copy(self) -> Coverage:
        other = Coverage()
        other.seen = dict(self.seen)
        # dict.update: Counter's own copy checks its argument's type the slow way
        dict.update(other.states, self.states)
        dict.update(other.transitions, self.transitions)
        return other

    def before(self, coordinator, event) -> None:
        """A step's changes show in the states after it; but a group loaded again starts
        afresh: what it was before the restart is not a transition."""
        if isinstance(event, LoadGroups):
            self.seen.clear()

    def after(self, coordinator, event, effects) -> None:
        for group_id, group in coordinator.groups.items():
            now = group.state  # a StrEnum: equal to its name, and compared as cheaply
            last = self.seen.get(group_id)
            if last == now:
                continue
            now, last = str(now), last or "Empty"  # a group is created Empty
            self.states[now] += 1
            if last != now:
                previous = str(group.previous_state)
                if previous != last:  # two moves in one step: the first went last -> previous
                    self.states[previous] += 1
                    self._moved(last, previous, None)
                self._moved(previous, now, group.state_cause)
            self.seen[group_id] = now

    def _moved(self, source: str, target: str, cause: str | None) -> None:
        names = _NAMES_BY_MOVE.get((source, target, cause))
        if names is None:
            matches = _TRANSITIONS_BY_MOVE.get((source, target), [])
            exact = [name for name, t in matches if t.cause == cause]
            names = _NAMES_BY_MOVE[(source, target, cause)] = exact or [
                name for name, _ in matches[:1]
            ]
        for name in names:
            self.transitions[name] += 1


# (source, target) -> the transitions between them, with their coverage names, in table order
_TRANSITIONS_BY_MOVE: dict[tuple[str, str], list[tuple[str, Transition]]] = {}
for _t in TRANSITIONS:
    _TRANSITIONS_BY_MOVE.setdefault((str(_t.source), str(_t.target)), []).append(
        (f"{_t.source} -> {_t.target} ({_t.cause}) {_t.rule}", _t)
    )
del _t
# (source, target, cause) -> the coverage names of that move, found once
_NAMES_BY_MOVE: dict[tuple[str, str, str | None], list[str]] = {}
