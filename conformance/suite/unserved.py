"""What the broker answers while it does not serve the group: the scenario steps
``coordinator: ResignCoordinator`` and ``BecomeCoordinator`` (CF-2, CF-5, CF-7).

The reference target and the oracle follow one GroupCoordinator, the group's coordinator.
From a resignation until ``LoadGroup`` the broker answers from its coordinator host instead,
as Kafka 4.0's CoordinatorRuntime does: a reference
:class:`~coordspec.reference.failover.host.CoordinatorHost` whose only offsets partition,
the group's, it does not lead (NOT_COORDINATOR) or is loading (COORDINATOR_LOAD_IN_PROGRESS).
Partitions that do not exist are answered first, by the request layer (GM-56), as when the
group is served.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping

from coordspec.reference.failover.events import BecomeCoordinator
from coordspec.reference.failover.host import CoordinatorHost
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.effects import Reply
from coordspec.reference.group.requests import Request
from coordspec.reference.group.responses import Response
from coordspec.reference.group.topics import Refused, merged, reaching_coordinator


class Unserved:
    def __init__(
        self,
        config: GroupConfig,
        now_ms: int,
        *,
        loading: bool,
        topics: Mapping[str, int] | None = None,
    ) -> None:
        """``topics``: the broker's, when known (as GroupCoordinator's)."""
        self.topics = topics
        self.host = CoordinatorHost(0, offsets_partitions=1, config=config, now_ms=now_ms)
        if loading:
            self.host.handle(BecomeCoordinator(0, 0, now_ms))

    def answer(self, request: Request) -> Response:
        """The host's answer, at once: it holds no group to wait on."""
        request = dataclasses.replace(request, now_ms=max(request.now_ms, self.host.now_ms))
        refused: Refused = ()
        if self.topics is not None:
            kept, refused, answer = reaching_coordinator(request, self.topics)
            if kept is None:
                assert answer is not None
                return answer
            request = kept
        (reply,) = self.host.handle(request)
        assert isinstance(reply, Reply)
        return merged(refused, reply.response) if refused else reply.response
