"""Where a suite run writes: the paths checked before anything runs, and the reports written
as the run goes, so that a Ctrl-C, a broker that dies or a killed job still leaves them.

Writing every report of the 1,138-run reference catalog takes 0.15 to 0.25 s on a busy
2-core machine; it happens in a thread, at most every ``interval_s`` and never more often
than every 20 times its own duration, so it takes at most about 5 % of the run (measured:
one write, 0.25 s, in a 5.5 s run of the catalog; 3 writes, 1.3 s, in a 32 s run of three
loops, its threads sharing the interpreter with the run).
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from coordspec.conformance.suite import divergences, reports
from coordspec.conformance.suite.divergences import Divergence
from coordspec.conformance.suite.results import RunResult


def problems(junit: Path | None, report: Path | None, trace: Path | None) -> list[str]:
    """One line per output path the run could not write, such as ``--junit out: is a directory``."""
    found = []
    if report is not None:
        found += [f"--report {report}: {p}" for p in _directory_problem(report)]
    for flag, path in (("--junit", junit), ("--trace", trace)):
        if path is not None:
            found += [f"{flag} {path}: {p}" for p in _file_problem(path)]
    return found


def _file_problem(path: Path) -> list[str]:
    if path.is_dir():
        return ["is a directory"]
    if path.exists():
        return [] if os.access(path, os.W_OK) else ["cannot write to it (permission denied)"]
    return _creatable(path.parent)


def _directory_problem(path: Path) -> list[str]:
    if path.exists() and not path.is_dir():
        return ["is a file, not a directory"]
    return _creatable(path)


def _creatable(directory: Path) -> list[str]:
    """Why files cannot be made in ``directory`` (made first if missing)."""
    existing = directory
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        return [f"{existing} is not a directory"]
    if not os.access(existing, os.W_OK | os.X_OK):
        return [f"cannot write in {existing} (permission denied)"]
    return []


class ReportWriter:
    """Writes the JUnit and report files asked for, now (``write``) or throttled in a
    background thread while the run goes on (``tick``)."""

    def __init__(
        self,
        target: str,
        junit: Path | None,
        report: Path | None,
        rerun: str,
        interval_s: float = 5.0,
    ) -> None:
        self.target, self.junit, self.report, self.rerun = target, junit, report, rerun
        self.interval_s = interval_s
        self._next = time.monotonic() + interval_s
        self._thread: threading.Thread | None = None
        self.failed: OSError | None = None  # a write in the background failed: no more tries
        self.writes, self.busy_s = 0, 0.0

    @property
    def wanted(self) -> bool:
        return self.junit is not None or self.report is not None

    def write(
        self, results: list[RunResult], wall_s: float, found: list[Divergence] | None = None
    ) -> list[Path]:
        """``found``: ``divergences.group(results)``, if made already. Raises OSError."""
        written = []
        found = divergences.group(results) if found is None else found
        if self.junit:
            reports.write_junit(results, self.target, wall_s, self.junit, found)
            written.append(self.junit)
        if self.report:
            written.extend(
                reports.write_report(results, self.target, wall_s, self.report, found, self.rerun)
            )
        return written

    def tick(self, snapshot: Callable[[], list[RunResult]], wall_s: float) -> None:
        """Write in the background if it is time and no write is under way."""
        if not self.wanted or self.failed or time.monotonic() < self._next:
            return
        if self._thread is not None and self._thread.is_alive():
            return
        self._thread = threading.Thread(
            target=self._background, args=(snapshot(), wall_s), daemon=True
        )
        self._thread.start()

    def wait(self) -> None:
        if self._thread is not None:
            self._thread.join()

    def _background(self, results: list[RunResult], wall_s: float) -> None:
        started = time.perf_counter()
        try:
            self.write(results, wall_s)
        except OSError as exc:
            self.failed = exc
        took = time.perf_counter() - started
        self.writes, self.busy_s = self.writes + 1, self.busy_s + took
        self._next = time.monotonic() + max(self.interval_s, 20 * took)
