"""The ``coordspec`` command line."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from reference.errors import UsageError


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="coordspec",
        description="A formally-checked reference of Kafka's coordination protocols, and a conformance kit.",
    )
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")

    demo = commands.add_parser("demo", help="replay a consumer-group session through the reference, with invariants checked")
    demo.add_argument("--seed", type=int, default=1, help="seed for member ids (default 1)")
    demo.add_argument("--quiet", action="store_true", help="print only the summary")

    diagram = commands.add_parser("diagram", help="render the group state machine into spec/ (SVG via Graphviz)")
    diagram.add_argument("--out", type=Path, default=Path("spec"), help="directory to write into (default: spec)")

    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from conformance.demo import run_demo

            return run_demo(seed=args.seed, quiet=args.quiet)
        if args.command == "diagram":
            from conformance.diagram import GraphvizMissing, render

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


if __name__ == "__main__":
    sys.exit(main())
