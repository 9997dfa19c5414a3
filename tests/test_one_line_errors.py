"""The reproductions of ../shared/research/review-user-experience.md §3, outside ``conform``:
each mistake or Ctrl-C gives one line and an exit code, never a traceback, and no process
outlives its command."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

COORDSPEC = [sys.executable, "-m", "coordspec.conformance.cli"]


def coordspec(*args: str, cwd: Path, timeout: float = 60) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*COORDSPEC, *args], cwd=cwd, capture_output=True, text=True, timeout=timeout
    )


def one_line(result: subprocess.CompletedProcess) -> str:
    """The error line; argparse's come after the command's usage, as with any command line."""
    assert "Traceback" not in result.stderr + result.stdout, result.stderr[-2000:]
    *usage, line = result.stderr.strip().splitlines()
    if usage:
        assert usage[0].startswith("usage: ") and all(u.startswith(" ") for u in usage[1:])
    return line


@pytest.fixture
def here(tmp_path: Path) -> Path:
    (tmp_path / "afile").write_text("")
    (tmp_path / "empty.jsonl").write_text("")
    (tmp_path / "binary.yaml").write_bytes(bytes(range(128, 256)))
    (tmp_path / "emptydir").mkdir()
    return tmp_path


@pytest.mark.parametrize(
    ("args", "line"),
    [
        (("broker", "--port", "99999", "--data", "d"), "port 99999 is out of range (0-65535)"),
        (("broker", "--port", "-1", "--data", "d"), "port -1 is out of range (0-65535)"),
        (("diagram", "--out", "/dev/null/x"), "coordspec diagram: /dev/null/x: Not a directory"),
        (("diagram", "--out", "afile"), "coordspec diagram: afile: is a file, not a directory"),
        (("simulate", "--runs", "0"), "argument --runs: must be at least 1, got 0"),
        (("simulate", "--runs", "-1"), "argument --runs: must be at least 1, got -1"),
        (
            ("trace", "check", "--latency-ms", "-5", "x"),
            "argument --latency-ms: must be at least 0",
        ),
        (
            ("trace", "check", "empty.jsonl"),
            "empty.jsonl: no events: an empty trace checks nothing",
        ),
        (("conform", "--allow", "binary.yaml"), "binary.yaml: not UTF-8 text (byte 0)"),
        (("conform", "--scenarios", "emptydir"), "emptydir: no scenario files (*.yaml) in this"),
        (("conform", "--versions", "JoinGroup=4-2"), "range 4-2 runs backwards (write 2-4)"),
        (
            ("conform", "--bootstrap", "nosuchhost.invalid:9092"),
            "coordspec conform: cannot resolve host nosuchhost.invalid",
        ),
        (  # Kafka's list, tried in order; --bootstrap alone means the kafka target
            ("conform", "--bootstrap", "127.0.0.1:1,127.0.0.1:2"),
            "cannot reach 127.0.0.1:1: Connection refused; cannot reach 127.0.0.1:2: Connection",
        ),
        (("conform", "--concurrency", "0"), "argument --concurrency: must be at least 1, got 0"),
        (("conform", "--concurrency", "-5"), "argument --concurrency: must be at least 1, got -5"),
        (("conform", "--loop", "0"), "argument --loop: must be at least 1, got 0"),
        (("conform", "--hook-timeout", "0"), "argument --hook-timeout: must be at least 1, got 0"),
        (("conform", "--topics", "a,b"), "argument --topics: three distinct topic names"),
    ],
    ids=lambda v: " ".join(v) if isinstance(v, tuple) else "",
)
def test_a_mistake_is_one_line(here, args, line):
    result = coordspec(*args, cwd=here)
    assert result.returncode == 2
    assert line in one_line(result)
    assert not (here / "d").exists()  # the broker made no data directory for a bad port


@pytest.mark.zookeeper
def test_cluster_up_with_a_file_for_data_is_one_line(here):
    result = coordspec("cluster", "up", "--data", "afile", cwd=here)
    assert result.returncode == 2
    assert one_line(result) == f"coordspec cluster: {here / 'afile'}: is a file, not a directory"


@pytest.mark.zookeeper
def test_cluster_up_on_a_port_that_is_not_zookeeper_is_one_line(here):
    from coordspec.broker.testing import BrokerProcess

    with BrokerProcess(here / "kafka") as kafka:
        result = coordspec("cluster", "up", "--zookeeper", kafka.bootstrap, cwd=here)
    assert result.returncode != 0
    assert one_line(result).endswith(f"{kafka.bootstrap} does not answer as ZooKeeper")


def test_a_trace_cut_short_is_checked_without_its_last_line(here):
    assert coordspec("simulate", "--runs", "2", "--out", "traces", cwd=here).returncode == 0
    trace = next((here / "traces").glob("*.jsonl"))
    text = trace.read_text()
    trace.write_text(text[: len(text) - 20])  # a writer killed mid-line
    result = coordspec("trace", "check", str(trace), cwd=here)
    assert result.returncode in (0, 1), result.stderr
    assert "the last line is cut short; checked without it" in result.stderr
    assert "Traceback" not in result.stderr


def _left_behind(directory: Path) -> list[str]:
    """Processes whose working directory is ``directory``."""
    found = []
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                if Path(os.readlink(proc / "cwd")) == directory:
                    found.append((proc / "cmdline").read_text().replace("\0", " "))
            except OSError:
                continue
    return found


def _interrupt(args: tuple[str, ...], cwd: Path, after_s: float) -> tuple[int, str, str]:
    process = subprocess.Popen(
        [*COORDSPEC, *args], cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    time.sleep(after_s)
    process.send_signal(signal.SIGINT)
    out, err = process.communicate(timeout=60)
    return process.returncode, out, err


@pytest.mark.parametrize(
    ("args", "after_s"),
    [
        pytest.param(("simulate", "--runs", "100000"), 3, id="simulate"),
        pytest.param(("assign", "verify"), 6, id="assign-verify", marks=pytest.mark.slow),
        pytest.param(
            ("tla", "check", "CoordinatorFailover"), 8, id="tla-check", marks=pytest.mark.tlc
        ),
        pytest.param(  # 200 runs ended in 13.7 s on a quiet machine, too near the Ctrl-C
            ("simulate", "--runs", "2000", "--spark"),
            12,
            id="simulate-spark",
            marks=pytest.mark.spark,
        ),
    ],
)
def test_ctrl_c_stops_a_command_in_one_line_and_leaves_no_process(here, args, after_s):
    code, _, err = _interrupt(args, here, after_s)
    assert code == 130, err[-2000:]
    assert "Traceback" not in err and "Exception ignored" not in err, err[-2000:]
    assert err.strip().splitlines()[-1].endswith(": interrupted")
    deadline = time.monotonic() + 10
    while _left_behind(here) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert _left_behind(here) == []
