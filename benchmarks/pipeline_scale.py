"""The trace check on one machine and on Spark (local[1], local[2]), side by side.

    .venv/bin/python benchmarks/pipeline_scale.py [--events 10000000] [--files 8] [--workdir DIR]

Traces come from the simulator (``coordspec simulate``: three consumers per group, crashes,
pauses, coordinator restarts; a few runs with the ``stale-commit`` bug planted, so there
are violations to agree on): the base runs are simulated once, then copied under new group
and run names until there are ``--events`` events, spread over ``--files`` files (a fleet's
logs), written by one process per core. The traces stay in ``--workdir`` (about 434 bytes
an event: 4.34 GB at 10M) and are reused by the next run with the same sizes.

Each checker then checks all of them: the one-machine checker in this process, the pipeline
on Spark with one and with two executor cores. Printed: the job time (for Spark without its
start-up: the JVM and a warm-up job that starts the Python workers), events/s, the ratio to
the one process, and CPU seconds (this process for the one machine; the JVM and its Python
workers for Spark), which a machine shared with other work does not distort as it does the
wall clock, and the cores each got on average (CPU over job time). The run fails unless all
checkers agree on events, groups, unchecked events, violations (by rule) and coverage.
Issue 7's goal: the pipeline on local[2] at least 1.6x the single process at 10M events.
"""

from __future__ import annotations

import argparse
import io
import json
import multiprocessing
import os
import shutil
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from coordspec.conformance.simulate import groups
from coordspec.conformance.tracecheck import pipeline
from coordspec.conformance.tracecheck.check import check_files
from coordspec.conformance.tracecheck.replay import Settings
from coordspec.conformance.tracecheck.summary import Findings

BUGGED_EVERY = 20  # one base run in 20 has a planted bug


def base_runs(directory: Path, runs: int) -> list[tuple[str, list[str]]]:
    """Simulated runs as (group id, trace lines): run ``sim-<seed>-<token>`` is group ``sim-<seed>``."""
    bugged = max(1, runs // BUGGED_EVERY)
    clean, _ = groups.simulate(runs - bugged, 0, groups.Options(), directory / "clean")
    buggy, _ = groups.simulate(
        bugged, runs - bugged, groups.Options(bug="stale-commit"), directory / "bug"
    )
    by_group: dict[str, list[str]] = {}
    for d in ("clean", "bug"):
        for line in (directory / d / "sim-00000.jsonl").read_text().splitlines(keepends=True):
            by_group.setdefault(json.loads(line)["group_id"], []).append(line)
    named = [(f"sim-{r.seed}", by_group.get(f"sim-{r.seed}", [])) for r in clean + buggy]
    empty = [name for name, lines in named if not lines]
    if empty:  # copying nothing would never reach --events
        raise SystemExit(
            f"pipeline_scale: the simulator wrote no events for group(s) {', '.join(empty[:5])}"
        )
    return named


def write_part(path: Path, runs: list[tuple[str, list[str]]], copies: list[int]) -> None:
    """Copy ``copies`` (copy c is base run c mod len(runs), its group renamed ``<group>x<c>``) to ``path``."""
    with path.open("w", encoding="utf-8") as out:
        for c in copies:
            name, lines = runs[c % len(runs)]
            out.writelines(line.replace(f'"{name}"', f'"{name}x{c}"') for line in lines)


def generate(workdir: Path, events: int, files: int, runs: int) -> tuple[Path, int]:
    """The traces directory for these sizes (made unless a finished one is there) and its events."""
    traces = workdir / f"traces-{events}-events-{files}-files-{runs}-runs"
    done = traces / "EVENTS"
    if done.is_file():
        return traces, int(done.read_text())
    shutil.rmtree(traces, ignore_errors=True)
    traces.mkdir(parents=True)
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        base = base_runs(Path(tmp), runs)
    plan: list[list[int]] = [[] for _ in range(files)]
    written, c = 0, 0
    while written < events:
        plan[c % files].append(c)
        written += len(base[c % len(base)][1])
        c += 1
    with multiprocessing.get_context("fork").Pool(os.cpu_count()) as pool:
        pool.starmap(
            write_part,
            [(traces / f"part-{i:03d}.jsonl", base, copies) for i, copies in enumerate(plan)],
        )
    (workdir / "warm-up.jsonl").write_text("".join(base[0][1] + base[-1][1]))
    done.write_text(str(written))
    return traces, written


def tree_cpu_s(pid: int) -> float:
    """CPU seconds of a process and its descendants, living and reaped."""
    parents, cpu = {}, {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue  # gone meanwhile
        child = int(stat.parent.name)
        parents[child] = int(fields[1])
        cpu[child] = sum(int(f) for f in fields[11:15])  # utime, stime, cutime, cstime
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        total += cpu.get(p, 0)
        todo.extend(c for c, parent in parents.items() if parent == p)
    return total / os.sysconf("SC_CLK_TCK")


def one_process(traces: Path) -> tuple[float, float, float, Findings]:
    """(start-up, job seconds, CPU seconds, findings) of the one-machine checker."""
    wall, cpu = time.perf_counter(), time.process_time()
    findings = check_files([traces], Settings(), out=io.StringIO())
    return 0.0, time.perf_counter() - wall, time.process_time() - cpu, findings


def on_spark(traces: Path, master: str, workdir: Path) -> tuple[float, float, float, Findings]:
    """(start-up, job seconds, CPU seconds, findings) on ``master``. Start-up includes a small
    warm-up job, which starts the Python workers and their imports."""
    started = time.perf_counter()
    with tempfile.TemporaryDirectory(dir=workdir) as tmp:
        spark = pipeline.session(master, Path(tmp), io.StringIO())
        try:
            pipeline.run_pipeline(
                [str(workdir / "warm-up.jsonl")],
                Path(tmp) / "warm-up",
                spark=spark,
                out=io.StringIO(),
            )
            up = time.perf_counter() - started
            jvm = spark.sparkContext._gateway.proc.pid
            wall, cpu = time.perf_counter(), tree_cpu_s(jvm) + time.process_time()
            findings = pipeline.run_pipeline(
                [str(traces)], Path(tmp) / "out", spark=spark, out=io.StringIO()
            )
            return (
                up,
                time.perf_counter() - wall,
                tree_cpu_s(jvm) + time.process_time() - cpu,
                findings,
            )
        finally:
            spark.stop()


def digest(f: Findings) -> tuple:
    """What the checkers must agree on."""
    t = f.totals
    return (
        t.events,
        t.keys,
        t.unchecked,
        sorted(Counter(v["rule"] for v in f.violations).items()),
        sorted(f.coverage.items()),
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--events", type=int, default=10_000_000)
    parser.add_argument("--files", type=int, default=8)
    parser.add_argument("--base-runs", type=int, default=200)
    parser.add_argument(
        "--workdir",
        type=Path,
        default=Path(tempfile.gettempdir()) / "coordspec-pipeline-bench",
        help="where the generated traces are kept for the next run (default: %(default)s)",
    )
    parser.add_argument(
        "--masters",
        default="local[1],local[2]",
        help="Spark masters to measure (default: %(default)s)",
    )
    args = parser.parse_args()
    args.workdir.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    traces, events = generate(args.workdir, args.events, args.files, args.base_runs)
    size = sum(f.stat().st_size for f in traces.iterdir()) / 1e9
    print(
        f"{events:,} events in {args.files} files ({size:.2f} GB, {traces}) ready in {time.perf_counter() - started:.1f} s",
        flush=True,
    )
    print(
        f"{'checker':<16}{'start-up s':>11}{'job s':>9}{'events/s':>10}{'vs one':>8}{'CPU s':>9}{'CPU ms/event':>13}"
        f"{'cores used':>11}{'groups':>9}{'violations':>11}",
        flush=True,
    )
    checkers = [("one process", lambda: one_process(traces))] + [
        (f"Spark {master}", lambda master=master: on_spark(traces, master, args.workdir))
        for master in args.masters.split(",")
    ]
    rows: list[tuple[str, float, Findings]] = []  # printed as each checker finishes
    for name, measure in checkers:
        up, job, cpu, f = measure()
        rows.append((name, job, f))
        print(
            f"{name:<16}{up:>11.1f}{job:>9.1f}{events / job:>10,.0f}{rows[0][1] / job:>7.2f}x{cpu:>9.1f}{1000 * cpu / events:>13.3f}"
            f"{cpu / job:>11.2f}{f.totals.keys:>9,}{len(f.violations):>11,}",
            flush=True,
        )
    differ = [name for name, _, f in rows[1:] if digest(f) != digest(rows[0][2])]
    if differ:
        print(
            f"DISAGREE: {', '.join(differ)} and the one process differ in events, groups, unchecked, violations or coverage"
        )
        return 1
    print("all checkers agree on events, groups, unchecked events, violations by rule and coverage")
    return 0


if __name__ == "__main__":
    sys.exit(main())
