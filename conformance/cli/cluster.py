"""The commands that serve brokers: ``coordspec broker``, ``coordspec cluster up`` and
``coordspec zookeeper up``. This is the one module of the command line that starts broker/;
it imports it only when one of these commands runs."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from pathlib import Path


def serve_broker(argv: list[str]) -> int:
    """``coordspec broker``: its options are the broker's own (python -m coordspec.broker.server)."""
    from coordspec.broker.server import main

    return main(argv, prog="coordspec broker")


def register(commands) -> dict[str, Callable[[argparse.Namespace], int]]:
    # Listed for --help only: main() hands "broker" to serve_broker before parsing.
    commands.add_parser(
        "broker",
        help="serve one broker over Kafka's wire protocol: the reference group coordinator on real "
        "time, on-disk logs, a JSONL trace (coordspec broker --help)",
    )

    cluster_parser = commands.add_parser(
        "cluster", help="a cluster of brokers on a real ZooKeeper, on 127.0.0.1"
    )
    cluster_commands = cluster_parser.add_subparsers(
        dest="cluster_command", metavar="SUBCOMMAND", required=True
    )
    cluster_up = cluster_commands.add_parser(
        "up", help="start ZooKeeper (unless given) and the brokers; serve until Ctrl-C"
    )
    cluster_up.add_argument("--brokers", type=int, default=3, help="number of brokers (default 3)")
    cluster_up.add_argument(
        "--zookeeper",
        metavar="HOST:PORT[/CHROOT]",
        help="an existing ZooKeeper to use instead of starting one",
    )
    # As coordspec.broker.settings.add_arguments, which this module does not import to build
    # the parser (every command would pay for importing broker/).
    cluster_up.add_argument(
        "--broker-config",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Kafka broker setting by its Kafka name, for every broker (repeatable; over "
        "--broker-config-file); the settings and their defaults: coordspec broker --help",
    )
    cluster_up.add_argument(
        "--broker-config-file",
        type=Path,
        metavar="FILE",
        help="Kafka broker settings as a Java properties file (as Kafka's server.properties)",
    )
    cluster_up.add_argument(
        "--data", type=Path, help="data directory (default: ./coordspec-cluster-<pid>)"
    )
    cluster_up.add_argument(
        "--security-config",
        type=Path,
        metavar="FILE",
        help="secure the clients' listeners (one more port per broker) with TLS and SASL SCRAM, "
        "by Kafka's names: security.protocol, ssl.keystore.location (PEM certificate and key), "
        "sasl.enabled.mechanisms; coordspec broker --help says more",
    )
    cluster_up.add_argument(
        "--users",
        type=Path,
        metavar="FILE",
        help="SASL users, NAME=PASSWORD lines: their SCRAM-SHA-256/512 credentials are stored "
        "in ZooKeeper as Kafka stores them (/config/users/NAME)",
    )

    zookeeper_parser = commands.add_parser(
        "zookeeper", help="real ZooKeeper (Debian's package) on 127.0.0.1"
    )
    zookeeper_commands = zookeeper_parser.add_subparsers(
        dest="zookeeper_command", metavar="SUBCOMMAND", required=True
    )
    zookeeper_up = zookeeper_commands.add_parser(
        "up", help="serve a standalone server or an ensemble until Ctrl-C"
    )
    zookeeper_up.add_argument(
        "--nodes", type=int, default=1, help="ensemble size (default 1: standalone)"
    )
    zookeeper_up.add_argument(
        "--tick-ms", type=int, default=500, help="ZooKeeper tickTime in ms (default 500)"
    )
    zookeeper_up.add_argument(
        "--keep", action="store_true", help="keep the data and log directory on exit"
    )
    return {"cluster": run_cluster_up, "zookeeper": run_zookeeper_up}


def _say(line: str) -> None:
    print(line, flush=True)


def run_cluster_up(args: argparse.Namespace) -> int:
    from coordspec.broker.cluster.launcher import up

    return up(
        args.brokers,
        args.zookeeper,
        args.data,
        args.broker_config,
        args.broker_config_file,
        say=_say,
        security_config=args.security_config,
        users_file=args.users,
    )


def run_zookeeper_up(args: argparse.Namespace) -> int:
    from coordspec.broker.zookeeper.process import serve

    return serve(args.nodes, tick_time_ms=args.tick_ms, keep=args.keep, say=_say)
