"""Commands whose work runs in other processes (z3's worker pool, Spark's JVM and its Python
workers) run in a child session of their own, so that Ctrl-C reaches only this process: it
stops the whole child process group and says so in one line. Left to Ctrl-C itself, those
children print stacks of their own (py4j's, z3's ``__del__``) or outlive the command."""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys

CHILD = "COORDSPEC_ISOLATED_CHILD"  # set in the child: it does the work itself
STOP_GRACE_S = 5.0


def wanted() -> bool:
    return not os.environ.get(CHILD)


def run(argv: list[str], command: str) -> int:
    """``coordspec ARGV`` in a new session; its exit code, or 130 after Ctrl-C stops it."""
    child = subprocess.Popen(
        [sys.executable, "-m", "coordspec.conformance.cli", *argv],
        # Stopped, a process pool's resource tracker warns of the semaphores it cleans up.
        env={
            **os.environ,
            CHILD: "1",
            "PYTHONWARNINGS": "ignore::UserWarning:multiprocessing.resource_tracker",
        },
        start_new_session=True,
    )
    try:
        return child.wait()
    except KeyboardInterrupt:
        _stop(child)
        print(f"coordspec {command}: interrupted", file=sys.stderr)
        return 130


def _stop(child: subprocess.Popen) -> None:
    """SIGTERM to the child's group, a grace period, then SIGKILL to what is left of it."""
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGTERM)
    with contextlib.suppress(subprocess.TimeoutExpired):
        child.wait(STOP_GRACE_S)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(child.pid, signal.SIGKILL)  # stragglers: a JVM, a worker
    child.wait()
