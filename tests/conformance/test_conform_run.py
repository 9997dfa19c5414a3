"""The run itself: progress while it goes, output paths checked before it starts, reports
that a Ctrl-C or a broker that dies still leaves, and --loop naming the flaky runs. Ctrl-C
and the broker's death are real: a ``coordspec conform`` process against the project's
broker, sent SIGINT, or its broker killed."""

from __future__ import annotations

import io
import json
import re
import signal
import subprocess
import sys
import time
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from test_conformance_oracle import RewritingTarget
from test_divergences import PLANTED, deletes_live_groups, leaves_unknown_members

from coordspec.broker.testing import BrokerProcess
from coordspec.conformance.suite import run
from coordspec.conformance.suite.progress import Progress
from coordspec.conformance.suite.results import RunResult
from coordspec.conformance.trace.format import validate_file

ROOT = Path(__file__).resolve().parents[2]
COORDSPEC = [sys.executable, "-m", "coordspec.conformance.cli"]


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _result(status: str) -> RunResult:
    return RunResult("s", "s.yaml", "", (), {}, "g", status=status)


def test_progress_on_a_log_is_a_line_at_intervals_with_counts_and_time_left():
    out = io.StringIO()
    progress = Progress(4, out, interval_s=0)
    progress.done(_result("passed"))
    progress.done(_result("allowed"))
    progress.tick()
    assert re.fullmatch(
        r"2/4 runs: 1 passed, 0 failed, 1 allowed; 2 to go, about \d+ s left\n", out.getvalue()
    )
    progress.done(_result("failed"))  # no failure block: the end lists the divergences
    progress.done(_result("error"))
    progress.finish()
    assert (
        out.getvalue()
        .splitlines()[-1]
        .startswith("4/4 runs: 1 passed, 1 failed, 1 allowed, 1 errors; 0 to go, took ")
    )
    quiet = io.StringIO()
    Progress(4, quiet, interval_s=60).tick()
    assert quiet.getvalue() == ""


def test_progress_on_a_terminal_is_one_bar_redrawn_in_place(monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    out = _Terminal()
    progress = Progress(2, out)
    progress.done(_result("passed"))
    progress.done(_result("failed"))
    progress.finish()
    text = out.getvalue()
    assert "\r\x1b[K[####################] 2/2 runs: 1 passed, 1 failed" in text
    assert "\n" not in text and text.endswith("\r\x1b[K")
    monkeypatch.setenv("COLUMNS", "40")  # a line that wrapped would not be redrawn in place
    narrow = _Terminal()
    Progress(2, narrow).done(_result("passed"))
    assert max(len(part) for part in narrow.getvalue().split("\r\x1b[K")) == 39


def test_each_divergence_is_announced_once_as_it_appears_and_failures_are_not_printed():
    out = io.StringIO()
    outcome = run(RewritingTarget(PLANTED), out=out)
    announced = [line for line in out.getvalue().splitlines() if line.startswith("new divergence")]
    assert len(announced) == len(outcome.divergences) == 3
    assert announced[0].startswith("new divergence (1 so far): [")
    assert any("[safety] DeleteGroups" in line for line in announced)
    assert "FAILED " not in out.getvalue()


def _conform(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*COORDSPEC, "conform", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=120,
        check=False,
    )


def test_output_paths_are_checked_before_anything_runs(tmp_path):
    (tmp_path / "out").mkdir()
    (tmp_path / "file").write_text("")
    done = _conform("--junit", "out", "--report", "file", "--trace", "file/t.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [
        "coordspec conform: --report file: is a file, not a directory",
        "coordspec conform: --junit out: is a directory",
        "coordspec conform: --trace file/t.jsonl: file is not a directory",
    ]
    assert done.stdout == ""


def test_loop_names_the_runs_that_passed_in_some_loops_only(tmp_path):
    """A bug in the second loop only makes its runs flaky; one in every loop does not."""

    class SecondLoopWorse(RewritingTarget):
        async def open(self, group_id, config, **options):
            session = await super().open(group_id, config, **options)
            if group_id.endswith("-1"):
                session.rewrite = lambda q, r: leaves_unknown_members(q, deletes_live_groups(q, r))
            return session

    out = io.StringIO()
    outcome = run(
        SecondLoopWorse(deletes_live_groups),
        loop=3,
        version_selection="latest",
        out=out,
        report=tmp_path,
    )
    assert outcome.flaky
    assert {(f.passed, f.failed) for f in outcome.flaky} == {(2, 1)}
    # The reports name them too: the summary for people, the JSON for bots.
    assert f"- {outcome.flaky[0]}" in (tmp_path / "conformance.md").read_text()
    listed = json.loads((tmp_path / "conformance.json").read_text())["flaky"]
    assert len(listed) == len(outcome.flaky) and listed[0]["passed"] == 2
    always = {d.example.scenario for d in outcome.divergences if d.signature.api == "DeleteGroups"}
    assert always and not always & {f.scenario for f in outcome.flaky}
    lines = out.getvalue().splitlines()
    at = lines.index(f"{len(outcome.flaky)} flaky (passed in some loops, failed in others):")
    assert lines[at + 1].endswith("]: passed 2, failed 1")


def _wait_for(predicate, timeout_s: float, what: str) -> None:
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, f"timed out waiting for {what}"
        time.sleep(0.1)


def _start_conform(broker: BrokerProcess, out: Path) -> subprocess.Popen:
    return subprocess.Popen(
        [
            # As a background job of a shell without job control starts it, SIGINT ignored:
            # Ctrl-C must stop it all the same.
            *("sh", "-c", "trap '' INT; exec \"$@\"", "sh"),
            *COORDSPEC,
            "conform",
            "--target",
            "kafka",
            "--bootstrap",
            broker.bootstrap,
            "--tags",
            "!slow",
            "--report",
            str(out / "report"),
            "--junit",
            str(out / "junit.xml"),
            "--trace",
            str(out / "trace.jsonl"),
        ],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=ROOT,
    )


def _partial_reports(out: Path, line: str) -> tuple[int, int, list[ET.Element]]:
    """The counts in the last line; the JUnit file's test cases, every one of them present."""
    ran, total = map(int, re.search(r"after (\d+) of (\d+) runs", line).groups())
    assert 0 < ran < total
    names = [out / "trace.jsonl", out / "junit.xml", out / "report/conformance.md"]
    assert all(str(path) in line for path in names)
    assert validate_file(out / "trace.jsonl") > 0
    cases = ET.parse(out / "junit.xml").getroot().find("testsuite").findall("testcase")
    # Every run is a case; so is each scenario the target cannot run at all (no version plan).
    assert len([c for c in cases if c.get("name") != "no requests"]) == total
    assert (out / "report/conformance.md").read_text().startswith("# Conformance report")
    return ran, total, cases


@pytest.mark.wire
def test_ctrl_c_stops_the_run_with_one_line_and_partial_reports(tmp_path):
    with BrokerProcess(tmp_path / "data") as broker:
        conform = _start_conform(broker, tmp_path)
        try:
            # Written as the run goes, before any Ctrl-C.
            _wait_for((tmp_path / "junit.xml").exists, 60, "the reports of the first runs")
            suite = ET.parse(tmp_path / "junit.xml").getroot().find("testsuite")
            going = [s for s in suite.iter("skipped") if "still going" in s.get("message")]
            assert 0 < len(going) < int(suite.get("tests"))
            conform.send_signal(signal.SIGINT)
            stdout, stderr = conform.communicate(timeout=60)
        finally:
            conform.kill()
    assert conform.returncode == 130, stdout + stderr
    assert stderr == ""
    *_, last, cleaned = stdout.splitlines()  # then the run's groups are deleted from the broker
    assert re.fullmatch(r"deleted \d+ groups?(; left .*)?", cleaned), cleaned
    assert last.startswith("interrupted after ") and "; partial reports written: " in last
    ran, total, cases = _partial_reports(tmp_path, last)
    cut = [
        c
        for c in cases
        if (s := c.find("skipped")) is not None and "interrupted" in s.get("message")
    ]
    assert len(cut) == total - ran  # not failures: not run, for the reason
    errors = [c.find("error").get("message") for c in cases if c.find("error") is not None]
    assert not errors


@pytest.mark.wire
def test_a_broker_that_dies_stops_the_run_with_one_line_and_partial_reports(tmp_path):
    with BrokerProcess(tmp_path / "data") as broker:
        conform = _start_conform(broker, tmp_path)
        try:
            _wait_for(
                lambda: (
                    (tmp_path / "trace.jsonl").exists()
                    and (tmp_path / "trace.jsonl").stat().st_size > 0
                ),
                60,
                "the first runs",
            )
            broker.kill()
            stdout, stderr = conform.communicate(timeout=120)
        finally:
            conform.kill()
    assert conform.returncode == 1, stdout + stderr
    *_, last, cleaned = stdout.splitlines()
    assert cleaned.startswith("the run's groups are left on the broker: cannot reach"), cleaned
    assert re.match(
        r"stopped after \d+ of \d+ runs: the broker is unreachable \(8 runs could not "
        r"connect: (\w+ v\d+: )?cannot reach 127\.0\.0\.1:\d+: .*\); partial reports written: ",
        last,
    ), last
    _, _, cases = _partial_reports(tmp_path, last)
    # What the broker's death cut short is a harness error, not a conformance failure.
    failures = [c.find("failure") for c in cases if c.find("failure") is not None]
    assert not [f.get("message") for f in failures if f.get("type") in ("target", "connection")]
    assert "distinct divergence" not in stdout
