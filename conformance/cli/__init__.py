"""The ``coordspec`` command line: parse, call, print. Each command family registers its
parsers and runners from its own module (conform, trace, formal, cluster); the work is
done in the rooms. Building the parser imports no room, so every command starts fast."""

from __future__ import annotations

import argparse
import errno
import signal
import sys
from collections.abc import Callable
from pathlib import Path

from coordspec.conformance.cli import cluster, conform, formal, isolated, mutants, trace
from coordspec.conformance.extras import load_kio_without_hypothesis, naming_extras
from coordspec.reference.errors import UsageError

Runners = dict[str, Callable[[argparse.Namespace], int]]


def _register_demo(commands) -> Runners:
    demo = commands.add_parser(
        "demo",
        help="replay a consumer-group session through the reference, with invariants checked",
    )
    demo.add_argument("--seed", type=int, default=1, help="seed for member ids (default 1)")
    demo.add_argument("--quiet", action="store_true", help="print only the summary")
    return {"demo": _run_demo}


def _run_demo(args: argparse.Namespace) -> int:
    from coordspec.conformance.cli.demo import run_demo

    return run_demo(seed=args.seed, quiet=args.quiet)


def _register_diagram(commands) -> Runners:
    diagram = commands.add_parser(
        "diagram", help="render the group state machine into spec/ (SVG via Graphviz)"
    )
    diagram.add_argument(
        "--out", type=Path, default=Path("spec"), help="directory to write into (default: spec)"
    )
    return {"diagram": _run_diagram}


def _run_diagram(args: argparse.Namespace) -> int:
    from coordspec.conformance.cli.diagram import GraphvizMissing, render

    try:
        for path in render(args.out):
            print(f"wrote {path}")
    except GraphvizMissing as exc:
        print(f"coordspec diagram: {exc}", file=sys.stderr)
        return 2
    return 0


# In the order --help lists the commands.
REGISTRARS = (
    _register_demo,
    _register_diagram,
    formal.register,
    conform.register,
    mutants.register,
    trace.register,
    cluster.register,
)


def _has_children(args: argparse.Namespace) -> bool:
    """Work in processes of its own (see ``isolated``): z3's pool, Spark."""
    return args.command in ("assign", "pipeline") or (args.command == "simulate" and args.spark)


def _name(args: argparse.Namespace) -> str:
    sub = getattr(args, f"{args.command}_command", None)
    return f"{args.command} {sub}" if sub else args.command


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    load_kio_without_hypothesis()
    if argv[:1] == ["broker"]:
        return cluster.serve_broker(argv[1:])
    parser = argparse.ArgumentParser(
        prog="coordspec",
        description="A formally-checked reference of Kafka's coordination protocols, and a conformance kit.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    runners: Runners = {}
    for register in REGISTRARS:
        runners.update(register(commands))
    args = parser.parse_args(argv)
    if args.command not in runners:
        parser.print_help()
        return 2
    # Ctrl-C stops any command, also one started as a background job of a shell without job
    # control: such a shell passes SIGINT on ignored, and Python keeps it so.
    if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    if _has_children(args) and isolated.wanted():
        return isolated.run(argv, _name(args))
    try:
        return naming_extras(f"coordspec {_name(args)}", lambda: runners[args.command](args))
    except UsageError as exc:
        print(f"coordspec {_name(args)}: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # a path that is a file, a directory that cannot be made ...
        where = f"{exc.filename}: " if exc.filename else ""
        what = exc.strerror or str(exc)
        if exc.errno == errno.EEXIST and exc.filename and Path(exc.filename).is_file():
            what = "is a file, not a directory"
        print(f"coordspec {args.command}: {where}{what}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"coordspec {_name(args)}: interrupted", file=sys.stderr)
        return 130
