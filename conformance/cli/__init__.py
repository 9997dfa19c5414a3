"""The ``coordspec`` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from coordspec.reference.errors import UsageError


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == [
        "broker"
    ]:  # its options are the broker's own (python -m coordspec.broker.server)
        from coordspec.broker.server import main as serve_broker

        return serve_broker(argv[1:], prog="coordspec broker")
    parser = argparse.ArgumentParser(
        prog="coordspec",
        description="A formally-checked reference of Kafka's coordination protocols, and a conformance kit.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser(
        "demo",
        help="replay a consumer-group session through the reference, with invariants checked",
    )
    demo.add_argument("--seed", type=int, default=1, help="seed for member ids (default 1)")
    demo.add_argument("--quiet", action="store_true", help="print only the summary")

    diagram = commands.add_parser(
        "diagram", help="render the group state machine into spec/ (SVG via Graphviz)"
    )
    diagram.add_argument(
        "--out", type=Path, default=Path("spec"), help="directory to write into (default: spec)"
    )

    tla = commands.add_parser("tla", help="model-check the TLA+ specs in tla/ with TLC")
    tla_commands = tla.add_subparsers(dest="tla_command", metavar="SUBCOMMAND", required=True)
    tla_check = tla_commands.add_parser(
        "check", help="run TLC on each spec at its bounds, and on every mutant"
    )
    tla_check.add_argument(
        "specs", nargs="*", metavar="SPEC", help="spec names (default: all in tla/)"
    )
    tla_check.add_argument(
        "--deep", action="store_true", help="use the larger bounds of MC<SPEC>_deep.cfg"
    )
    tla_check.add_argument("--workers", type=int, default=1, help="TLC worker threads (default 1)")
    tla_check.add_argument("--no-mutants", action="store_true", help="skip the mutants")
    tla_check.add_argument(
        "--out", type=Path, default=Path("out/tla"), help="where counterexamples are written"
    )

    assign = commands.add_parser("assign", help="assignors: z3 proofs and measurements")
    assign_commands = assign.add_subparsers(
        dest="assign_command", metavar="SUBCOMMAND", required=True
    )
    assign_verify = assign_commands.add_parser(
        "verify",
        help="prove assignor validity for every input up to the bounds, measure stickiness against "
        "z3's optimum, prove the fencing of versioned writes by k-induction",
    )
    assign_verify.add_argument(
        "--members", type=int, default=4, help="group size bound (default 4)"
    )
    assign_verify.add_argument("--topics", type=int, default=3, help="number of topics (default 3)")
    assign_verify.add_argument(
        "--max-partitions", type=int, default=6, help="partitions per topic, 1..N (default 6)"
    )
    assign_verify.add_argument(
        "--cases", type=int, default=300, help="membership changes for stickiness (default 300)"
    )
    assign_verify.add_argument(
        "--k", type=int, default=3, help="induction depth for fencing (default 3)"
    )
    assign_verify.add_argument(
        "--workers", type=int, default=None, help="worker processes (default: up to 2)"
    )
    assign_verify.add_argument(
        "--seed", type=int, default=0, help="seed for the generated membership changes"
    )

    from coordspec.conformance.suite import add_arguments as add_conform_arguments

    conform = commands.add_parser(
        "conform",
        help="check a Kafka-protocol broker (default: the reference) against the conformance scenarios",
    )
    add_conform_arguments(conform)

    from coordspec.conformance.tracecheck import cli as tracecheck

    trace = commands.add_parser("trace", help="recorded traces: check them against the reference")
    trace_commands = trace.add_subparsers(dest="trace_command", metavar="SUBCOMMAND", required=True)
    tracecheck.add_trace_check_arguments(
        trace_commands.add_parser(
            "check", help="replay trace files through the oracle on one machine"
        )
    )
    tracecheck.add_pipeline_arguments(
        commands.add_parser(
            "pipeline",
            help="the trace check as a PySpark job (local[*], --master, or spark-submit)",
        )
    )
    tracecheck.add_simulate_arguments(
        commands.add_parser(
            "simulate",
            help="seeded simulated groups, or whole clusters with --cluster, on the reference, with faults and planted bugs, "
            "written as traces and checked",
        )
    )
    tracecheck.add_record_arguments(
        commands.add_parser(
            "record", help="a Kafka-protocol proxy that records the group protocol as a trace"
        )
    )

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
    cluster_up.add_argument(
        "--offsets-partitions",
        type=int,
        default=3,
        help="__consumer_offsets partitions (default 3)",
    )
    cluster_up.add_argument(
        "--data", type=Path, help="data directory (default: ./coordspec-cluster-<pid>)"
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

    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from coordspec.conformance.cli.demo import run_demo

            return run_demo(seed=args.seed, quiet=args.quiet)
        if args.command == "tla":
            from coordspec.conformance.formal.tlc import TlcError, check, summary

            try:
                verdicts = check(
                    args.specs,
                    deep=args.deep,
                    workers=args.workers,
                    mutants=not args.no_mutants,
                    out=args.out,
                )
            except TlcError as exc:
                print(f"coordspec tla check: {exc}", file=sys.stderr)
                return 2
            print(summary(verdicts))
            failed = [v.label for v in verdicts if not v.ok]
            print(
                f"coordspec tla check: {len(verdicts) - len(failed)} passed, {len(failed)} failed"
                + (f" ({', '.join(failed)})" if failed else "")
            )
            return 1 if failed else 0
        if args.command == "assign":
            from coordspec.conformance.formal.verify import verify

            return verify(
                args.members,
                args.topics,
                args.max_partitions,
                args.cases,
                args.k,
                args.workers,
                args.seed,
            )
        if args.command == "conform":
            from coordspec.conformance.suite import run_command

            return run_command(args)
        if args.command in ("trace", "pipeline", "simulate", "record"):
            run = {
                "trace": tracecheck.run_trace_check,
                "pipeline": tracecheck.run_pipeline,
                "simulate": tracecheck.run_simulate,
                "record": tracecheck.run_record,
            }[args.command]
            return run(args)
        if args.command == "cluster":
            from coordspec.broker.cluster.launcher import up

            return up(
                args.brokers,
                args.zookeeper,
                args.data,
                args.offsets_partitions,
                say=lambda line: print(line, flush=True),
            )
        if args.command == "zookeeper":
            from coordspec.broker.zookeeper.process import serve

            return serve(
                args.nodes,
                tick_time_ms=args.tick_ms,
                keep=args.keep,
                say=lambda line: print(line, flush=True),
            )
        if args.command == "diagram":
            from coordspec.conformance.cli.diagram import GraphvizMissing, render

            try:
                for path in render(args.out):
                    print(f"wrote {path}")
            except GraphvizMissing as exc:
                print(f"coordspec diagram: {exc}", file=sys.stderr)
                return 2
            return 0
        parser.print_help()
        return 2
    except UsageError as exc:
        print(f"coordspec {args.command}: {exc}", file=sys.stderr)
        return 2
