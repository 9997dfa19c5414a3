"""The group driver's timer (coordspec.broker.group_driver), on both brokers.

The earliest deadline wins and nothing but the coordinator's own steps moves it. A cluster
broker once re-armed one shared timer on every replication event, at least 50 ms ahead, so
on a busy broker a JoinGroup due after the initial rebalance delay waited for minutes.
"""

from __future__ import annotations

import asyncio
from pathlib import Path

from coordspec.broker.cluster.node import ClusterNode, NodeConfig
from coordspec.broker.group_driver import GroupDriver
from coordspec.reference.errors import ErrorCode
from coordspec.reference.failover.events import BecomeCoordinator, LoadGroup
from coordspec.reference.group import GroupConfig, JoinGroup, Protocol, Tick
from coordspec.reference.group.records import GroupMetadataKey, GroupMetadataValue, Record
from coordspec.reference.replication.events import BrokerTick

DELAY_MS = 300  # group.initial.rebalance.delay.ms
SLACK_S = 0.25  # a loaded test machine's scheduling


def test_a_cluster_brokers_group_timer_fires_on_time_while_replication_events_arrive(
    tmp_path: Path,
) -> None:
    async def scenario() -> float:
        loop = asyncio.get_running_loop()
        config = NodeConfig(
            1,
            {1: ("127.0.0.1", 1)},
            "127.0.0.1:1",  # never dialled: the node is not started
            tmp_path,
            offsets_partitions=1,
            group=GroupConfig(initial_rebalance_delay_ms=DELAY_MS),
        )
        node = ClusterNode(config)
        # The host coordinates an empty group "g" (so the JoinGroup writes nothing before
        # its answer); the node's replica leads nothing, so the write after it fails.
        empty = Record(GroupMetadataKey("g"), GroupMetadataValue("", 0, None, None, 0, ()))
        node.host.handle(BecomeCoordinator(0, 0, node.now()))
        node.host.handle(LoadGroup(0, 0, ((empty,),), 1, node.now()))
        started = loop.time()
        join = loop.create_task(
            node.call(
                "c@127.0.0.1:1",
                lambda rid, now: JoinGroup(
                    rid, 3, now, group_id="g", protocols=(Protocol("range", b""),)
                ),
            )
        )
        while not join.done() and loop.time() - started < DELAY_MS / 1000 + 3:
            node.replicate(BrokerTick(node.now()))  # a replication event every 5 ms
            await asyncio.sleep(0.005)
        answered = loop.time() - started
        assert join.done(), "the JoinGroup was not answered while replication kept busy"
        assert join.result().error_code == ErrorCode.NONE
        await node.stop()
        return answered

    answered = asyncio.run(scenario())
    assert DELAY_MS / 1000 <= answered + 0.01 < DELAY_MS / 1000 + SLACK_S


def test_the_earliest_deadline_wins_and_later_ones_do_not_move_it() -> None:
    async def scenario() -> list[int]:
        loop = asyncio.get_running_loop()
        start_ms = int(loop.time() * 1000)
        deadlines = [start_ms + 100]
        ticks: list[int] = []

        def now_ms() -> int:
            return int(loop.time() * 1000)

        def step(event: object) -> None:
            if isinstance(event, Tick):
                ticks.append(event.now_ms - start_ms)
                deadlines.pop(0)
            driver.arm_timer()

        driver = GroupDriver(step, lambda: deadlines[0] if deadlines else None, now_ms, None)
        driver.start()
        for _ in range(10):  # steps that only push the next deadline later (heartbeats)
            await asyncio.sleep(0.005)
            deadlines.append(deadlines[-1] + 100)
            driver.arm_timer()
        await asyncio.sleep(0.15)
        driver.stop()
        return ticks

    ticks = asyncio.run(scenario())
    assert ticks and 100 <= ticks[0] < 100 + SLACK_S * 1000
