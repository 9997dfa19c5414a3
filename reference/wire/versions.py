"""Where a field first appears in a group API's request, per version. Without kio, so the
conformance suite's reference target needs no codec."""

from __future__ import annotations

# The first version whose request carries group_instance_id (LeaveGroup: in its members).
INSTANCE_ID_SINCE: dict[str, int] = {
    "JoinGroup": 5,
    "SyncGroup": 3,
    "Heartbeat": 3,
    "LeaveGroup": 3,
    "OffsetCommit": 7,
    "TxnOffsetCommit": 3,  # with member_id and generation_id (KIP-447)
}
