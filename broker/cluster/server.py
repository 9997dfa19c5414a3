"""A cluster broker process: ``python -m coordspec.broker.cluster.server --id 1 --peers 1=127.0.0.1:P1,... --zookeeper H:P --data DIR``.

``--peers`` names every broker of the cluster with the address it listens on: the model's
registration in ZooKeeper carries no usable address, so brokers and clients are pointed at these.

Connections are served as the single broker serves them (:mod:`coordspec.broker.connections`,
:mod:`coordspec.broker.wire.dispatch`): one request at a time, in order; a frame
above ``socket.request.max.bytes`` or a request that does not decode closes the connection.
Other brokers reach this one on the same port: the controller's LeaderAndIsr and
StopReplica in their internal framing (:mod:`coordspec.broker.cluster.peer_wire`) and the followers'
Fetches. A connection is a peer's when its first request is one of these (a Fetch whose
``replica_id`` names a broker of ``--peers``). As Kafka lets inter-broker connections past
``max.connections``, only clients' connections count toward ``max.connections``, and only
theirs are closed after ``connections.max.idle.ms`` without a byte (the controller's
connection to a broker can be quiet for longer, and reconnecting would delay the next
LeaderAndIsr). Connections that have not sent a whole request yet are a pool of their own,
also bounded by ``max.connections``, so clients at their limit do not keep a peer from
connecting (silent connections can fill that pool until the idle time closes them).

``--security-config`` adds a client listener with TLS and SASL SCRAM at this broker's address
in ``--client-listeners`` (coordspec.broker.security); its Metadata and FindCoordinator name
the brokers' client listeners. The credentials are read from ZooKeeper, where Kafka keeps
them (coordspec.broker.cluster.scram_users). The ``--peers`` port stays plaintext for the
other brokers (and for clients that do not need the secured one): inter-broker traffic runs
unencrypted and unauthenticated, on loopback where ``coordspec cluster up`` puts it.

Ctrl-C and SIGTERM stop the broker cleanly (its ZooKeeper session is closed, so its
ephemerals go at once); SIGKILL is a crash (the session expires).

The broker writes its JSONL trace of the group protocol to ``<data>/trace.jsonl``
(``--trace``, ``--no-trace``); ``--trace-run`` and ``--trace-epoch-ms`` must be the same for every broker
of a cluster, so that their files together are one run on one clock
(:mod:`coordspec.broker.cluster.group_trace`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import dataclasses
import fcntl
import functools
import logging
import os
import signal
import sys
from pathlib import Path

from coordspec.broker.cluster.apis import APIS, ClusterContext
from coordspec.broker.cluster.node import ClusterNode, NodeConfig, NodeStartError
from coordspec.broker.cluster.peer_wire import (
    INTERNAL_KEYS,
    decode_controller_request,
    internal_response,
    split_internal,
)
from coordspec.broker.cluster.scram_users import lookup
from coordspec.broker.connections import Connections, Limits
from coordspec.broker.errors import BrokerError
from coordspec.broker.security import PLAINTEXT, SCRAM
from coordspec.broker.security import load as load_security
from coordspec.broker.settings import (
    CLUSTER,
    SettingsError,
    TopicDefaults,
    add_arguments,
    from_arguments,
    group_config_of,
    help_table,
    limits_of,
    replication_config_of,
    topic_defaults_of,
)
from coordspec.broker.wire.dispatch import respond
from coordspec.broker.wire.protocol import Header, decode_request, peek_header
from coordspec.reference.errors import UsageError

log = logging.getLogger("coordspec.broker.cluster")
INVALID_REQUEST = 42
FETCH_KEY = 1


class ClusterBrokerError(Exception):
    """A reason the broker cannot start, in one line."""


async def _internal(ctx: ClusterContext, header: Header, payload: bytes) -> bytes | None:
    """The controller's requests, answered here; a client's request waits until the node serves."""
    if header.api_key in INTERNAL_KEYS:
        api_key, correlation_id, body = split_internal(payload)
        try:
            request = decode_controller_request(api_key, body)
        except (ValueError, KeyError, TypeError):
            return internal_response(correlation_id, INVALID_REQUEST)
        ctx.node.deliver(request)
        return internal_response(correlation_id, 0)
    await ctx.serving.wait()
    return None


def _from_a_peer(first: bytes, peers: dict[int, tuple[str, int]]) -> bool:
    """Whether a connection's first request is another broker's: an internal one or a follower's Fetch."""
    header = peek_header(first)
    if header.api_key in INTERNAL_KEYS:
        return True
    if header.api_key != FETCH_KEY or header.api_version not in APIS[FETCH_KEY].versions:
        return False
    _, body = decode_request(first, FETCH_KEY, header.api_version)
    return body.replica_id in peers


def _lock(data_dir: Path):
    try:
        data_dir.mkdir(parents=True, exist_ok=True)
        lock = open(data_dir / ".lock", "w")  # noqa: SIM115 - held while the broker runs
    except OSError as e:
        raise ClusterBrokerError(f"data directory {data_dir}: {e.strerror or e}") from None
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        lock.close()
        raise ClusterBrokerError(f"data directory {data_dir} is in use by another broker") from None
    return lock


async def serve(
    config: NodeConfig,
    limits: Limits,
    topic_defaults: TopicDefaults,
    stop: asyncio.Event | None = None,
    security_config: Path | None = None,
    client_listeners: dict[int, tuple[str, int]] | None = None,
) -> None:
    security = PLAINTEXT
    if client_listeners is not None:
        # The node (below) is made before any client can authenticate.
        security = load_security(
            security_config, scram=lookup(lambda: node.zk.client), offered=SCRAM
        )
    lock = _lock(config.data_dir)
    host, port = config.peers[config.broker_id]
    try:
        node = ClusterNode(config)
    except OSError as e:
        lock.close()
        raise ClusterBrokerError(f"trace {config.trace}: {e.strerror or e}") from None
    # The view comes with start().
    ctx = ClusterContext(config.broker_id, host, port, node, None, topic_defaults)
    connections = Connections(
        lambda peer, frame: respond(APIS, ctx, peer, frame, functools.partial(_internal, ctx)),
        limits,
        log,
        lambda first: _from_a_peer(first, config.peers),
    )
    try:
        server = await asyncio.get_running_loop().create_server(connections.protocol, host, port)
    except OSError as e:
        lock.close()
        raise ClusterBrokerError(
            f"cannot listen on {host}:{port}: {os.strerror(e.errno) if e.errno else e}"
        ) from None
    try:
        await node.start()
    except NodeStartError as e:
        server.close()
        lock.close()
        raise ClusterBrokerError(f"broker {config.broker_id}: {e}") from None
    except Exception as e:  # noqa: BLE001 - kazoo's timeouts and connection errors
        server.close()
        lock.close()
        raise ClusterBrokerError(
            f"broker {config.broker_id}: cannot reach ZooKeeper at {config.zookeeper}: {e or type(e).__name__}"
        ) from None
    ctx.view = node.view
    ctx.serving.set()
    secured = ""
    servers = [server]
    if client_listeners is not None:
        client_host, client_port = client_listeners[config.broker_id]
        client_ctx = dataclasses.replace(
            ctx, host=client_host, port=client_port, addresses=client_listeners
        )
        clients = Connections(
            lambda peer, frame: respond(APIS, client_ctx, peer, frame),
            limits,
            log,
            security=security,
        )
        try:
            servers.append(
                await asyncio.get_running_loop().create_server(
                    clients.protocol, client_host, client_port, ssl=security.ssl_context
                )
            )
        except OSError as e:
            server.close()
            await node.stop()
            lock.close()
            raise ClusterBrokerError(
                f"cannot listen on {client_host}:{client_port}: "
                f"{os.strerror(e.errno) if e.errno else e}"
            ) from None
        secured = f", clients on {client_host}:{client_port} ({security.protocol})"
    if stop is None:
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    print(
        f"broker {config.broker_id} serving on {host}:{port}{secured}, data in {config.data_dir}",
        flush=True,
    )
    try:
        await stop.wait()
    finally:
        for listening in servers:
            listening.close()
        if client_listeners is not None:
            await clients.close()
        await connections.close()
        await node.stop()
        lock.close()


def parse_peers(text: str, flag: str = "--peers") -> dict[int, tuple[str, int]]:
    peers = {}
    for item in text.split(","):
        broker, _, address = item.partition("=")
        host, _, port = address.rpartition(":")
        if not (broker.isdigit() and host and port.isdigit()):
            raise ClusterBrokerError(f"{flag}: expected ID=HOST:PORT,..., got {item!r}")
        peers[int(broker)] = (host, int(port))
    return peers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m coordspec.broker.cluster.server",
        description="Serve one broker of a coordspec cluster.",
        epilog=help_table(),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--id", type=int, required=True, help="broker.id")
    parser.add_argument(
        "--peers",
        required=True,
        help="every broker of the cluster: ID=HOST:PORT,... (this one included)",
    )
    parser.add_argument(
        "--zookeeper", required=True, help="zookeeper.connect, HOST:PORT[,HOST:PORT...][/chroot]"
    )
    parser.add_argument(
        "--data", type=Path, required=True, help="data directory (one segment file per replica)"
    )
    parser.add_argument(
        "--trace",
        type=Path,
        default=None,
        help="the JSONL trace of the group protocol (default <data>/trace.jsonl)",
    )
    parser.add_argument(
        "--no-trace", action="store_true", help="write no trace of the group protocol"
    )
    parser.add_argument(
        "--trace-run",
        default=None,
        help="the trace's run, the same for every broker (default cluster@<zookeeper>)",
    )
    parser.add_argument(
        "--trace-epoch-ms",
        type=int,
        default=0,
        help="the trace's t_ms counts from this Unix time in ms, the same for every broker (default 0)",
    )
    parser.add_argument(
        "--security-config",
        type=Path,
        metavar="FILE",
        help="TLS and SASL SCRAM of the client listener, by Kafka's names (coordspec broker --help)",
    )
    parser.add_argument(
        "--client-listeners",
        metavar="ID=HOST:PORT,...",
        help="with --security-config: every broker's secured client listener",
    )
    add_arguments(parser)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        peers = parse_peers(args.peers)
        if args.id not in peers:
            raise ClusterBrokerError(f"--peers does not name broker {args.id}")
        client_listeners = None
        if args.security_config:
            if not args.client_listeners:
                raise ClusterBrokerError("--security-config needs --client-listeners")
            client_listeners = parse_peers(args.client_listeners, "--client-listeners")
            if set(client_listeners) != set(peers):
                raise ClusterBrokerError("--client-listeners must name the brokers of --peers")

        settings = from_arguments(CLUSTER, args)
        config = NodeConfig(
            args.id,
            peers,
            args.zookeeper,
            args.data,
            int(settings["offsets.topic.num.partitions"]),
            replication_config_of(settings),
            group_config_of(settings),
            trace=None if args.no_trace else args.trace or args.data / "trace.jsonl",
            trace_run=args.trace_run or f"cluster@{args.zookeeper}",
            trace_epoch_ms=args.trace_epoch_ms,
        )
        asyncio.run(
            serve(
                config,
                limits_of(settings),
                topic_defaults_of(settings),
                security_config=args.security_config,
                client_listeners=client_listeners,
            )
        )
    except (ClusterBrokerError, BrokerError, SettingsError, UsageError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    with contextlib.suppress(OSError):
        print(f"broker {args.id} stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
