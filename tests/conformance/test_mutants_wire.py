"""A sample of the mutants, run as ``coordspec mutants`` runs them all: each still caught on the
project's broker by the scenario that caught it when the table in spec/conformance-power.md
was recorded (``--select`` narrows the catalog to those scenarios, to keep this short)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from coordspec.conformance.mutants import catalog

pytestmark = [pytest.mark.slow, pytest.mark.wire]

ROOT = Path(__file__).resolve().parents[2]
# Each a different kind: a parked SyncGroup, a commit's checks, a restart. (A join-phase
# mutant such as #25 takes 35 s, its scenario waiting out a rebalance timeout: CI's budget.)
SAMPLE = (9, 13, 45)


def test_a_sample_of_mutants_recorded_as_caught_is_still_caught():
    mutants = [catalog.BY_BUG[bug] for bug in SAMPLE]
    assert all(m.caught_by for m in mutants)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "coordspec.conformance.cli",
            "mutants",
            "--only",
            ",".join(map(str, SAMPLE)),
            "--select",
            *sorted({m.caught_by for m in mutants}),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=240,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert done.stderr == ""
    lines = done.stdout.splitlines()
    for m in mutants:
        assert any(
            line.startswith("[") and f"#{m.bug} " in line and f"caught by {m.caught_by} [" in line
            for line in lines
        ), done.stdout
    assert lines[-1] == f"{len(SAMPLE)} of {len(SAMPLE)} applicable caught (100%)"
