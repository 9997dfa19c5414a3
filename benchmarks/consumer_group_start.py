"""100 librdkafka consumers from subscribe to all assigned: KIP-848 consumer group against classic.

    .venv/bin/python benchmarks/consumer_group_start.py [--consumers 100] [--rounds 2]

One broker (``coordspec broker``, Kafka's group defaults: a classic group's initial rebalance
delay of 3 s, a consumer group's heartbeat interval of 5 s). Each round runs both protocols
side by side, one after the other in alternating order, each on a topic of its own with one
partition per consumer: the consumers (confluent-kafka; ``group.protocol=consumer`` with the
coordinator's uniform assignor, or the classic protocol with range) are created first, the
clock starts when they all subscribe, each polled by its own thread, and stops when every
consumer holds exactly one partition and together they hold them all (from the assign and
revoke callbacks). Printed: each protocol's time per round, the medians and their ratio.
**Goal (issue 20): the consumer group takes at most the classic group's time.**
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Consumer, TopicPartition

from coordspec.broker.testing import BrokerProcess, Connection

CREATE_TOPICS = 19
PROTOCOLS = {
    "consumer": {"group.protocol": "consumer"},
    "classic": {"group.protocol": "classic", "session.timeout.ms": 10000},
}


def create_topic(admin: Connection, topic: str, partitions: int) -> None:
    created = admin.request(
        CREATE_TOPICS,
        7,
        {
            "topics": [{"name": topic, "num_partitions": partitions, "replication_factor": 1}],
            "timeout": 10000,
        },
    )
    assert created.topics[0].error_code == 0, created


def start(bootstrap: str, protocol: str, topic: str, count: int, timeout_s: float) -> float | None:
    """Seconds from subscribe until each of ``count`` consumers holds one partition of
    ``topic`` and they hold all; None past ``timeout_s``."""
    consumers = [
        Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": f"{topic}-group",
                "client.id": f"c{i}",
                "enable.auto.commit": False,
                "log_level": 3,
                **PROTOCOLS[protocol],
            }
        )
        for i in range(count)
    ]
    held: list[set[int]] = [set() for _ in range(count)]
    lock, stop = threading.Lock(), threading.Event()

    def run(i: int, consumer: Consumer) -> None:
        def on_assign(c: Consumer, partitions: list[TopicPartition]) -> None:
            with lock:
                if protocol == "classic":
                    held[i] = {p.partition for p in partitions}  # eager: the whole assignment
                else:
                    held[i] |= {p.partition for p in partitions}  # incremental

        def on_revoke(c: Consumer, partitions: list[TopicPartition]) -> None:
            with lock:
                held[i] -= {p.partition for p in partitions}

        consumer.subscribe([topic], on_assign=on_assign, on_revoke=on_revoke)
        while not stop.is_set():
            consumer.poll(0.05)

    threads = [
        threading.Thread(target=run, args=(i, c), daemon=True) for i, c in enumerate(consumers)
    ]
    started = time.monotonic()
    for thread in threads:
        thread.start()
    elapsed = None
    while time.monotonic() - started < timeout_s:
        with lock:
            done = all(len(h) == 1 for h in held) and set().union(*held) == set(range(count))
        if done:
            elapsed = time.monotonic() - started
            break
        time.sleep(0.02)
    stop.set()
    for thread in threads:
        thread.join()
    for consumer in consumers:
        consumer.close()
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--consumers", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--timeout", type=float, default=120.0)
    args = parser.parse_args()
    print(f"{args.consumers} consumers, load average {os.getloadavg()[0]:.2f} before")
    times: dict[str, list[float]] = {p: [] for p in PROTOCOLS}
    with (
        tempfile.TemporaryDirectory(prefix="consumer-group-start-") as tmp,
        BrokerProcess(Path(tmp) / "data") as broker,
    ):
        admin = Connection(broker.host, broker.port)
        for round_ in range(args.rounds):
            order = list(PROTOCOLS) if round_ % 2 == 0 else list(reversed(PROTOCOLS))
            for protocol in order:
                topic = f"{protocol}-{round_}"
                create_topic(admin, topic, args.consumers)
                elapsed = start(broker.bootstrap, protocol, topic, args.consumers, args.timeout)
                if elapsed is None:
                    print(f"round {round_ + 1} {protocol}: not all assigned in {args.timeout:g} s")
                    return 1
                times[protocol].append(elapsed)
                print(f"round {round_ + 1} {protocol:8}: {elapsed:6.2f} s")
        admin.close()
    consumer, classic = (statistics.median(times[p]) for p in ("consumer", "classic"))
    verdict = "met" if consumer <= classic else "not met"
    print(
        f"median subscribe -> all assigned: consumer group {consumer:.2f} s, classic {classic:.2f} s, "
        f"ratio {consumer / classic:.2f} (goal <= 1: {verdict}); load average after "
        f"{os.getloadavg()[0]:.2f}"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
