"""The trace commands: ``coordspec trace check``, ``coordspec pipeline``, ``coordspec simulate``,
``coordspec record``. Each has ``add_*_arguments(parser)`` and ``run_*(args) -> exit code``;
the work is done in conformance/tracecheck/, conformance/simulate/ and conformance/trace/.
``main`` is the same four commands on their own: ``python -m coordspec.conformance.tracecheck``,
and the script spark-submit runs (conformance/tracecheck/__main__.py, spec/trace-pipeline.md).

Exit codes: 0 nothing violated, 1 a violation, 2 bad input or a missing dependency (one
line on stderr, no traceback).
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

from coordspec.conformance.cli import security_options
from coordspec.conformance.cli.numbers import NON_NEGATIVE, POSITIVE
from coordspec.conformance.extras import load_kio_without_hypothesis, naming_extras
from coordspec.conformance.simulate.names import BUG_NAMES, CLUSTER_BUG_NAMES, FAULTS


def _add_check_options(parser: argparse.ArgumentParser) -> None:
    add_broker_settings(parser, "the traced broker")
    parser.add_argument(
        "--latency-ms",
        type=NON_NEGATIVE,
        default=None,
        help="how far the writer's clock may run ahead of the broker's (default: 0 for traces of the "
        "reference target and of the broker, 50 otherwise)",
    )
    add_timing_tolerance(parser)


def add_broker_settings(parser: argparse.ArgumentParser, whose: str) -> None:
    """The broker's settings, the same options wherever the oracle models a broker
    (conformance/suite/broker_settings.py reads them)."""
    parser.add_argument(
        "--broker-setting",
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=f"{whose}'s group setting by its Kafka name, where it is not Kafka's default "
        "(repeatable, over --broker-settings-file), e.g. group.initial.rebalance.delay.ms=0",
    )
    parser.add_argument(
        "--broker-settings-file",
        type=Path,
        metavar="FILE",
        help=f"{whose}'s settings as a Java properties file (as Kafka's server.properties; "
        "settings other than the group coordinator's are ignored)",
    )


def add_timing_tolerance(parser: argparse.ArgumentParser) -> None:
    """GM-36's tolerance, the same option for the trace check and ``coordspec conform``
    (None: the oracle's ``TIMING_TOLERANCE_MS``, not imported here to keep the parser light)."""
    parser.add_argument(
        "--timing-tolerance-ms",
        type=NON_NEGATIVE,
        default=None,
        metavar="MS",
        help="how much later than the reference's deadline, beyond the latency, an answer may "
        "come before it is a timing violation (GM-36; default 1 s, spec/group-membership.md)",
    )


def settings_from(args: argparse.Namespace):
    """Raises ``SettingsError`` with one line."""
    from coordspec.conformance.suite.broker_settings import overrides
    from coordspec.conformance.tracecheck.replay import Settings
    from coordspec.conformance.tracecheck.scenarios import scenario_settings

    timing = (
        {}
        if args.timing_tolerance_ms is None
        else {"timing_tolerance_ms": args.timing_tolerance_ms}
    )
    return Settings(
        config=overrides(args),
        scenarios=scenario_settings(),
        latency_ms=args.latency_ms,
        **timing,
    )


def add_trace_check_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "files",
        nargs="+",
        metavar="FILE",
        help="trace files (JSONL, .gz allowed) or directories of them",
    )
    _add_check_options(parser)
    parser.add_argument(
        "--report",
        type=Path,
        default=None,
        help="also write trace-check.md and trace-check.html here",
    )


def run_trace_check(args: argparse.Namespace) -> int:
    from coordspec.conformance.trace.format import TraceError
    from coordspec.conformance.tracecheck import summary
    from coordspec.conformance.tracecheck.check import check_files
    from coordspec.reference.properties import SettingsError

    try:
        findings = check_files(args.files, settings_from(args))
    except (TraceError, SettingsError) as exc:
        print(f"coordspec trace check: {exc}", file=sys.stderr)
        return 2
    print(summary.console(findings))
    if args.report is not None:
        try:
            for path in summary.write(findings, args.report):
                print(f"wrote {path}")
        except OSError as exc:
            print(f"coordspec trace check: cannot write the report: {exc}", file=sys.stderr)
            return 2
    return findings.exit_code


def add_pipeline_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--input",
        nargs="+",
        required=True,
        metavar="PATH",
        help="trace files (JSONL, .gz allowed) or directories of them",
    )
    parser.add_argument(
        "--output",
        type=Path,
        required=True,
        metavar="DIR",
        help="where violations/ and coverage/ (Parquet) and trace-check.md/.html go",
    )
    parser.add_argument(
        "--master",
        default=None,
        help="Spark master URL (default local[*]; under spark-submit, spark-submit's --master)",
    )
    parser.add_argument(
        "--partitions",
        type=int,
        default=None,
        help="shuffle partitions (default: about 32 MB of trace text each, at least 2 per core)",
    )
    _add_check_options(parser)


def run_pipeline(args: argparse.Namespace) -> int:
    from coordspec.conformance.tracecheck import pipeline, summary
    from coordspec.reference.properties import SettingsError

    try:
        findings = pipeline.run_pipeline(
            args.input, args.output, args.master, settings_from(args), args.partitions
        )
    except (pipeline.PipelineError, SettingsError) as exc:
        print(f"coordspec pipeline: {exc}", file=sys.stderr)
        return 2
    print(summary.console(findings))
    print(
        f"wrote {args.output}/violations, {args.output}/coverage (Parquet), {args.output}/trace-check.md, .html"
    )
    return findings.exit_code


def _faults(text: str) -> tuple[str, ...]:
    chosen = tuple(f for f in text.split(",") if f and f != "none")
    unknown = [f for f in chosen if f not in FAULTS]
    if unknown:
        raise argparse.ArgumentTypeError(
            f"unknown fault {unknown[0]!r} (faults: {', '.join(FAULTS)}, or none)"
        )
    return chosen


def add_simulate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--runs",
        type=POSITIVE,
        required=True,
        help="number of runs (a group each, or a cluster with --cluster)",
    )
    parser.add_argument("--seed", type=int, default=0, help="run i uses seed SEED+i (default 0)")
    parser.add_argument(
        "--faults",
        type=_faults,
        default=FAULTS,
        metavar="F,F",
        help=f"faults to inject: {', '.join(FAULTS)} (default all), or none",
    )
    parser.add_argument(
        "--bug",
        choices=BUG_NAMES + CLUSTER_BUG_NAMES,
        default=None,
        help=f"plant a bug: in what clients hear, or with --cluster in replication ({', '.join(CLUSTER_BUG_NAMES)})",
    )
    parser.add_argument(
        "--cluster",
        action="store_true",
        help="simulate whole clusters (3 brokers, offsets partitions, coordinator moves) and check partitions too",
    )
    parser.add_argument(
        "--clients", type=POSITIVE, default=3, help="consumers per group (default 3)"
    )
    parser.add_argument(
        "--steps", type=POSITIVE, default=60, help="schedule steps per run (default 60)"
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=Path("out/simulate"),
        help="where the traces go (default out/simulate)",
    )
    parser.add_argument("--spark", action="store_true", help="spread the runs over Spark executors")
    parser.add_argument(
        "--master", default=None, help="Spark master URL with --spark (default local[*])"
    )


def run_simulate(args: argparse.Namespace) -> int:
    import tempfile

    from coordspec.conformance.simulate import groups
    from coordspec.conformance.tracecheck import pipeline

    if args.bug in CLUSTER_BUG_NAMES and not args.cluster:
        print(
            f"coordspec simulate: --bug {args.bug} is a replication bug: it needs --cluster",
            file=sys.stderr,
        )
        return 2
    options = groups.Options(
        clients=args.clients,
        steps=args.steps,
        faults=args.faults,
        bug=args.bug,
        cluster=args.cluster,
    )
    try:
        if args.spark:
            with tempfile.TemporaryDirectory(prefix="coordspec-spark-") as tmp:
                spark = pipeline.session(args.master, Path(tmp), sys.stderr)
                try:
                    results, wall = groups.simulate(args.runs, args.seed, options, args.out, spark)
                finally:
                    spark.stop()
        else:
            results, wall = groups.simulate(args.runs, args.seed, options, args.out)
    except pipeline.PipelineError as exc:
        print(f"coordspec simulate: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:
        print(
            f"coordspec simulate: cannot write {args.out}: {exc.strerror or exc}", file=sys.stderr
        )
        return 2
    print(groups.report(results, options, wall, args.out))
    return 1 if any(r.violations or r.invariant for r in results) else 0


def add_record_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--listen",
        required=True,
        metavar="HOST:PORT",
        help="where clients connect (the bootstrap server)",
    )
    parser.add_argument(
        "--upstream", required=True, metavar="HOST:PORT", help="the broker (cluster) to forward to"
    )
    parser.add_argument(
        "--out", type=Path, required=True, metavar="FILE", help="the trace to append to"
    )
    security_options.add_arguments(parser, "the upstream connections")


def run_record(args: argparse.Namespace) -> int:
    import asyncio

    from coordspec.conformance.security import SecurityError, load
    from coordspec.conformance.trace import proxy

    try:
        proxy.address(args.listen), proxy.address(args.upstream)
        security = load(args.command_config, args.command_property)
        print(
            f"recording {args.listen} -> {args.upstream} ({security.protocol}) into {args.out} "
            "(Ctrl-C stops)",
            file=sys.stderr,
        )
        asyncio.run(proxy.serve(args.listen, args.upstream, args.out, security=security))
    except KeyboardInterrupt:
        return 0
    except (ValueError, OSError, SecurityError) as exc:
        print(f"coordspec record: {exc}", file=sys.stderr)
        return 2
    return 0


COMMANDS = {
    "check": run_trace_check,
    "pipeline": run_pipeline,
    "simulate": run_simulate,
    "record": run_record,
}


def register(commands) -> dict[str, Callable[[argparse.Namespace], int]]:
    trace = commands.add_parser("trace", help="recorded traces: check them against the reference")
    trace_commands = trace.add_subparsers(dest="trace_command", metavar="SUBCOMMAND", required=True)
    add_trace_check_arguments(
        trace_commands.add_parser(
            "check", help="replay trace files through the oracle on one machine"
        )
    )
    add_pipeline_arguments(
        commands.add_parser(
            "pipeline",
            help="the trace check as a PySpark job (local[*], --master, or spark-submit)",
        )
    )
    add_simulate_arguments(
        commands.add_parser(
            "simulate",
            help="seeded simulated groups, or whole clusters with --cluster, on the reference, with faults and planted bugs, "
            "written as traces and checked",
        )
    )
    add_record_arguments(
        commands.add_parser(
            "record", help="a Kafka-protocol proxy that records the group protocol as a trace"
        )
    )
    runners = dict(COMMANDS)
    runners["trace"] = runners.pop("check")  # coordspec trace check
    return runners


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m coordspec.conformance.tracecheck")
    commands = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_trace_check_arguments(
        commands.add_parser("check", help="check trace files against the reference")
    )
    add_pipeline_arguments(commands.add_parser("pipeline", help="the same check as a PySpark job"))
    add_simulate_arguments(
        commands.add_parser("simulate", help="seeded simulated groups on the reference, checked")
    )
    add_record_arguments(
        commands.add_parser("record", help="a proxy recording the group protocol as a trace")
    )
    args = parser.parse_args(argv)
    load_kio_without_hypothesis()
    try:
        return naming_extras(f"{parser.prog} {args.command}", lambda: COMMANDS[args.command](args))
    except BrokenPipeError:  # the output went to a pager or head that stopped reading
        return 1
