"""``coordspec mutants``: how many catalogued bugs the conformance catalog catches, measured
on mutants of the project's broker (conformance/mutants/)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable
from pathlib import Path


def register(commands) -> dict[str, Callable[[argparse.Namespace], int]]:
    parser = commands.add_parser(
        "mutants",
        help="run the conformance catalog against a mutant of the project's broker per "
        "catalogued bug, and print which the catalog catches",
    )
    parser.add_argument(
        "--only", metavar="BUG,...", help="these bugs' mutants only (numbers, e.g. 3,9,13)"
    )
    parser.add_argument(
        "--select",
        nargs="+",
        default=[],
        metavar="SCENARIO-GLOB",
        help="scenarios by name, rule or tag, as conform's --tags (default: the whole catalog)",
    )
    parser.add_argument(
        "--versions",
        default="latest",
        help="version plans per scenario, as conform's --versions (default latest)",
    )
    parser.add_argument("--json", type=Path, metavar="FILE", help="write the verdicts there")
    parser.add_argument(
        "--table",
        action="store_true",
        help="print the recorded table (spec/conformance-power.md) and run nothing",
    )
    return {"mutants": run_command}


def _bugs(only: str | None, known: dict) -> list[int]:
    if only is None:
        return sorted(known)
    try:
        bugs = [int(item) for item in only.split(",") if item.strip()]
    except ValueError:
        bugs = []
    if not bugs or any(b not in known for b in bugs):
        unknown = ", ".join(
            i for i in only.split(",") if not i.strip().isdigit() or int(i) not in known
        )
        raise SystemExit(
            f"coordspec mutants: --only {only}: no mutant for {unknown or 'nothing'} "
            f"(mutants: {','.join(map(str, sorted(known)))})"
        )
    return bugs


def run_command(args: argparse.Namespace) -> int:
    from coordspec.conformance.mutants import catalog, measure, table
    from coordspec.conformance.suite.suite import SuiteError
    from coordspec.conformance.suite.target import TargetError

    if args.table:
        print(table.render(), end="")
        return 0
    try:
        bugs = _bugs(args.only, catalog.BY_BUG)
    except SystemExit as exc:
        print(exc, file=sys.stderr)
        return 2
    verdicts: list[measure.Verdict] = []
    try:
        baseline = measure.measure(
            bugs, args.select, versions=args.versions, out=sys.stdout, verdicts=verdicts
        )
    except SuiteError as exc:
        print(f"coordspec mutants: {exc}", file=sys.stderr)
        return 2
    except (TargetError, RuntimeError) as exc:  # the broker did not start, or answer
        print(f"coordspec mutants: {exc}", file=sys.stderr)
        return 1
    except (KeyboardInterrupt, measure.Interrupted):
        print(f"interrupted after {len(verdicts)} of {len(bugs)} mutants", file=sys.stdout)
        return 130
    print(measure.summary(verdicts))
    if args.json:
        report = {
            "baseline_failing": baseline,
            "verdicts": [
                {
                    "bug": v.bug,
                    "title": catalog.BY_BUG[v.bug].title,
                    "caught": v.caught,
                    "caught_by": v.caught_by,
                    "failed": v.failed,
                    "seconds": round(v.seconds, 1),
                }
                for v in verdicts
            ],
            "summary": measure.summary(verdicts),
        }
        args.json.parent.mkdir(parents=True, exist_ok=True)
        args.json.write_text(json.dumps(report, indent=2) + "\n")
        print(f"wrote {args.json}")
    recorded = [v for v in verdicts if catalog.BY_BUG[v.bug].caught_by and not v.caught]
    for v in recorded:
        print(f"#{v.bug} was caught by {catalog.BY_BUG[v.bug].caught_by}, now missed")
    return 1 if recorded else 0
