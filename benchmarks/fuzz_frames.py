"""A million random and mutated frames at one broker: crashes, hangs and peak memory (goals: 0, 0).

    .venv/bin/python benchmarks/fuzz_frames.py [--frames 1000000] [--concurrency 16] [--seed 1]

The frames are those of tests/broker/test_broker_bad_input.py (coordspec.broker.wire.fuzz: a valid request
of every API but Fetch, mutated, or random bytes framed or not), drawn from a seeded
``random.Random`` instead of Hypothesis, two to four per connection, ``--concurrency``
connections at a time. Each connection sends its frames, half-closes, and must be answered
and closed within ``--bound`` seconds, else it counts as a hang. The broker (``coordspec
broker``, a child process, short sessions as in the test) is checked every second: if it
died or grew past ``--max-rss-mib``, that is a crash (the frames in flight are printed, and
it is restarted to go on). At the end it must answer ApiVersions.
Printed: frames, connections, crashes, hangs, internal errors the broker logged, and its
peak RSS (VmHWM), with progress lines on the way.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import socket
import struct
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordspec.broker.testing import BrokerProcess, Connection
from coordspec.broker.wire import fuzz

SETTINGS = (
    "group.initial.rebalance.delay.ms=0",
    f"socket.request.max.bytes={1 << 20}",
    "group.min.session.timeout.ms=10",
    "group.max.session.timeout.ms=2000",
)
BROKER_ARGS = tuple(arg for setting in SETTINGS for arg in ("--broker-config", setting))


class Run:
    def __init__(self, broker: BrokerProcess, args: argparse.Namespace) -> None:
        self.broker, self.args = broker, args
        self.choices = fuzz.RandomChoices(args.seed)
        self.frames = self.connections = self.responses = self.hangs = self.crashes = 0
        self.in_flight: dict[
            int, bytes
        ] = {}  # client -> what it sent, to name the culprit of a crash
        self.peak_kib = 0
        self.started = time.monotonic()

    def next_connection(self) -> bytes | None:
        if self.frames >= self.args.frames:
            return None
        count = self.choices.integer(2, 4)
        self.frames += count
        return b"".join(fuzz.frame(self.choices) for _ in range(count))

    async def client(self, number: int) -> None:
        while (data := self.next_connection()) is not None:
            self.connections += 1
            self.in_flight[number] = data
            try:
                self.responses += await asyncio.wait_for(self.exchange(data), self.args.bound)
            except TimeoutError:
                self.hangs += 1
            except OSError:  # refused or reset while the broker restarts after a crash
                await asyncio.sleep(0.1)

    async def exchange(self, data: bytes) -> int:
        """Send, half-close, read until closed: the number of whole response frames."""
        reader, writer = await asyncio.open_connection(self.broker.host, self.broker.port)
        sock = writer.get_extra_info("socket")
        sock.setsockopt(
            socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0)
        )  # no TIME_WAIT pile-up
        try:
            try:
                writer.write(data)
                writer.write_eof()
                await writer.drain()
            except (BrokenPipeError, ConnectionResetError):
                pass  # the broker closed on an earlier frame
            received = b""
            try:
                while chunk := await reader.read(1 << 16):
                    received += chunk
            except ConnectionResetError:
                pass
        finally:
            writer.close()
        count = position = 0
        while len(received) - position >= 4:
            position += 4 + struct.unpack_from(">i", received, position)[0]
            count += position <= len(received)
        return count

    async def watch(self) -> None:
        next_report = self.args.report
        while True:
            await asyncio.sleep(1)
            rss_kib = peak_rss_kib(self.broker)
            self.peak_kib = max(self.peak_kib, rss_kib)
            if not self.broker.alive() or rss_kib > self.args.max_rss_mib * 1024:
                self.crashes += 1
                why = (
                    "died" if not self.broker.alive() else f"grew past {self.args.max_rss_mib} MiB"
                )
                print(
                    f"CRASH: the broker {why} after {self.frames:,} frames; in flight:", flush=True
                )
                for data in self.in_flight.values():
                    print(f"  {data[:300].hex()}", flush=True)
                print(self.broker.stderr()[-2000:], flush=True)
                self.broker.kill()
                self.broker.start()
            if self.frames >= next_report:
                next_report += self.args.report
                elapsed = time.monotonic() - self.started
                print(
                    f"{self.frames:>9,} frames  {self.connections:>8,} connections  {self.frames / elapsed:6,.0f} frames/s  "
                    f"hangs {self.hangs}  crashes {self.crashes}  peak RSS {self.peak_kib / 1024:.0f} MiB  "
                    f"load average {os.getloadavg()[0]:.2f}",
                    flush=True,
                )

    async def run(self) -> None:
        watcher = asyncio.create_task(self.watch())
        await asyncio.gather(*(self.client(n) for n in range(self.args.concurrency)))
        watcher.cancel()


def peak_rss_kib(broker: BrokerProcess) -> int:
    if broker.process is None:
        return 0
    for line in Path(f"/proc/{broker.process.pid}/status").read_text().splitlines():
        if line.startswith("VmHWM:"):
            return int(line.split()[1])
    return 0


def api_versions_works(broker: BrokerProcess) -> bool:
    try:
        connection = Connection(broker.host, broker.port, timeout_s=10)
        answer = connection.request(
            18, 3, {"client_software_name": "fuzz", "client_software_version": "1"}
        )
        connection.close()
        return answer.error_code == 0
    except OSError:
        return False


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--frames", type=int, default=1_000_000)
    parser.add_argument("--concurrency", type=int, default=16, help="connections in flight")
    parser.add_argument(
        "--bound",
        type=float,
        default=10.0,
        help="seconds a connection may take to be answered and closed",
    )
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument(
        "--max-rss-mib",
        type=int,
        default=2048,
        help="a broker above this is killed and counted as a crash",
    )
    parser.add_argument(
        "--report", type=int, default=50_000, help="a progress line every this many frames"
    )
    args = parser.parse_args()
    print(
        f"{args.frames:,} frames, {args.concurrency} connections at a time, seed {args.seed}, load average {os.getloadavg()[0]:.2f}",
        flush=True,
    )
    with (
        tempfile.TemporaryDirectory(prefix="fuzz-frames-") as tmp,
        BrokerProcess(Path(tmp) / "data", *BROKER_ARGS) as broker,
    ):
        run = Run(broker, args)
        asyncio.run(run.run())
        elapsed = time.monotonic() - run.started
        serving = api_versions_works(broker) and broker.alive()
        run.peak_kib = max(run.peak_kib, peak_rss_kib(broker))
        internal_errors = broker.stderr().count("internal error")
    print(
        f"sent {run.frames:,} frames on {run.connections:,} connections in {elapsed:.0f} s ({run.frames / elapsed:,.0f} frames/s), "
        f"{run.responses:,} response frames"
    )
    print(
        f"crashes {run.crashes} (goal 0)   hangs {run.hangs} (goal 0, bound {args.bound:g} s)   internal errors logged {internal_errors}   "
        f"answers ApiVersions at the end: {serving}   broker peak RSS {run.peak_kib / 1024:.1f} MiB   load average {os.getloadavg()[0]:.2f}"
    )
    return 0 if run.crashes == run.hangs == internal_errors == 0 and serving else 1


if __name__ == "__main__":
    sys.exit(main())
