"""coordspec assign verify at the issue's bounds (4 members, 3 topics, 1..6 partitions per
topic, any subscriptions), as a user runs it: about two minutes on two cores."""

from __future__ import annotations

import subprocess
import sys

import pytest


@pytest.mark.slow
def test_assign_verify_proves_everything_at_the_bounds():
    result = subprocess.run(
        [sys.executable, "-m", "coordspec.conformance.cli", "assign", "verify"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-2000:]
    out = result.stdout
    assert "coordspec assign verify: 30 passed, 0 failed" in out
    for line in (
        "ok range                        ExactlyOneOwner                    proved",
        "ok roundrobin                   Balanced                           proved",
        "ok sticky                       Balanced                           proved",
        "ok fencing                      NoWriteWithStaleVersion            proved",
        "ok fencing                      ControllerEpochMonotonic           proved",
        "ok broken-roundrobin            OwnerSubscribes                    violated",
    ):
        assert line in out, line
    assert "stickiness sticky: moves / optimal mean" in out and "within the goal" in out
    # Progress as each part ends, not minutes of silence.
    assert "fencing by 3-induction (z3): 8 results after" in out, out[:2000]


def test_bounds_out_of_range_are_one_line():
    result = subprocess.run(
        [sys.executable, "-m", "coordspec.conformance.cli", "assign", "verify", "--members", "11"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert result.returncode == 2
    assert (
        result.stdout.strip()
        .splitlines()[-1]
        .startswith("coordspec assign verify: bounds out of range")
    )
