"""``coordspec trace check FILE...``: the trace checker on one machine.

Reads every line (a bad one stops the check with ``file:line: field: what``: lines are
checked in full when their key is replayed), groups the
lines by key (group id, run: the files of one run, a cluster's brokers' for one, are
replayed together), and checks each key with
:func:`~coordspec.conformance.tracecheck.replay.check_key`, showing a progress bar on a terminal.
"""

from __future__ import annotations

import dataclasses
import gc
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TextIO

from coordspec.conformance.trace import records
from coordspec.conformance.tracecheck.replay import KeyReport, Settings, check_key
from coordspec.conformance.tracecheck.summary import Findings, Totals


class Progress:
    """``[#####.....] done/total what`` on a terminal, nothing elsewhere."""

    def __init__(self, out: TextIO, what: str, total: int) -> None:
        self.out, self.what, self.total, self.done = out, what, total, 0
        self.shown = -1
        self.bar = out.isatty()

    def add(self, n: int = 1) -> None:
        self.done += n
        filled = 30 * self.done // max(1, self.total)
        if self.bar and filled != self.shown:
            self.shown = filled
            print(
                f"\r[{'#' * filled}{'.' * (30 - filled)}] {self.done}/{self.total} {self.what}",
                end="",
                file=self.out,
                flush=True,
            )

    def warn(self, message: str) -> None:
        """A line of its own, not lost in the bar."""
        self.close()
        print(f"warning: {message}", file=self.out, flush=True)

    def close(self) -> None:
        if self.bar:
            print("\r" + " " * 70 + "\r", end="", file=self.out, flush=True)


def group_lines(
    files: list[Path], out: TextIO
) -> tuple[dict[tuple[str, str], list[records.Line]], int]:
    """Every line of the files, validated, by key; and the number of lines."""
    keys: dict[tuple[str, str], list[records.Line]] = {}
    progress = Progress(out, "bytes read", sum(f.stat().st_size for f in files))
    count = 0
    try:
        for path in files:
            plain, before = not path.name.endswith(".gz"), progress.done
            for line in records.read(path, cut_short=progress.warn):
                group_id, run, _ = records.quick_key(line)
                keys.setdefault((group_id, run), []).append(line)
                count += 1
                if plain:  # characters for bytes: close enough for a bar
                    progress.add(len(line.text))
            progress.add(before + path.stat().st_size - progress.done)
    finally:
        progress.close()
    return keys, count


def add(findings: Findings, report: KeyReport) -> None:
    findings.violations.extend(dataclasses.asdict(v) for v in report.violations)
    findings.coverage.update(report.coverage)
    findings.totals.keys += bool(report.group_id)
    findings.totals.unchecked += report.unchecked


def check_files(
    paths: Iterable[str | Path], settings: Settings, out: TextIO | None = None
) -> Findings:
    """Check trace files; raises TraceError (one line) for a missing file or a bad line."""
    out = out or sys.stderr
    started = time.perf_counter()
    files = records.expand(paths)
    keys, count = group_lines(files, out)
    if not count:
        raise records.TraceError(
            f"{', '.join(map(str, files))}: no events: an empty trace checks nothing"
        )
    findings = Findings(totals=Totals(files=len(files), events=count, how="one machine"))
    progress = Progress(out, "groups checked", len(keys))
    # The lines live until the end: the replay's full collections need not walk them each time.
    gc.freeze()
    try:
        for (group_id, run), lines in keys.items():
            add(findings, check_key(group_id, run, lines, settings))
            progress.add()
    finally:
        gc.unfreeze()
        progress.close()
    findings.totals.wall_s = time.perf_counter() - started
    return findings
