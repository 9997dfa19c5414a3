"""The trace check on one machine and on Spark (local[1], local[2]), side by side.

    .venv/bin/python benchmarks/pipeline_scale.py [--events 10000000] [--files 8] [--base-runs 200]

Traces come from the simulator (``coordspec simulate``: three consumers per group, crashes,
pauses, coordinator restarts): ``--base-runs`` runs are simulated once, then copied under new
group and run names until there are ``--events`` events, spread over ``--files`` files (a
fleet's logs). Each checker then checks all of them; the one-machine checker runs in this
process, the pipeline on Spark with one and with two executor cores. Printed: events/s for
each, the job time without Spark's start-up (the JVM, and a warm-up job that starts the
Python workers), and the ratios to the single process.
Issue 7's goal: the pipeline on local[2] at least 1.6x the single process at 10M events.
"""

from __future__ import annotations

import argparse
import io
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from conformance.tracecheck import pipeline, simulate
from conformance.tracecheck.check import check_files
from conformance.tracecheck.replay import Settings


def generate(directory: Path, events: int, files: int, base_runs: int) -> int:
    """Trace files holding about ``events`` events; the number written."""
    base = directory / "base"
    results, _ = simulate.simulate(base_runs, 0, simulate.Options(), base)
    text = (base / "sim-00000.jsonl").read_text().splitlines(keepends=True)
    runs = [(f"sim-{r.seed}", [line for line in text if f'"run":"sim-{r.seed}"' in line]) for r in results]
    outs = [(directory / "traces" / f"part-{i:03d}.jsonl") for i in range(files)]
    outs[0].parent.mkdir(parents=True)
    handles = [p.open("w", encoding="utf-8") for p in outs]
    written, copy = 0, 0
    while written < events:
        for name, lines in runs:
            renamed = f"{name}x{copy}"
            handles[copy % files].writelines(line.replace(f'"{name}"', f'"{renamed}"') for line in lines)
            written += len(lines)
            copy += 1
            if written >= events:
                break
    for handle in handles:
        handle.close()
    return written


def spark_run(traces: Path, master: str, work: Path) -> tuple[float, float, int]:
    """(start-up seconds, job seconds, violations) on ``master``. Start-up includes a small
    warm-up job, which starts the Python workers and their imports."""
    started = time.perf_counter()
    spark = pipeline.session(master, work, io.StringIO())
    warm = work / "warm-up.jsonl"
    warm.write_text("".join((work / "base" / "sim-00000.jsonl").read_text().splitlines(keepends=True)[:500]))
    pipeline.run_pipeline([str(warm)], work / "out-warm-up", settings=Settings(), spark=spark, out=io.StringIO())
    up = time.perf_counter() - started
    try:
        started = time.perf_counter()
        findings = pipeline.run_pipeline([str(traces)], work / f"out-{master}", settings=Settings(), spark=spark,
                                         out=io.StringIO())
        return up, time.perf_counter() - started, len(findings.violations)
    finally:
        spark.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--base-runs", type=int, default=200)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="coordspec-bench-") as tmp:
        work = Path(tmp)
        started = time.perf_counter()
        events = generate(work, args.events, args.files, args.base_runs)
        print(f"generated {events:,} events in {args.files} files in {time.perf_counter() - started:.1f} s")
        started = time.perf_counter()
        local = check_files([work / "traces"], Settings(), out=io.StringIO())
        single = time.perf_counter() - started
        rows = [("one process", 0.0, single, len(local.violations))]
        for master in ("local[1]", "local[2]"):
            rows.append((f"Spark {master}", *spark_run(work / "traces", master, work)))
        print(f"{'checker':<16}{'start-up s':>12}{'job s':>10}{'events/s':>12}{'vs one process':>16}{'violations':>12}")
        for name, up, job, violations in rows:
            print(f"{name:<16}{up:>12.1f}{job:>10.1f}{events / job:>12,.0f}{single / job:>15.2f}x{violations:>12}")


if __name__ == "__main__":
    main()
