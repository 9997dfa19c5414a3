"""The ``embedded`` target: the project's own broker (``broker/``) in a child process,
checked over the wire by the kafka target.

The broker listens on 127.0.0.1 on a free port with a fresh data directory, and stops
(and its directory goes) when the target stops or this process exits. With
``faults=True`` a restart (or a coordinator kill: there is one broker) stops the child and
starts it again on the same port and data, so it reloads its groups from the log; a fault
hits every group on the broker, so sessions then run one at a time.
"""

from __future__ import annotations

import asyncio
import atexit
import shutil
import tempfile
from pathlib import Path

from broker.testing import BrokerProcess
from conformance.suite.kafka_target import FaultCommands, KafkaTarget
from conformance.suite.target import TargetError


class EmbeddedBroker:
    def __init__(self) -> None:
        self.root = Path(tempfile.mkdtemp(prefix="coordspec-embedded-"))
        self.process = BrokerProcess(self.root / "data")
        atexit.register(self.stop)

    def start(self, *args: str) -> EmbeddedBroker:
        try:
            self.process.start()
        except RuntimeError as exc:
            self.stop()
            raise TargetError(f"the embedded broker did not start: {exc}") from None
        return self

    async def restart(self) -> None:
        await asyncio.to_thread(self._restart)

    def _restart(self) -> None:
        port = self.process.port
        self.process.stop()
        self.process = BrokerProcess(self.root / "data", "--port", str(port))  # the last --port wins
        self.start()

    def stop(self) -> None:
        self.process.stop()
        shutil.rmtree(self.root, ignore_errors=True)


def start_embedded(*, faults: bool = False) -> KafkaTarget:
    broker = EmbeddedBroker().start()
    hooks = FaultCommands(kill_coordinator=broker.restart, restart=broker.restart) if faults else None
    target = KafkaTarget(broker.process.bootstrap, name="embedded", faults=hooks)
    target.on_stop(broker.stop)
    try:
        return target.check()
    except TargetError:
        target.stop()
        raise
