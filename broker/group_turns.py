"""Each group's requests take turns with its writes, on the single broker and in the cluster.

While a group has a write in flight, its next requests wait for it, in arrival order; an
OffsetCommit behind commits only is the exception (commits do not change what a commit is
checked against). So the coordinator sees each request of a group after that group's
earlier writes completed, as in a replay of the broker's trace, whose reference completes
every write at once; without it a request that slips in front of a pending write (a
JoinGroup while the leader's SyncGroup is being written) gets an answer the replay cannot
place.

    turns = GroupTurns()
    if await turns.wait(group_id, request):   # it waited: stamp it again with the time now
        ...
    try: run the request
    finally: turns.ran(group_id)              # the next one may go, if the writes allow
    turns.writing(group_id, commits_only)     # a write of the group's records began
    turns.written(group_id, commits_only)     # ... and ended, either way
"""

from __future__ import annotations

import asyncio
from collections import deque
from dataclasses import dataclass
from typing import Any

from coordspec.reference.group import OffsetCommit
from coordspec.reference.group.records import (
    CONSUMER_GROUP_KEYS,
    EndTransactionMarker,
    GroupMetadataKey,
    Record,
)


def commits_only(records: tuple[Record, ...]) -> bool:
    """A write no group's metadata is in (classic or consumer group): commits, markers."""
    return not any(isinstance(r.key, (GroupMetadataKey, *CONSUMER_GROUP_KEYS)) for r in records)


def groups_of(records: tuple[Record, ...]) -> set[str]:
    """The groups whose records these are (a transaction marker names none)."""
    return {
        r.key.group_id if isinstance(r.key, CONSUMER_GROUP_KEYS) else r.key.group
        for r in records
        if not isinstance(r.key, EndTransactionMarker)
    }


@dataclass
class _Unwritten:
    """A group's writes in flight."""

    commits: int = 0
    others: int = 0  # group metadata and tombstones


@dataclass
class _Held:
    request: Any
    turn: asyncio.Future


class GroupTurns:
    def __init__(self) -> None:
        self._unwritten: dict[str, _Unwritten] = {}
        self._held: dict[
            str, deque[_Held]
        ] = {}  # group id -> requests waiting for its writes, in order

    async def wait(self, group_id: str, request: Any) -> bool:
        """Wait until ``request`` may run; True if it had to wait."""
        if group_id not in self._held and not self._must_wait(group_id, request):
            return False
        queue = self._held.setdefault(group_id, deque())
        held = _Held(request, asyncio.get_running_loop().create_future())
        queue.append(held)
        try:
            await held.turn
        except BaseException:  # its connection went while it waited: the next may go in its place
            self._leave(group_id, held)
            self.ran(group_id)
            raise
        self._leave(group_id, held)  # the caller passes the turn on once its request ran
        return True

    def ran(self, group_id: str) -> None:
        """Let the first request waiting for ``group_id`` go once the group's writes allow it."""
        queue = self._held.get(group_id)
        if queue and not queue[0].turn.done() and not self._must_wait(group_id, queue[0].request):
            queue[0].turn.set_result(None)

    def writing(self, group_id: str, commits_only: bool) -> None:
        unwritten = self._unwritten.setdefault(group_id, _Unwritten())
        if commits_only:
            unwritten.commits += 1
        else:
            unwritten.others += 1

    def written(self, group_id: str, commits_only: bool) -> None:
        unwritten = self._unwritten[group_id]
        if commits_only:
            unwritten.commits -= 1
        else:
            unwritten.others -= 1
        if unwritten.commits == unwritten.others == 0:
            del self._unwritten[group_id]
        self.ran(group_id)

    def _must_wait(self, group_id: str, request: Any) -> bool:
        unwritten = self._unwritten.get(group_id)
        if unwritten is None:
            return False
        return unwritten.others > 0 or not isinstance(request, OffsetCommit)

    def _leave(self, group_id: str, held: _Held) -> None:
        queue = self._held[group_id]
        queue.remove(held)
        if not queue:
            del self._held[group_id]
