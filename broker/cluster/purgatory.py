"""Where an admin request waits for the cluster to catch up, as Kafka's purgatories hold
DeleteTopics and CreatePartitions: until the published metadata shows the change, or until
the request's timeout."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

POLL_S = 0.02  # how often the published metadata is looked at again


async def wait_until(done: Callable[[], bool], timeout_ms: int) -> None:
    """Return once ``done()`` holds or ``timeout_ms`` has passed; the caller asks ``done`` again."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout_ms / 1000
    while not done() and loop.time() < deadline:
        await asyncio.sleep(POLL_S)
