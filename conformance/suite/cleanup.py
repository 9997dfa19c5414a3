"""What a run leaves on a broker it does not own: none of its groups, and the topics it
created only when not asked to delete them (``--delete-topics``).

Best effort, after the run: each broker lists the groups it coordinates (ListGroups); the
run's groups lose their members (LeaveGroup v3+, as Kafka's AdminClient
removeMembersFromConsumerGroup does: members stay until their sessions expire otherwise,
and Kafka deletes only empty groups) and are deleted (DeleteGroups). Each step gives a
summary line, never an exception.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable

from coordspec.conformance.security import ClientSecurity
from coordspec.conformance.suite.kafka_wire import Connection, WireError
from coordspec.reference.errors import ErrorCode

LEAVE_GROUP, LIST_GROUPS, DESCRIBE_GROUPS, DELETE_TOPICS, DELETE_GROUPS = 13, 16, 15, 20, 42
_SETTLE_S = 5.0  # a group whose last member left may still be finishing its rebalance
_NOT_FOUND = int(ErrorCode.GROUP_ID_NOT_FOUND)


async def delete_groups(
    brokers: list[tuple[str, int]],
    ours: Callable[[str], bool],
    timeout_s: float,
    security: ClientSecurity,
) -> str:
    """Delete the groups ``ours`` accepts from every broker; the summary line."""
    try:
        counts = await asyncio.gather(*(_clean(b, ours, timeout_s, security) for b in brokers))
    except WireError as exc:
        return f"the run's groups are left on the broker: {exc}"
    deleted = sum(c[0] for c in counts)
    left = [why for c in counts for why in c[1]]
    if not left:
        return f"deleted {deleted} group{'s' if deleted != 1 else ''}"
    return f"deleted {deleted} groups; left {len(left)}: {left[0]}"


async def _clean(
    broker: tuple[str, int],
    ours: Callable[[str], bool],
    timeout_s: float,
    security: ClientSecurity,
) -> tuple[int, list[str]]:
    connection = await Connection.open(*broker, timeout_s, security)
    try:
        versions = connection.versions
        if DELETE_GROUPS not in versions or LIST_GROUPS not in versions:
            return 0, [f"{connection.address} does not serve DeleteGroups and ListGroups"]
        listed = await connection.call(
            LIST_GROUPS, min(versions[LIST_GROUPS].stop - 1, 4), {}, timeout_s
        )
        groups = [g.group_id for g in listed.groups if ours(g.group_id)]
        if not groups:
            return 0, []
        await _remove_members(connection, groups, timeout_s)
        return await _delete(connection, groups, timeout_s)
    finally:
        await connection.close()


async def _remove_members(connection: Connection, groups: list[str], timeout_s: float) -> None:
    versions = connection.versions
    if DESCRIBE_GROUPS not in versions or versions.get(LEAVE_GROUP, range(0)).stop <= 3:
        return  # no batch LeaveGroup: the members go when their sessions expire
    described = await connection.call(
        DESCRIBE_GROUPS, min(versions[DESCRIBE_GROUPS].stop - 1, 5), {"groups": groups}, timeout_s
    )
    version = min(versions[LEAVE_GROUP].stop - 1, 5)
    await asyncio.gather(
        *(
            connection.call(
                LEAVE_GROUP,
                version,
                {
                    "group_id": g.group_id,
                    "members": [
                        {"member_id": m.member_id, "group_instance_id": m.group_instance_id}
                        for m in g.members
                    ],
                },
                timeout_s,
            )
            for g in described.groups
            if g.members
        )
    )


async def _delete(
    connection: Connection, groups: list[str], timeout_s: float
) -> tuple[int, list[str]]:
    version = min(connection.versions[DELETE_GROUPS].stop - 1, 2)
    deleted, deadline = 0, time.monotonic() + _SETTLE_S
    while True:
        answer = await connection.call(DELETE_GROUPS, version, {"groups_names": groups}, timeout_s)
        deleted += sum(int(r.error_code) == 0 for r in answer.results)
        failed = {r.group_id: int(r.error_code) for r in answer.results}
        groups = [g for g, code in failed.items() if code not in (0, _NOT_FOUND)]
        if not groups or time.monotonic() >= deadline:
            break
        await asyncio.sleep(0.2)
    return deleted, [f"{g}: {_name(failed[g])}" for g in groups]


async def delete_topics(
    controller: tuple[str, int], topics: list[str], timeout_s: float, security: ClientSecurity
) -> str:
    """Delete ``topics`` (the run created them); the summary line."""
    try:
        connection = await Connection.open(*controller, timeout_s, security)
    except WireError as exc:
        return f"topics {', '.join(topics)} are left: {exc}"
    try:
        if DELETE_TOPICS not in connection.versions:
            return f"topics {', '.join(topics)} are left: the broker does not serve DeleteTopics"
        version = min(connection.versions[DELETE_TOPICS].stop - 1, 5)
        values = {"topic_names": topics, "timeout": int(timeout_s * 1000)}
        answer = await connection.call(DELETE_TOPICS, version, values, timeout_s)
    except WireError as exc:
        return f"topics {', '.join(topics)} are left: {exc}"
    finally:
        await connection.close()
    left = [f"{r.name}: {_name(int(r.error_code))}" for r in answer.responses if r.error_code]
    if left:
        return f"topics left: {', '.join(left)}"
    return f"deleted topics {', '.join(topics)}"


def _name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return f"error {code}"
