"""100 librdkafka consumers in one group, from subscribe to Stable (goal: initial rebalance delay + 1 s).

    .venv/bin/python benchmarks/consumers_start.py [--consumers 100] [--initial-rebalance-delay-ms 3000]

One broker (``coordspec broker``) with ``group.initial.rebalance.delay.ms`` as given (3000 by
default, as Kafka), a topic with one partition per consumer. The consumers (confluent-kafka,
classic protocol, range assignor) are created first; the clock starts when they all
subscribe, each polled by its own thread. It stops when DescribeGroups answers Stable with
every consumer a member and every consumer has had its partitions assigned (on_assign).
Printed: that time, the first JoinGroup and the join phase as the broker's trace saw them,
the goal and the ratio.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, TopicPartition

from coordspec.broker.testing import BrokerProcess, Connection

TOPIC, GROUP = "start", "start-group"
CREATE_TOPICS, DESCRIBE_GROUPS = 19, 15


def group_state(connection: Connection) -> tuple[str, int]:
    described = connection.request(
        DESCRIBE_GROUPS, 5, {"groups": [GROUP], "include_authorized_operations": False}
    )
    group = described.groups[0]
    return group.group_state, len(group.members)


def join_phase(trace: Path) -> tuple[float | None, float | None]:
    """When (trace ts, seconds) the first JoinGroup arrived and the first generation's JoinGroup responses went out."""
    first_join = first_answer = None
    for line in trace.read_text().splitlines():
        record = json.loads(line)
        if record.get("group_id") != GROUP or record.get("api") != "JoinGroup":
            continue
        if record["kind"] == "request" and first_join is None:
            first_join = record["ts_ms"] / 1000
        if (
            record["kind"] == "response"
            and record["fields"].get("generation_id", -1) >= 1
            and first_answer is None
        ):
            first_answer = record["ts_ms"] / 1000
    return first_join, first_answer


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--consumers", type=int, default=100)
    parser.add_argument("--initial-rebalance-delay-ms", type=int, default=3000)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    goal_s = args.initial_rebalance_delay_ms / 1000 + 1
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(prefix="consumers-start-") as tmp:
        data = Path(tmp) / "data"
        with BrokerProcess(
            data,
            "--broker-config",
            f"group.initial.rebalance.delay.ms={args.initial_rebalance_delay_ms}",
        ) as broker:
            admin = Connection(broker.host, broker.port)
            created = admin.request(
                CREATE_TOPICS,
                7,
                {
                    "topics": [
                        {"name": TOPIC, "num_partitions": args.consumers, "replication_factor": 1}
                    ],
                    "timeout": 10000,
                },
            )
            assert created.topics[0].error_code == 0, created
            consumers = [
                Consumer(
                    {
                        "bootstrap.servers": broker.bootstrap,
                        "group.id": GROUP,
                        "client.id": f"c{i}",
                        "enable.auto.commit": False,
                        "log_level": 3,
                    }
                )
                for i in range(args.consumers)
            ]
            assigned: dict[int, float] = {}
            stop = threading.Event()

            def run(i: int, consumer: Consumer) -> None:
                def on_assign(_: Consumer, partitions: list[TopicPartition]) -> None:
                    if partitions:
                        assigned.setdefault(i, time.monotonic())

                consumer.subscribe([TOPIC], on_assign=on_assign)
                while not stop.is_set():
                    consumer.poll(0.1)

            threads = [
                threading.Thread(target=run, args=(i, c), daemon=True)
                for i, c in enumerate(consumers)
            ]
            started = time.monotonic()
            started_wall = time.time()
            for thread in threads:
                thread.start()
            stable_at = None
            state = ("", 0)
            while time.monotonic() - started < args.timeout:
                state = group_state(admin)
                if stable_at is None and state == ("Stable", args.consumers):
                    stable_at = time.monotonic()
                if stable_at is not None and len(assigned) == args.consumers:
                    break
                time.sleep(0.02)
            done = time.monotonic()
            stop.set()
            for thread in threads:
                thread.join()
            for consumer in consumers:
                consumer.close()
            admin.close()
        first_join, first_answer = join_phase(data / "trace.jsonl")
    if stable_at is None or len(assigned) < args.consumers:
        print(
            f"not Stable within {args.timeout:g} s: last state {state}, {len(assigned)} consumers assigned"
        )
        return 1
    elapsed = max(done, max(assigned.values())) - started
    print(
        f"{args.consumers} consumers, initial rebalance delay {args.initial_rebalance_delay_ms} ms, load average {load_before:.2f} before"
    )
    print(
        f"subscribe -> Stable with {args.consumers} members and every consumer assigned: {elapsed:.2f} s   goal {goal_s:g} s   "
        f"ratio {elapsed / goal_s:.2f}   (DescribeGroups Stable after {stable_at - started:.2f} s)"
    )
    if first_join is not None and first_answer is not None:
        print(
            f"broker trace: first JoinGroup {first_join - started_wall:.2f} s after subscribe, join phase "
            f"{first_answer - first_join:.2f} s (the initial delay, extended while members kept arriving), "
            f"then {started_wall + elapsed - first_answer:.2f} s to Stable and assigned"
        )
    print(f"load average after: {os.getloadavg()[0]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
