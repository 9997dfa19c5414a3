"""The spec-check commands: ``coordspec tla check`` (TLC on tla/, conformance/formal/tlc.py) and
``coordspec assign verify`` (the z3 proofs, conformance/formal/verify.py)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path


def register(commands) -> dict[str, Callable[[argparse.Namespace], int]]:
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
    return {"tla": run_tla_check, "assign": run_assign_verify}


def run_tla_check(args: argparse.Namespace) -> int:
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


def run_assign_verify(args: argparse.Namespace) -> int:
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
