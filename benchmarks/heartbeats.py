"""Heartbeats per second one broker serves (goal: at least 20,000/s).

    .venv/bin/python benchmarks/heartbeats.py [--groups 128] [--clients 2] [--depth 16] [--seconds 10] [--profile out.prof]

The broker (``coordspec broker``, one child process) gets ``--groups`` groups of one
member each, joined and synced through a minimal client. Then ``--clients`` load
processes keep ``--depth`` pre-encoded Heartbeat v4 frames in flight on each of their
connections (every connection heartbeats one member), count the response frames and
compare every one with the expected bytes (error_code 0): the clients only write and
compare bytes, so the broker is the bottleneck. The rate is counted over ``--seconds``
after a warm-up, once with the broker's trace (the default) and once with
``--no-trace``, and so is the broker's CPU time per heartbeat (from /proc), which tells
what one core of its own would serve on a machine other jobs share. With ``--profile``
the untraced broker runs under cProfile and the top of the profile is printed.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import pstats
import selectors
import socket
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordspec.broker.testing import BrokerProcess, Connection, encode_request

GOAL = 20_000
JOIN_GROUP, SYNC_GROUP, HEARTBEAT = 11, 14, 12
MEMBER_ID_REQUIRED = 79
SESSION_MS = 120_000


def join(connection: Connection, group: str) -> tuple[str, int]:
    """Join ``group`` as its only member and sync: (member id, generation)."""
    values = {
        "group_id": group,
        "session_timeout": SESSION_MS,
        "rebalance_timeout": SESSION_MS,
        "member_id": "",
        "protocol_type": "consumer",
        "protocols": [{"name": "range", "metadata": b""}],
    }
    first = connection.request(JOIN_GROUP, 5, values)
    assert first.error_code == MEMBER_ID_REQUIRED, first
    joined = connection.request(JOIN_GROUP, 5, {**values, "member_id": first.member_id})
    assert joined.error_code == 0 and joined.leader == joined.member_id, joined
    synced = connection.request(
        SYNC_GROUP,
        5,
        {
            "group_id": group,
            "generation_id": joined.generation_id,
            "member_id": joined.member_id,
            "protocol_type": "consumer",
            "protocol_name": "range",
            "assignments": [{"member_id": joined.member_id, "assignment": b""}],
        },
    )
    assert synced.error_code == 0, synced
    return joined.member_id, joined.generation_id


def heartbeat_frames(
    connection: Connection, group: str, member_id: str, generation: int
) -> tuple[bytes, bytes]:
    """The request frame a member sends over and over, and the exact response frame it gets."""
    request = encode_request(
        HEARTBEAT,
        4,
        {"group_id": group, "generation_id": generation, "member_id": member_id},
        correlation_id=7,
    )
    connection.sock.sendall(request)
    response = connection.read_frame()
    assert response[-3:-1] == b"\x00\x00", f"heartbeat error {response!r}"
    return request, len(response).to_bytes(4, "big") + response


def cpu_seconds(pid: int) -> float:
    """User and system CPU time of ``pid`` so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def load(
    host: str,
    port: int,
    members: list[tuple[bytes, bytes]],
    depth: int,
    warmup_s: float,
    seconds: float,
    results: multiprocessing.Queue,
) -> None:
    """One load process: ``depth`` heartbeats in flight per connection; count replies in the window."""
    selector = selectors.DefaultSelector()
    for request, response in members:
        sock = socket.create_connection((host, port))
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        sock.setblocking(False)
        state = [request, response, len(response), b""]
        selector.register(sock, selectors.EVENT_READ, state)
        sock.sendall(request * depth)
    start = time.monotonic()
    window_start, window_end = start + warmup_s, start + warmup_s + seconds
    counted = bad = 0
    while (now := time.monotonic()) < window_end:
        for key, _ in selector.select(0.1):
            request, expected, size, rest = key.data
            data = rest + key.fileobj.recv(1 << 18)
            if len(data) == len(rest):
                raise SystemExit("the broker closed a connection")
            n = len(data) // size
            whole, key.data[3] = data[: n * size], data[n * size :]
            if whole != expected * n:
                bad += sum(whole[i : i + size] != expected for i in range(0, len(whole), size))
            if window_start <= now:
                counted += n
            key.fileobj.send(request * n)  # small: fits the socket buffer
    results.put((counted, bad))


@dataclass
class Measured:
    served: int
    bad: int
    cpu_s: float  # the broker's, during the window
    alive: bool


def measure(args: argparse.Namespace, broker_args: list[str], profile: Path | None) -> Measured:
    with tempfile.TemporaryDirectory(prefix="heartbeats-") as tmp:
        launcher = ("-m", "cProfile", "-o", str(profile.resolve())) if profile else ()
        with BrokerProcess(
            Path(tmp) / "data",
            "--broker-config",
            "group.initial.rebalance.delay.ms=0",
            "--broker-config",
            f"group.max.session.timeout.ms={SESSION_MS}",
            *broker_args,
            launcher=launcher,
        ) as broker:
            setup = Connection(broker.host, broker.port)
            members = []
            for g in range(args.groups):
                member_id, generation = join(setup, f"hb-{g}")
                members.append(heartbeat_frames(setup, f"hb-{g}", member_id, generation))
            setup.close()
            results: multiprocessing.Queue = multiprocessing.Queue()
            shares = [members[i :: args.clients] for i in range(args.clients)]
            workers = [
                multiprocessing.Process(
                    target=load,
                    args=(
                        broker.host,
                        broker.port,
                        share,
                        args.depth,
                        args.warmup,
                        args.seconds,
                        results,
                    ),
                )
                for share in shares
            ]
            for worker in workers:
                worker.start()
            time.sleep(args.warmup + 0.5)  # the load processes connect, then warm up
            cpu_start = cpu_seconds(broker.process.pid)
            time.sleep(args.seconds - 1.0)
            cpu_s = cpu_seconds(broker.process.pid) - cpu_start
            outcomes = [results.get(timeout=args.warmup + args.seconds + 60) for _ in workers]
            for worker in workers:
                worker.join()
            alive = broker.alive()
    return Measured(sum(c for c, _ in outcomes), sum(b for _, b in outcomes), cpu_s, alive)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument(
        "--groups", type=int, default=128, help="groups of one member, one connection each"
    )
    parser.add_argument(
        "--clients",
        type=int,
        default=2,
        help="load processes (one alone cannot keep the broker busy)",
    )
    parser.add_argument("--depth", type=int, default=16, help="heartbeats in flight per connection")
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--warmup", type=float, default=2.0)
    parser.add_argument(
        "--profile",
        type=Path,
        help="run the untraced broker under cProfile, write the profile here",
    )
    args = parser.parse_args()
    print(
        f"{args.groups} members on {args.groups} connections, {args.depth} heartbeats in flight each, {args.clients} load process(es), "
        f"{args.seconds:g} s each; load average before: {os.getloadavg()[0]:.2f}"
    )
    ok = True
    for name, broker_args in (("traced (default)", []), ("--no-trace", ["--no-trace"])):
        m = measure(args, broker_args, args.profile if broker_args else None)
        rate = m.served / args.seconds
        busy = m.cpu_s / (args.seconds - 1.0)
        cpu_us = busy / rate * 1e6 if rate else float("nan")
        print(
            f"{name:>17}: {rate:8,.0f} heartbeats/s   goal {GOAL:,}/s   ratio {rate / GOAL:.2f}   "
            f"broker CPU {cpu_us:5.1f} us each ({busy:.0%} of a core: {1e6 / cpu_us:,.0f}/s on a core of its own)   "
            f"errors {m.bad}   alive {m.alive}   load average {os.getloadavg()[0]:.2f}"
        )
        ok = ok and m.bad == 0 and m.alive
    if args.profile:
        pstats.Stats(str(args.profile)).sort_stats("tottime").print_stats(25)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
