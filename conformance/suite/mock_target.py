"""The ``librdkafka-mock`` target: librdkafka's built-in mock cluster, checked over the wire.

confluent-kafka starts the mock cluster when a client is made with
``test.mock.num.brokers``; it lives as long as that client. A child process
(``python -m coordspec.conformance.suite.mock_target``) makes one, prints the mock brokers' addresses
from the client's metadata, and waits until its stdin closes (the parent stopped or died)
or it is terminated. The kafka target then checks the first broker as any other.

The mock is a lenient fake, not Kafka: a run lists its divergences from Kafka.
"""

from __future__ import annotations

import atexit
import os
import selectors
import subprocess
import sys
import time
from pathlib import Path

from coordspec.conformance.suite.kafka_target import KafkaTarget
from coordspec.conformance.suite.target import TargetError
from coordspec.reference.group.config import GroupConfig

BROKERS = 3  # more than one, so that FindCoordinator routing matters
_START_TIMEOUT_S = 30.0


class MockCluster:
    def __init__(self, brokers: int = BROKERS) -> None:
        self.brokers = brokers
        self.process: subprocess.Popen | None = None
        self.addresses: list[str] = []
        atexit.register(self.stop)

    def start(self) -> MockCluster:
        self.process = subprocess.Popen(
            [sys.executable, "-m", "coordspec.conformance.suite.mock_target", str(self.brokers)],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            cwd=Path(__file__).resolve().parents[2],
        )
        line = self._first_line()
        if not line.startswith("mock brokers "):
            self.stop()
            raise TargetError(f"librdkafka's mock cluster did not start: {line or 'no output'}")
        self.addresses = line.removeprefix("mock brokers ").split(",")
        return self

    def _first_line(self) -> str:
        assert self.process is not None and self.process.stdout is not None
        seen = b""
        deadline = time.monotonic() + _START_TIMEOUT_S
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            while b"\n" not in seen and time.monotonic() < deadline and self.process.poll() is None:
                if selector.select(0.1):
                    seen += os.read(self.process.stdout.fileno(), 4096)
        return seen.decode(errors="replace").split("\n")[0].strip()

    def stop(self) -> None:
        process, self.process = self.process, None
        if process is None:
            return
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def start_mock(brokers: int = BROKERS, config: GroupConfig | None = None) -> KafkaTarget:
    """``config``: the settings the user declares the mock has (--broker-setting)."""
    # Imported here as well as in the child, so that a missing extra is named (conformance/extras.py).
    import confluent_kafka  # noqa: F401

    cluster = MockCluster(brokers).start()
    target = KafkaTarget(cluster.addresses[0], name="librdkafka-mock", config=config)
    target.on_stop(cluster.stop)
    try:
        return target.check()
    except TargetError:
        target.stop()
        raise


def main(argv: list[str]) -> int:
    from confluent_kafka import Producer

    producer = Producer(
        {
            "bootstrap.servers": "",
            "test.mock.num.brokers": int(argv[0]) if argv else BROKERS,
            "log_level": 0,
        }
    )
    metadata = producer.list_topics(timeout=10)
    addresses = [f"{b.host}:{b.port}" for _, b in sorted(metadata.brokers.items())]
    print("mock brokers " + ",".join(addresses), flush=True)
    sys.stdin.read()  # until the parent closes it, or goes
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
