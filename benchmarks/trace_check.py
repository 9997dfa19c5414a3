"""The trace check's speed against an earlier commit's, on the same traces, in one run.

    .venv/bin/python benchmarks/trace_check.py [--baseline 0c9480a] [--rounds 3]

Traces come from the simulator as issue 18 measured them: ``coordspec simulate --runs 200
--seed 11`` (three consumers per group, crashes, pauses, coordinator restarts). Two more sets
check that verdicts agree where there is something to find: 60 runs with the
``stale-commit`` bug planted, and 20 simulated clusters (offsets partitions, coordinator
moves, partition keys).

The earlier commit is checked out into a temporary worktree and imported in place of this
checkout (``PYTHONPATH``); each commit's checker runs in its own process, old and new
alternating, ``--rounds`` times, and the fastest round of each counts (a shared machine only
ever slows a round down). A worker measures CPU time, one core, in three parts: reading and
keying the lines (as ``coordspec trace check`` does), parsing them (JSON, the trace models,
the reference's request and response types), and the replay through the oracle, which is
what issue 18's goal is about (≥ 50,000 events/s per core). The whole check is their sum.
Before the replay the worker freezes what it holds (``gc.freeze``), for both commits alike:
the check holds only one key's parsed events at a time, the worker every key's.

The run fails unless both commits find the same violations (group, rule, kind, file, line,
message), the same unchecked events and the same coverage on every set.
"""

from __future__ import annotations

import argparse
import gc
import inspect
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
GOAL_EVENTS_PER_S = 50_000
# The commit before issue 18's work: the oracle deep-copied each hypothesis at every event.
DEFAULT_BASELINE = "0c9480a"
SETS = {  # name -> simulate's arguments
    "faults": ["--runs", "200", "--seed", "11"],
    "stale-commit": ["--runs", "60", "--seed", "500", "--bug", "stale-commit"],
    "clusters": ["--runs", "20", "--seed", "7", "--cluster"],
}
TIMED = "faults"


def worker(paths: list[str]) -> None:
    """Check ``paths`` with whichever coordspec is importable; print the figures as JSON."""
    from coordspec.conformance.trace import records
    from coordspec.conformance.tracecheck import replay

    started = time.process_time()
    keys: dict[tuple[str, str], list] = {}
    for path in records.expand(paths):
        for line in records.read(path):
            group_id, run, _ = records.quick_key(line)
            keys.setdefault((group_id, run), []).append(line)
    keyed = time.process_time()
    # Parsed as check_key parses them (requests numbered in their key, where the commit does).
    numbered = "request_id" in inspect.signature(records.parse).parameters
    parsed = {
        id(line): records.parse(line, i) if numbered else records.parse(line)
        for lines in keys.values()
        for i, line in enumerate(lines)
    }
    parsing = time.process_time()
    # As the check freezes the lines it holds (tracecheck/check.py): here every parsed event
    # is held too, which a full collection during the replay would walk each time.
    gc.freeze()
    replay.parse = lambda line, *_: parsed[id(line)]  # the replay alone: each line parsed above
    reports = [
        replay.check_key(g, run, lines, replay.Settings()) for (g, run), lines in keys.items()
    ]
    done = time.process_time()
    violations = sorted(
        [v.group_id, v.rule, v.kind, Path(v.file).name, v.line, v.message]
        for r in reports
        for v in r.violations
    )
    coverage: dict[str, int] = {}
    for r in reports:
        for (kind, name), count in r.coverage.items():
            coverage[f"{kind}: {name}"] = coverage.get(f"{kind}: {name}", 0) + count
    print(
        json.dumps(
            {
                "events": sum(map(len, keys.values())),
                "read_s": keyed - started,
                "parse_s": parsing - keyed,
                "replay_s": done - parsing,
                "verdicts": {
                    "violations": violations,
                    "unchecked": sum(r.unchecked for r in reports),
                    "coverage": coverage,
                },
            }
        )
    )


def run_worker(pythonpath: Path | None, paths: list[Path]) -> dict:
    env = dict(os.environ)
    if pythonpath is not None:
        env["PYTHONPATH"] = str(pythonpath)
    else:
        env.pop("PYTHONPATH", None)
    out = subprocess.run(
        [sys.executable, __file__, "--worker", *map(str, paths)],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if out.returncode:
        raise SystemExit(f"trace_check: the worker failed:\n{out.stderr.strip()[-2000:]}")
    return json.loads(out.stdout)


def baseline_tree(commit: str, workdir: Path) -> Path:
    """An import root whose ``coordspec`` is ``commit``'s code (a detached worktree)."""
    source = workdir / "source"
    subprocess.run(
        ["git", "-C", str(REPO), "worktree", "add", "--quiet", "--detach", str(source), commit],
        check=True,
    )
    root = workdir / "import" / "coordspec"
    root.mkdir(parents=True)
    for name, folder in [
        ("reference", "reference"),
        ("broker", "broker"),
        ("conformance", "conformance"),
        ("spec", "spec"),
    ]:
        (root / name).symlink_to(source / folder)
    return root.parent


def simulate(workdir: Path) -> dict[str, Path]:
    made = {}
    for name, args in SETS.items():
        out = workdir / "traces" / name
        # exit 1 where the simulator's own check found the planted bug
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "coordspec.conformance.cli",
                "simulate",
                *args,
                "--out",
                str(out),
            ],
            check=False,
            capture_output=True,
            text=True,
        )
        if done.returncode not in (0, 1) or not any(out.iterdir()):
            raise SystemExit(
                f"trace_check: simulate {' '.join(args)} failed: {done.stderr.strip()}"
            )
        made[name] = out
    return made


def this_commit() -> str:
    """HEAD's short id, with ``+changes`` when the working tree differs from it."""

    def git(*args: str) -> str:
        return subprocess.run(
            ["git", "-C", str(REPO), *args], check=True, capture_output=True, text=True
        ).stdout.strip()

    return git("rev-parse", "--short", "HEAD") + (
        "+changes" if git("status", "--porcelain") else ""
    )


def rate(events: int, seconds: float) -> str:
    return f"{events / seconds:,.0f} events/s ({seconds / events * 1e6:.1f} µs/event)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--baseline", default=DEFAULT_BASELINE, help="the earlier commit")
    parser.add_argument("--rounds", type=int, default=3, help="runs of each commit's checker")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args.worker)
        return 0
    this = this_commit()
    with tempfile.TemporaryDirectory(prefix="coordspec-trace-bench-") as tmp:
        workdir = Path(tmp)
        try:
            old_root = baseline_tree(args.baseline, workdir)
            sets = simulate(workdir)
            agree = True
            for name, path in sets.items():
                old, new = run_worker(old_root, [path]), run_worker(None, [path])
                same = old["verdicts"] == new["verdicts"]
                agree &= same
                found = len(new["verdicts"]["violations"])
                print(
                    f"{name}: {new['events']:,} events, {found} violations, "
                    f"verdicts {'agree' if same else 'DIFFER'}"
                )
            best: dict[str, dict] = {}
            for _ in range(args.rounds):
                for label, root in ((args.baseline, old_root), (this, None)):
                    figures = run_worker(root, [sets[TIMED]])
                    kept = best.get(label)
                    if kept is None or figures["replay_s"] < kept["replay_s"]:
                        best[label] = figures
        finally:
            subprocess.run(
                ["git", "-C", str(REPO), "worktree", "remove", "--force", str(workdir / "source")],
                check=False,
                capture_output=True,
            )
    events = best[this]["events"]
    print(f"\n{TIMED} ({events:,} events), fastest of {args.rounds} rounds, CPU on one core:")
    for label in (args.baseline, this):
        f = best[label]
        whole = f["read_s"] + f["parse_s"] + f["replay_s"]
        print(
            f"  {label:>16}: replay {rate(events, f['replay_s'])}; parse {rate(events, f['parse_s'])}; "
            f"read {rate(events, f['read_s'])}; whole {rate(events, whole)}"
        )
    old, new = best[args.baseline], best[this]
    ratio = old["replay_s"] / new["replay_s"]
    whole_ratio = sum(old[k] for k in ("read_s", "parse_s", "replay_s")) / sum(
        new[k] for k in ("read_s", "parse_s", "replay_s")
    )
    replay_rate = events / new["replay_s"]
    print(
        f"replay {ratio:.1f}x the baseline's, whole check {whole_ratio:.1f}x; "
        f"goal >= {GOAL_EVENTS_PER_S:,} events/s: {'met' if replay_rate >= GOAL_EVENTS_PER_S else 'NOT met'}; "
        f"verdicts {'agree on every set' if agree else 'DIFFER'}"
    )
    return 0 if agree else 1


if __name__ == "__main__":
    sys.exit(main())
