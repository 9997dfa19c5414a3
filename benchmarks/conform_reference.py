"""The conformance catalog on the reference target, run as a user runs it.

    .venv/bin/python benchmarks/conform_reference.py [--repeat 3]

Runs the console command ``coordspec conform --target reference`` (the one installed
beside this Python) ``--repeat`` times, one after another, and prints for each run the
suite's wall time (from its summary line: first run to last), the command's own time
(with the interpreter's start and the imports), and the run count. Then the medians,
and whether the suite's median wall is under the goal.

Goal (issue 18): the catalog on the reference target in < 5 s wall. Exits 1 if any
command fails or any run of the catalog does not pass; 2 if the command is missing.
"""

from __future__ import annotations

import argparse
import re
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

GOAL_S = 5.0
SUMMARY = re.compile(
    r"^(?P<runs>\d+) runs: (?P<passed>\d+) passed, (?P<failed>\d+) failed, "
    r"(?P<allowed>\d+) allowed, (?P<errors>\d+) errors, (?P<not_run>\d+) not run; "
    r"wall (?P<wall>[\d.]+) s",
    re.MULTILINE,
)


def command() -> str | None:
    beside = Path(sys.executable).parent / "coordspec"
    return str(beside) if beside.exists() else shutil.which("coordspec")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repeat", type=int, default=3, help="runs of the catalog (default 3)")
    args = parser.parse_args()
    if args.repeat < 1:
        parser.error("--repeat must be at least 1")
    coordspec = command()
    if coordspec is None:
        print("conform_reference: no coordspec command (pip install -e .)", file=sys.stderr)
        return 2

    walls, elapsed, ok = [], [], True
    for attempt in range(1, args.repeat + 1):
        began = time.perf_counter()
        done = subprocess.run(
            [coordspec, "conform", "--target", "reference"],
            check=False,
            capture_output=True,
            text=True,
        )
        elapsed.append(time.perf_counter() - began)
        summary = SUMMARY.search(done.stdout)
        if summary is None:
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            print(f"  run {attempt}: exit {done.returncode}, no summary line: {tail[0]}")
            ok = False
            continue
        counts = {k: int(v) for k, v in summary.groupdict().items() if k != "wall"}
        walls.append(float(summary["wall"]))
        passed = counts["passed"] == counts["runs"]
        ok = ok and passed and done.returncode == 0
        print(
            f"  run {attempt}: suite wall {walls[-1]:.2f} s, command {elapsed[-1]:.2f} s, "
            f"{counts['runs']:,} runs: {counts['passed']:,} passed, {counts['failed']} failed, "
            f"{counts['errors']} errors, {counts['not_run']} not run (exit {done.returncode})",
            flush=True,
        )
    if walls:
        wall = statistics.median(walls)
        print()
        print(
            f"median: suite wall {wall:.2f} s, command {statistics.median(elapsed):.2f} s "
            f"over {len(walls)} run(s)"
        )
        met = ok and wall < GOAL_S  # a failing catalog meets no goal
        print(f"goal: suite wall < {GOAL_S:g} s, every run passed: {'met' if met else 'NOT met'}")
    if not ok:
        print("conform_reference: a run failed", file=sys.stderr)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
