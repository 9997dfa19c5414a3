"""What the broker answers while it does not serve the group: the scenario steps
``coordinator: ResignCoordinator`` and ``BecomeCoordinator`` (CF-2, CF-5, CF-7).

The reference target and the oracle follow one GroupCoordinator, the group's coordinator.
From a resignation until ``LoadGroup`` the broker answers from its coordinator host instead,
as Kafka 4.0's CoordinatorRuntime does: a reference
:class:`~coordspec.reference.failover.host.CoordinatorHost` whose only offsets partition,
the group's, it does not lead (NOT_COORDINATOR) or is loading (COORDINATOR_LOAD_IN_PROGRESS).
"""

from __future__ import annotations

import dataclasses

from coordspec.reference.failover.events import BecomeCoordinator
from coordspec.reference.failover.host import CoordinatorHost
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.effects import Reply
from coordspec.reference.group.requests import Request
from coordspec.reference.group.responses import Response


class Unserved:
    def __init__(self, config: GroupConfig, now_ms: int, *, loading: bool) -> None:
        self.host = CoordinatorHost(0, offsets_partitions=1, config=config, now_ms=now_ms)
        if loading:
            self.host.handle(BecomeCoordinator(0, 0, now_ms))

    def answer(self, request: Request) -> Response:
        """The host's answer, at once: it holds no group to wait on."""
        at = max(request.now_ms, self.host.now_ms)
        (reply,) = self.host.handle(dataclasses.replace(request, now_ms=at))
        assert isinstance(reply, Reply)
        return reply.response
