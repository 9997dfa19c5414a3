"""Producer ids unique across the cluster, from blocks reserved in ZooKeeper.

As Kafka's ZooKeeper-mode producer id manager: a broker hands out the ids of a block of
1000 it reserved by rewriting ``/latest_producer_id_block``. It reads the node's data and
version, writes the block after the one it read (the first block starts at 0) with that
version, and starts over when another broker wrote in between (BadVersion) or created the
node first. The node holds Kafka's JSON, both ends inclusive and written as strings::

    {"version": 1, "broker": 2, "block_start": "1000", "block_end": "1999"}

Kafka creates the node empty when a broker first starts; here a broker creates it with its
first block, and an empty node is read as "no block yet". A block is never handed out
twice, so ids are never reused across brokers or restarts (a restarted broker reserves a
new block; the rest of its old one is skipped, as in Kafka).
"""

from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass

from kazoo.client import KazooClient
from kazoo.exceptions import BadVersionError, NodeExistsError, NoNodeError

PATH = "/latest_producer_id_block"
BLOCK_SIZE = 1000
ZOOKEEPER_TIMEOUT_S = 5.0  # each ZooKeeper call; InitProducerId fails (retriably) past it


class ProducerIdsUnavailable(Exception):
    """ZooKeeper did not answer a block reservation in time; one line."""


@dataclass(frozen=True, slots=True)
class ProducerIdBlock:
    broker: int
    first: int
    last: int  # inclusive

    def encode(self) -> bytes:
        return json.dumps(
            {
                "version": 1,
                "broker": self.broker,
                "block_start": str(self.first),
                "block_end": str(self.last),
            }
        ).encode()

    @staticmethod
    def decode(data: bytes) -> ProducerIdBlock:
        node = json.loads(data)
        return ProducerIdBlock(
            int(node["broker"]), int(node["block_start"]), int(node["block_end"])
        )


def reserve_block(
    client: KazooClient, broker_id: int, timeout_s: float = ZOOKEEPER_TIMEOUT_S
) -> ProducerIdBlock:
    """The next block of ids, written to ZooKeeper as this broker's (blocking: run it off the loop)."""
    while True:
        try:
            data, stat = client.get_async(PATH).get(timeout=timeout_s)
        except NoNodeError:
            data, stat = None, None
        first = ProducerIdBlock.decode(data).last + 1 if data else 0
        block = ProducerIdBlock(broker_id, first, first + BLOCK_SIZE - 1)
        try:
            if stat is None:
                client.create_async(PATH, block.encode()).get(timeout=timeout_s)
            else:
                client.set_async(PATH, block.encode(), stat.version).get(timeout=timeout_s)
        except (BadVersionError, NodeExistsError):
            continue  # another broker reserved a block meanwhile: read again
        return block


class ProducerIds:
    """One broker's allocator: ids from its current block, a new block when it runs out."""

    def __init__(self) -> None:
        self._block: ProducerIdBlock | None = None
        self._next = 0
        self._lock = asyncio.Lock()  # one reservation at a time

    async def allocate(self, client: KazooClient, broker_id: int) -> int:
        async with self._lock:
            if self._block is None or self._next > self._block.last:
                try:
                    self._block = await asyncio.to_thread(reserve_block, client, broker_id)
                except Exception as e:  # noqa: BLE001 - kazoo's timeouts and lost connections
                    raise ProducerIdsUnavailable(
                        f"cannot reserve producer ids in ZooKeeper: {e or type(e).__name__}"
                    ) from None
                self._next = self._block.first
            self._next += 1
            return self._next - 1
