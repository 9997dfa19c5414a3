"""What a suite run shows while it goes: counts, what is left and an estimate of the time left;
a bar redrawn in place on a terminal, a plain line every ``interval_s`` on anything else (a CI
log), and one line per divergence the first time a run shows it. The details come at the end,
in the distinct-divergence list."""

from __future__ import annotations

import shutil
import time
from typing import TextIO

from coordspec.conformance.suite import divergences
from coordspec.conformance.suite.results import RunResult


class Progress:
    def __init__(self, total: int, out: TextIO, interval_s: float = 10.0) -> None:
        self.total, self.out, self.interval_s = total, out, interval_s
        self.bar = out.isatty()
        self.counts = {"passed": 0, "failed": 0, "allowed": 0, "error": 0, "not_run": 0}
        self.started = self._last_line = time.monotonic()
        self._drawn = 0.0
        self.seen: set[divergences.Signature] = set()

    @property
    def count(self) -> int:
        return sum(self.counts.values())

    def done(self, result: RunResult) -> None:
        self.counts[result.status] += 1
        sig = divergences.signature(result) if result.status == "failed" else None
        if sig is not None and sig not in self.seen:
            self.seen.add(sig)
            found = divergences.group([result])[0]
            self._clear()
            print(
                f"new divergence ({len(self.seen)} so far): [{found.severity}] {found.title}",
                file=self.out,
            )
        if self.bar and (self.count == self.total or time.monotonic() - self._drawn >= 0.1):
            self._draw()

    def tick(self) -> None:
        """Called every second or so: redraws the bar, or prints a line if it is time."""
        if self.bar:
            self._draw()
        elif time.monotonic() - self._last_line >= self.interval_s:
            self._line()

    def finish(self, line: bool = True) -> None:
        """Clears the bar; on anything else, the last line unless ``line`` is false."""
        if self.bar:
            self._clear()
        elif line:
            self._line()

    def status(self) -> str:
        c, left = self.counts, self.total - self.count
        parts = [f"{c['passed']} passed", f"{c['failed']} failed", f"{c['allowed']} allowed"]
        parts += [
            f"{c[k]} {name}" for k, name in (("error", "errors"), ("not_run", "not run")) if c[k]
        ]
        text = f"{self.count}/{self.total} runs: {', '.join(parts)}; {left} to go"
        elapsed = time.monotonic() - self.started
        if left and self.count:
            text += f", about {_duration(elapsed / self.count * left)} left"
        elif not left:
            text += f", took {_duration(elapsed)}"
        return text

    def _line(self) -> None:
        self._last_line = time.monotonic()
        print(self.status(), file=self.out, flush=True)

    def _draw(self) -> None:
        self._drawn = time.monotonic()
        filled = 20 * self.count // max(1, self.total)
        line = f"[{'#' * filled}{'.' * (20 - filled)}] {self.status()}"
        width = shutil.get_terminal_size().columns - 1  # a wrapped line would not redraw
        print(
            f"\r\033[K{line[:width]}",
            end="",
            file=self.out,
            flush=True,
        )

    def _clear(self) -> None:
        if self.bar:
            print("\r\033[K", end="", file=self.out)


def _duration(seconds: float) -> str:
    if seconds < 90:
        return f"{seconds:.0f} s"
    if seconds < 5400:
        return f"{seconds / 60:.0f} min"
    return f"{seconds // 3600:.0f} h {seconds % 3600 / 60:.0f} min"
