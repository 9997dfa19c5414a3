"""A cluster broker process: ``python -m broker.cluster.server --id 1 --port P --zookeeper H:P --peers 1=127.0.0.1:P1,... --data DIR``.

Connections are served one request at a time, as the single broker does
(:mod:`broker.server`); the controller's LeaderAndIsr and StopReplica arrive on the same
port in their internal framing (:mod:`broker.cluster.peer_wire`). ``--peers`` names every
broker of the cluster with the address it listens on: the model's registration in
ZooKeeper carries no usable address, so brokers and clients are pointed at these.
Ctrl-C and SIGTERM stop the broker cleanly (its ZooKeeper session is closed, so its
ephemerals go at once); SIGKILL is a crash (the session expires).

The broker writes its JSONL trace of the group protocol to ``<data>/trace.jsonl``
(``--trace``, ``--no-trace``); ``--trace-run`` and ``--trace-epoch-ms`` must be the same for every broker
of a cluster, so that their files together are one run on one clock
(:mod:`broker.cluster.group_trace`).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import fcntl
import logging
import os
import signal
import sys
from pathlib import Path

from broker.apis import api_versions
from broker.cluster.apis import APIS, ClusterContext
from broker.cluster.node import ClusterNode, NodeConfig, NodeStartError
from broker.cluster.peer_wire import INTERNAL_KEYS, decode_controller_request, internal_response, split_internal
from broker.context import Client
from broker.wire.entities import build
from broker.wire.framing import FrameError, read_frame
from broker.wire.protocol import API_VERSIONS_KEY, BadRequest, decode_request, encode_response, peek_header, response_class
from reference.errors import UsageError
from reference.group import GroupConfig
from reference.replication.config import ReplicationConfig

log = logging.getLogger("broker.cluster")
MAX_FRAME_BYTES = 100 * 1024 * 1024
INVALID_REQUEST = 42


class ClusterBrokerError(Exception):
    """A reason the broker cannot start, in one line."""


async def respond(ctx: ClusterContext, peer: tuple[str, int], payload: bytes) -> bytes | None:
    header = peek_header(payload)
    if header.api_key in INTERNAL_KEYS:
        api_key, correlation_id, body = split_internal(payload)
        try:
            request = decode_controller_request(api_key, body)
        except (ValueError, KeyError, TypeError):
            return internal_response(correlation_id, INVALID_REQUEST)
        ctx.node.deliver(request)
        return internal_response(correlation_id, 0)
    await ctx.serving.wait()
    api = APIS.get(header.api_key)
    if api is None:
        raise BadRequest(f"unknown API key {header.api_key}")
    if header.api_key == API_VERSIONS_KEY and header.api_version >= api.versions.stop:
        return encode_response(API_VERSIONS_KEY, 0, header.correlation_id, build(response_class(API_VERSIONS_KEY, 0), api_versions.unsupported(APIS)))
    if header.api_version not in api.versions:
        raise BadRequest(f"{api.name} v{header.api_version} is not supported (v{api.versions.start}-v{api.versions.stop - 1})")
    full, body = decode_request(payload, header.api_key, header.api_version)
    values = await api.handler(ctx, Client(full.client_id or "", f"/{peer[0]}", peer[1]), header.api_version, body)
    if values is None:
        return None
    entity = build(response_class(header.api_key, header.api_version), values)
    return encode_response(header.api_key, header.api_version, header.correlation_id, entity)


async def _connection(ctx: ClusterContext, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    peer = writer.get_extra_info("peername") or ("?", 0)
    try:
        while (payload := await read_frame(reader, MAX_FRAME_BYTES, 600.0)) is not None:
            response = await respond(ctx, peer[:2], payload)
            if response is not None:
                writer.write(response)
                await writer.drain()
    except (FrameError, BadRequest) as e:
        log.info("closing %s:%s: %s", peer[0], peer[1], e)
    except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
        pass
    except Exception:  # a bug: this connection goes, the broker stays
        log.exception("closing %s:%s after an internal error", peer[0], peer[1])
    finally:
        writer.close()


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


async def serve(config: NodeConfig, stop: asyncio.Event | None = None) -> None:
    lock = _lock(config.data_dir)
    host, port = config.peers[config.broker_id]
    try:
        node = ClusterNode(config)
    except OSError as e:
        lock.close()
        raise ClusterBrokerError(f"trace {config.trace}: {e.strerror or e}") from None
    connections: set[asyncio.Task] = set()

    async def accept(reader, writer) -> None:
        task = asyncio.current_task()
        connections.add(task)
        try:
            await _connection(ctx, reader, writer)
        finally:
            connections.discard(task)

    ctx = ClusterContext(config.broker_id, host, port, node, None)  # the view comes with start()
    try:
        server = await asyncio.start_server(accept, host, port)
    except OSError as e:
        lock.close()
        raise ClusterBrokerError(f"cannot listen on {host}:{port}: {os.strerror(e.errno) if e.errno else e}") from None
    try:
        await node.start()
    except NodeStartError as e:
        server.close()
        lock.close()
        raise ClusterBrokerError(f"broker {config.broker_id}: {e}") from None
    except Exception as e:  # noqa: BLE001 - kazoo's timeouts and connection errors
        server.close()
        lock.close()
        raise ClusterBrokerError(f"broker {config.broker_id}: cannot reach ZooKeeper at {config.zookeeper}: {e or type(e).__name__}") from None
    ctx.view = node.view
    ctx.serving.set()
    if stop is None:
        stop = asyncio.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            asyncio.get_running_loop().add_signal_handler(sig, stop.set)
    print(f"broker {config.broker_id} serving on {host}:{port}, data in {config.data_dir}", flush=True)
    try:
        await stop.wait()
    finally:
        server.close()
        for task in list(connections):
            task.cancel()
        await asyncio.gather(*connections, return_exceptions=True)
        await node.stop()
        lock.close()


def parse_peers(text: str) -> dict[int, tuple[str, int]]:
    peers = {}
    for item in text.split(","):
        broker, _, address = item.partition("=")
        host, _, port = address.rpartition(":")
        if not (broker.isdigit() and host and port.isdigit()):
            raise ClusterBrokerError(f"--peers: expected ID=HOST:PORT,..., got {item!r}")
        peers[int(broker)] = (host, int(port))
    return peers


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m broker.cluster.server", description="Serve one broker of a coordspec cluster.")
    parser.add_argument("--id", type=int, required=True, help="broker.id")
    parser.add_argument("--peers", required=True, help="every broker of the cluster: ID=HOST:PORT,... (this one included)")
    parser.add_argument("--zookeeper", required=True, help="zookeeper.connect, HOST:PORT[,HOST:PORT...][/chroot]")
    parser.add_argument("--data", type=Path, required=True, help="data directory (one segment file per replica)")
    parser.add_argument("--offsets-partitions", type=int, default=3, help="offsets.topic.num.partitions")
    parser.add_argument("--min-insync-replicas", type=int, default=2, help="min.insync.replicas")
    parser.add_argument("--replica-lag-time-max-ms", type=int, default=ReplicationConfig().replica_lag_time_max_ms)
    parser.add_argument("--zookeeper-session-timeout-ms", type=int, default=6000, help="zookeeper.session.timeout.ms")
    parser.add_argument("--initial-rebalance-delay-ms", type=int, default=3000, help="group.initial.rebalance.delay.ms")
    parser.add_argument("--min-session-timeout-ms", type=int, default=GroupConfig().min_session_timeout_ms, help="group.min.session.timeout.ms")
    parser.add_argument("--trace", type=Path, default=None, help="the JSONL trace of the group protocol (default <data>/trace.jsonl)")
    parser.add_argument("--no-trace", action="store_true", help="write no trace of the group protocol")
    parser.add_argument("--trace-run", default=None, help="the trace's run, the same for every broker (default cluster@<zookeeper>)")
    parser.add_argument("--trace-epoch-ms", type=int, default=0,
                        help="the trace's t_ms counts from this Unix time in ms, the same for every broker (default 0)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        peers = parse_peers(args.peers)
        if args.id not in peers:
            raise ClusterBrokerError(f"--peers does not name broker {args.id}")
        config = NodeConfig(
            args.id, peers, args.zookeeper, args.data, args.offsets_partitions,
            ReplicationConfig(min_insync_replicas=args.min_insync_replicas, replica_lag_time_max_ms=args.replica_lag_time_max_ms,
                              zookeeper_session_timeout_ms=args.zookeeper_session_timeout_ms),
            GroupConfig(initial_rebalance_delay_ms=args.initial_rebalance_delay_ms, min_session_timeout_ms=args.min_session_timeout_ms),
            trace=None if args.no_trace else args.trace or args.data / "trace.jsonl", trace_run=args.trace_run or f"cluster@{args.zookeeper}",
            trace_epoch_ms=args.trace_epoch_ms,
        )
        asyncio.run(serve(config))
    except (ClusterBrokerError, UsageError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        pass
    with contextlib.suppress(OSError):
        print(f"broker {args.id} stopped", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
