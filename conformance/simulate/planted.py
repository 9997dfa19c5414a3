"""Brokers with a bug planted, to show that a trace check catches it: the reference with a
rewrite of what clients hear (as tests/conformance/test_conformance_oracle.py builds broken brokers).

Each bug is ``rewrite(request, response) -> response`` and names the rule it breaks.
``PlantedTarget`` serves the conformance runner; the simulator applies the same rewrites.
"""

from __future__ import annotations

import dataclasses

from coordspec.conformance.suite.reference_target import ReferenceTarget
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.responses import (
    HeartbeatResponse,
    JoinGroupResponse,
    OffsetCommitResponse,
)


def every_partition_none(response):
    """``response`` (per-topic, per-partition errors) with every partition answered NONE."""
    return dataclasses.replace(
        response,
        topics=tuple(
            dataclasses.replace(
                t,
                partitions=tuple(
                    dataclasses.replace(p, error_code=ErrorCode.NONE) for p in t.partitions
                ),
            )
            for t in response.topics
        ),
    )


def accepts_stale_commits(request, response):
    """Every commit succeeds, from whatever generation (breaks GM-50, NoStaleGenerationCommit)."""
    if isinstance(response, OffsetCommitResponse):
        return every_partition_none(response)
    return response


def heartbeat_ignores_rebalance(request, response):
    """Heartbeats never say a rebalance is on (breaks GM-30): members miss rebalances."""
    if (
        isinstance(response, HeartbeatResponse)
        and response.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    ):
        return HeartbeatResponse(ErrorCode.NONE)
    return response


def generation_not_bumped(request, response):
    """JoinGroup answers one generation too low after the first (breaks GM-17)."""
    if isinstance(response, JoinGroupResponse) and response.generation_id > 1:
        return dataclasses.replace(response, generation_id=response.generation_id - 1)
    return response


BUGS = {
    "stale-commit": (accepts_stale_commits, "GM-50"),
    "heartbeat-ignores-rebalance": (heartbeat_ignores_rebalance, "GM-30"),
    "generation-not-bumped": (generation_not_bumped, "GM-17"),
}


class PlantedTarget(ReferenceTarget):
    """The reference target, with ``bug`` (a name in BUGS) in what its clients hear."""

    def __init__(self, bug: str, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.name = f"planted-{bug}"
        self.rewrite = BUGS[bug][0]

    async def open(self, group_id, config, **options):
        return _Rewriting(await super().open(group_id, config, **options), self.rewrite)


class _Rewriting:
    def __init__(self, inner, rewrite) -> None:
        self.inner, self.rewrite, self.sent = inner, rewrite, {}
        self.faults = inner.faults

    def now_ms(self) -> int:
        return self.inner.now_ms()

    async def send(self, client, request) -> None:
        self.sent[client] = request
        await self.inner.send(client, request)

    async def receive(self, client, within_ms):
        got = await self.inner.receive(client, within_ms)
        return None if got is None else (self.rewrite(self.sent[client], got[0]), got[1])

    async def sleep(self, ms) -> None:
        await self.inner.sleep(ms)

    async def close(self) -> None:
        await self.inner.close()
