"""A single Kafka broker on asyncio, serving the reference group coordinator and on-disk logs.

    python -m coordspec.broker.server --port 9092 --data ./data [--broker-config KEY=VALUE ...]

Kafka's broker settings come by their Kafka names (coordspec.broker.settings).
Each connection is served one request at a time, in order, as Kafka does: responses go
out in request order, a parked JoinGroup or a long-polling Fetch holds up only its own
connection, and a connection's responses ready in one loop turn go out in one write
(coordspec.broker.wire.connection). Limits: the frame size, the number of connections (more are
closed at once) and the idle time without a byte received (coordspec.broker.connections).
Errors a user can hit (port in use, unusable data directory, a setting it cannot take) are
one line on stderr and exit status 1; Ctrl-C and SIGTERM stop the broker cleanly.

``--security-config`` and ``--users`` secure the listener with TLS and SASL
(coordspec.broker.security). The start-up line names the address the broker binds (and the
one it advertises when they differ); listening beyond loopback without authentication gets
a warning on stderr.
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import ipaddress
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Mapping
from pathlib import Path
from typing import IO

from coordspec.broker.apis.registry import APIS
from coordspec.broker.connections import Connections, Limits
from coordspec.broker.context import BrokerContext
from coordspec.broker.errors import BrokerError
from coordspec.broker.group_service import GroupService
from coordspec.broker.log.producers import ProducerIds
from coordspec.broker.log.topics import DataDirError, TopicStore
from coordspec.broker.security import PLAINTEXT, ListenerSecurity, read_users
from coordspec.broker.security import load as load_security
from coordspec.broker.settings import (
    SINGLE,
    SettingsError,
    Value,
    add_arguments,
    from_arguments,
    group_config_of,
    help_table,
    limits_of,
    topic_defaults_of,
)
from coordspec.broker.trace import Trace, TraceFileError
from coordspec.broker.wire.dispatch import respond
from coordspec.reference.errors import UsageError
from coordspec.reference.wire.group_records import CorruptRecord

log = logging.getLogger("broker")


class Broker:
    def __init__(
        self,
        ctx: BrokerContext,
        limits: Limits,
        trace: Trace,
        lock: IO,
        security: ListenerSecurity = PLAINTEXT,
    ) -> None:
        self.ctx = ctx
        self._trace = trace
        self._lock = lock
        self._server: asyncio.Server | None = None
        self.security = security
        self._connections = Connections(
            lambda peer, frame: respond(APIS, ctx, peer, frame), limits, log, security=security
        )
        self.bound: list[tuple[str, int]] = []  # the addresses it listens on

    async def start(self, host: str) -> None:
        loop = asyncio.get_running_loop()
        try:
            self._server = await loop.create_server(
                self._connections.protocol, host, self.ctx.port, ssl=self.security.ssl_context
            )
        except socket.gaierror:  # its strerror is getaddrinfo's code: "Unknown error -2"
            raise BrokerError(f"cannot listen on {host}: the host does not resolve") from None
        except OSError as e:
            reason = (
                os.strerror(e.errno) if e.errno else str(e)
            )  # asyncio's own message repeats the address
            raise BrokerError(f"cannot listen on {host}:{self.ctx.port}: {reason}") from None
        self.bound = [s.getsockname()[:2] for s in self._server.sockets]
        self.ctx.port = self.bound[0][1]
        self.ctx.groups.start()

    async def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        await self._connections.close()
        if self._server is not None:
            await self._server.wait_closed()
        await self.ctx.groups.stop()
        self.ctx.topics.close()
        self._trace.close()
        self._lock.close()


def open_broker(
    host: str,
    port: int,
    data_dir: Path,
    settings: Mapping[str, Value],
    *,
    node_id: int = 1,
    trace_path: Path | None = None,
    advertised_host: str | None = None,
    trace: bool = True,
    security: ListenerSecurity = PLAINTEXT,
) -> Broker:
    """A broker over ``data_dir`` (created if missing), not yet listening, with ``settings``
    (:func:`coordspec.broker.settings.resolve`).

    The trace goes to ``trace_path``, by default ``<data_dir>/trace.jsonl``; with ``trace``
    false there is none (and the requests cost no trace encoding). Clients are
    told to dial ``advertised_host`` (Kafka's advertised.listeners), by default ``host``,
    or 127.0.0.1 when ``host`` is a wildcard address.
    """
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        lock = open(data_dir / ".lock", "w")  # noqa: SIM115 - held until the broker stops
    except OSError as e:
        raise BrokerError(f"data directory {data_dir}: {e.strerror or e}") from None
    try:
        fcntl.flock(
            lock, fcntl.LOCK_EX | fcntl.LOCK_NB
        )  # one broker per data directory, as Kafka's .lock
    except OSError:
        lock.close()
        raise BrokerError(f"data directory {data_dir} is in use by another broker") from None
    start_ms = int(time.time() * 1000)
    try:
        trace_file = Trace(
            (trace_path or data_dir / "trace.jsonl") if trace else None, node_id, start_ms
        )
        topics = TopicStore(data_dir)
        groups = GroupService(
            topics,
            int(settings["offsets.topic.num.partitions"]),
            group_config_of(settings),
            trace_file if trace else None,
        )
        trace_file.restart(start_ms, set(groups.coordinator.groups))
    except (DataDirError, CorruptRecord, TraceFileError) as e:
        lock.close()
        raise BrokerError(str(e)) from None
    except OSError as e:
        lock.close()
        raise BrokerError(f"data directory {data_dir}: {e}") from None
    if advertised_host is None:
        advertised_host = "127.0.0.1" if host in ("", "0.0.0.0", "::") else host
    ctx = BrokerContext(
        node_id=node_id,
        host=advertised_host,
        port=port,
        cluster_id="coordspec",
        topics=topics,
        groups=groups,
        producer_ids=ProducerIds(data_dir / "producer_ids.json"),
        topic_defaults=topic_defaults_of(settings),
    )
    return Broker(ctx, limits_of(settings), trace_file, lock, security)


async def serve(
    host: str,
    port: int,
    data_dir: Path,
    settings: Mapping[str, Value],
    *,
    ready: asyncio.Event | None = None,
    stop: asyncio.Event | None = None,
    **options,
) -> None:
    """Serve until ``stop`` is set (or SIGINT / SIGTERM arrive when ``stop`` is not given)."""
    broker = open_broker(host, port, data_dir, settings, **options)
    await broker.start(host)
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
    bound_host, port = broker.bound[0]
    advertised = "" if bound_host == broker.ctx.host else f", advertised as {broker.ctx.host}"
    print(
        f"broker {broker.ctx.node_id} serving on {_address(bound_host, port)}"
        f" ({broker.security.protocol}{advertised}), data in {data_dir}",
        flush=True,
    )
    exposed = [_address(*a) for a in broker.bound if not _loopback(a[0])]
    if exposed and not broker.security.authenticates:
        print(
            f"warning: listening on {', '.join(exposed)}, beyond loopback, without "
            "authentication: whoever reaches it can create topics, produce and read "
            "(--security-config with security.protocol=SASL_SSL or SASL_PLAINTEXT asks for it)",
            file=sys.stderr,
            flush=True,
        )
    if ready is not None:
        ready.set()
    try:
        await stop.wait()
    finally:
        await broker.stop()


def port_number(text: str) -> int:
    """An argparse type: a TCP port, 0 (any free one) to 65535."""
    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {text!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port {port} is out of range (0-65535)")
    return port


def _loopback(host: str) -> bool:
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return host == "localhost"


def _address(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def main(argv: list[str] | None = None, prog: str = "python -m coordspec.broker.server") -> int:
    parser = argparse.ArgumentParser(
        prog=prog,
        description="Serve one coordspec broker.",
        epilog=help_table(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)"
    )
    parser.add_argument(
        "--advertised-host",
        help="address clients are told to dial (default: --host, or 127.0.0.1 when --host is "
        "a wildcard such as 0.0.0.0)",
    )
    parser.add_argument(
        "--port", type=port_number, default=9092, help="port to listen on (default 9092)"
    )
    parser.add_argument(
        "--data", type=Path, required=True, help="data directory (logs, topics.json, trace.jsonl)"
    )
    parser.add_argument(
        "--no-trace",
        action="store_true",
        help="write no trace.jsonl (it costs about two fifths of a heartbeat's CPU)",
    )
    parser.add_argument(
        "--security-config",
        type=Path,
        metavar="FILE",
        help="TLS and SASL of the listener, by Kafka's names (security.protocol, "
        "ssl.keystore.location as PEM certificate and key, sasl.enabled.mechanisms, ...)",
    )
    parser.add_argument(
        "--users", type=Path, metavar="FILE", help="SASL users: a properties file NAME=PASSWORD"
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(name)s: %(message)s")
    try:
        settings = from_arguments(SINGLE, args)
        security = load_security(
            args.security_config, read_users(args.users) if args.users else None
        )
        asyncio.run(
            serve(
                args.host,
                args.port,
                args.data,
                settings,
                advertised_host=args.advertised_host,
                trace=not args.no_trace,
                security=security,
            )
        )
    except (BrokerError, SettingsError, UsageError) as e:
        print(f"{prog}: {e}", file=sys.stderr)
        return 1
    except OSError as e:  # the address is taken, the data directory is a file ...
        where = e.filename or f"{args.host}:{args.port}"
        print(f"{prog}: {where}: {e.strerror or e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    print("broker stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
