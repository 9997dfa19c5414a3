"""How much a divergence matters: its severity class (spec/divergences.md defines
them; this module is the one place that decides them).

Most severe first. A divergence's class comes from what differs: a response that cannot
be decoded or a broken connection is ``wire``; a request never answered is ``liveness``; an
answer at the wrong time is ``timing``; a refusal Kafka makes that the broker skips, where
skipping it lets a stale member act or loses data, is ``safety``; a field that clients
ignore is ``cosmetic``; anything else (a wrong error code, state or value) is ``protocol``.
"""

from __future__ import annotations

SEVERITIES = {
    "wire": "the response cannot be decoded, or the connection breaks",
    "safety": "a stale generation or zombie is accepted, a live group is deleted, a committed "
    "offset is lost or resurrected, or a partition gets two owners",
    "liveness": "a request is never answered",
    "protocol": "a wrong error code, state or value",
    "timing": "an answer earlier or later than Kafka gives it",
    "cosmetic": "a field that clients ignore",
}
ORDER = {name: rank for rank, name in enumerate(SEVERITIES)}

# Refusals whose absence is unsafe: (API, the error Kafka answers) -> what accepting breaks.
_FENCES_A_MEMBER = ("ILLEGAL_GENERATION", "UNKNOWN_MEMBER_ID", "FENCED_INSTANCE_ID")
_UNSAFE_ACCEPTANCE = {
    **{
        ("OffsetCommit", e): "a commit from a stale generation or a zombie is accepted"
        for e in (*_FENCES_A_MEMBER, "REBALANCE_IN_PROGRESS")
    },
    **{
        (
            "TxnOffsetCommit",
            e,
        ): "a transaction's commit from a stale generation or a zombie is accepted"
        for e in _FENCES_A_MEMBER
    },
    **{
        ("Heartbeat", e): "a stale generation or a zombie is told it still belongs"
        for e in _FENCES_A_MEMBER
    },
    **{
        ("SyncGroup", e): "a stale generation or a zombie is handed an assignment"
        for e in _FENCES_A_MEMBER
    },
    ("JoinGroup", "FENCED_INSTANCE_ID"): "a zombie takes over a static member's place",
    ("DeleteGroups", "NON_EMPTY_GROUP"): "a live group is deleted",
    ("OffsetDelete", "NON_EMPTY_GROUP"): "offsets a live group uses are deleted",
    ("OffsetDelete", "GROUP_SUBSCRIBED_TO_TOPIC"): "offsets a live group uses are deleted",
}
# Fields whose value matters to nobody's state: (API, field) -> why clients ignore it.
_COSMETIC = {
    ("JoinGroup", "protocol_type"): "clients read the protocol only from a successful join",
    ("JoinGroup", "protocol_name"): "clients read the protocol only from a successful join",
    ("*", "throttle_time_ms"): "clients only back off on it",
}


def classify(
    kind: str, api: str | None, field: str, expected: str, got: str, error_code: int | None
) -> tuple[str, str]:
    """(severity, why) of a divergence: ``kind`` as :mod:`divergences` names it, the ``field``
    that differs, what was ``expected`` and ``got`` (error codes as ``NAME (n)``), and the
    broker's top-level ``error_code``."""
    if kind in ("undecodable", "connection", "target"):
        return "wire", SEVERITIES["wire"]
    if kind == "never answered":
        return "liveness", SEVERITIES["liveness"]
    if kind in ("answered late", "answered early"):
        return "timing", SEVERITIES["timing"]
    leaf = field.rsplit(".", 1)[-1]
    cosmetic = _COSMETIC.get((api or "", leaf)) or _COSMETIC.get(("*", leaf))
    if cosmetic and (leaf == "throttle_time_ms" or error_code not in (None, 0)):
        return "cosmetic", cosmetic
    if leaf == "error_code" and got.startswith("NONE "):
        unsafe = _UNSAFE_ACCEPTANCE.get((api or "", expected.split(" ")[0]))
        if unsafe:
            return "safety", unsafe
    if api == "OffsetFetch" and leaf == "committed_offset":
        return "safety", "a committed offset is lost or resurrected"
    if api == "SyncGroup" and leaf == "assignment":
        return "safety", "a member is handed an assignment its leader did not give it"
    return "protocol", SEVERITIES["protocol"]
