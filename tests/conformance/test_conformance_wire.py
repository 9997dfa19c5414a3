"""The kafka target over real sockets: the catalog against the project's own cluster (the
``embedded`` target) with its fault hooks and against the single broker, shell fault hooks,
and one clear line for a broker that cannot be used."""

from __future__ import annotations

import io
import socket
import subprocess
import sys
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from coordspec.broker.testing import BrokerProcess
from coordspec.conformance.suite import SuiteError, run
from coordspec.conformance.suite.embedded_target import start_embedded
from coordspec.conformance.suite.kafka_target import KafkaTarget
from coordspec.conformance.suite.loader import SCENARIO_DIR, load_all

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

ROOT = Path(__file__).resolve().parents[2]
COORDSPEC = [sys.executable, "-m", "coordspec.conformance.cli"]


def _summary(outcome) -> str:
    return "\n".join(
        f"{r.label}: {r.status} {r.reason}"
        for r in outcome.results
        if r.status in ("failed", "error")
    )


@pytest.mark.slow
def test_the_catalog_at_the_newest_versions_passes_on_the_embedded_clusters():
    """Every scenario at the newest versions both sides support, on clusters of three brokers
    on one ZooKeeper: each scenario's settings on a cluster started with them, and each
    failover or restart (kill -9 or SIGTERM of the coordinator) on a cluster of its own,
    while the other runs go on."""
    target = start_embedded()
    spans: dict[str, tuple[float, float]] = {}  # group id -> when its session was open
    target.open = _timed(target.open, spans)
    try:
        outcome = run(target, version_selection="latest", concurrency=64, out=io.StringIO())
    finally:
        target.stop()
    assert outcome.exit_code == 0, _summary(outcome)
    catalog = load_all()
    # Only the reference target can make the coordinator's log refuse a chosen write, act as
    # the transaction coordinator, hold a broker at each step of a coordinator's move, or
    # change the broker's topics and run the regex resolution at a chosen step.
    reference_only = {
        s.name
        for s in catalog
        if s.fails_writes or s.uses_transactions or s.moves_coordinator or s.drives_metadata
    }
    consumer_group = {s.name for s in catalog if "consumer-group" in s.tags}
    assert reference_only and all(
        r.status == "passed" or (r.status == "not_run" and r.scenario in reference_only)
        for r in outcome.results
    ), _summary(outcome)
    assert consumer_group - reference_only <= {
        r.scenario for r in outcome.results if r.status == "passed"
    }
    assert len([r for r in outcome.results if r.status == "passed"]) >= 175
    with_settings = {s.name for s in catalog if s.broker}
    with_faults = {s.name for s in catalog if s.uses_faults}
    ran = {r.group_id: r.scenario for r in outcome.results}
    assert any(
        a[0] < b[1] and b[0] < a[1]
        for ga, a in spans.items()
        for gb, b in spans.items()
        if ran[ga] in with_settings and ran[gb] in with_faults
    ), "no scenario with settings ran while one with faults did"
    # Concurrent: the runs' scenario time adds up to many times this bound.
    assert outcome.wall_s < 200


def _timed(open_, spans: dict[str, tuple[float, float]]):
    async def timed_open(group_id, config, **options):
        session = await open_(group_id, config, **options)
        began, close = time.monotonic(), session.close

        async def timed_close():
            await close()
            spans[group_id] = (began, time.monotonic())

        session.close = timed_close
        return session

    return timed_open


def test_the_catalog_at_the_newest_versions_passes_on_the_single_broker_concurrently(tmp_path):
    """``coordspec broker``, one process, checked as any broker is (the kafka target)."""
    with BrokerProcess(tmp_path / "data") as broker:
        target = KafkaTarget(broker.bootstrap).check()
        outcome = run(
            target, tags=["!slow"], version_selection="latest", concurrency=32, out=io.StringIO()
        )
    assert outcome.exit_code == 0, _summary(outcome)
    assert len([r for r in outcome.results if r.status == "passed"]) >= 140
    not_run = [r for r in outcome.results if r.status == "not_run"]
    assert all(
        r.reason.startswith(
            (
                "needs broker settings",
                "needs fault hooks",
                "needs to make the coordinator's writes",
                "needs to act as the transaction coordinator",
                "needs to resign, become and load",
                "needs to change the broker's topics or run its regex resolution",
            )
        )
        for r in not_run
    ), not_run


RECORDS = [
    "commit-writes-one-record-per-partition",
    "sync-writes-the-group-metadata-record",
    "deletes-write-tombstones",
]


def test_the_single_broker_shows_the_records_its_coordinator_writes(tmp_path):
    """The kafka target reads ``__consumer_offsets`` back (Fetch from the partitions' ends) and
    shows a step the records of its run's groups: the record scenarios pass, and one that
    expects another offset fails on it."""
    wrong = tmp_path / "wrong-offset-record.yaml"
    wrong.write_text(
        "checks: a commit of foo-0 = 5 expected as a record of offset 6\nrules: [GM-40]\n"
        "clients: [c1]\nsteps:\n  - c1: OffsetCommit\n    offsets: {foo-0: 5}\n"
        "    expect:\n      records: [{kind: offset_commit, partition: foo-0, offset: 6}]\n"
    )
    with BrokerProcess(tmp_path / "data") as broker:
        target = KafkaTarget(broker.bootstrap).check()
        assert target.shows_records
        passing = run(target, tags=RECORDS, version_selection="latest", out=io.StringIO())
        failing = run(target, scenarios=[wrong], version_selection="latest", out=io.StringIO())
    assert passing.exit_code == 0, _summary(passing)
    assert {r.scenario for r in passing.results if r.status == "passed"} == set(RECORDS)
    [result] = failing.results
    assert result.status == "failed"
    assert result.reason == (
        "expect.records: expected [offset_commit ($group, foo-0, offset 6)], "
        "got [offset_commit ($group, foo-0, offset 5)]"
    )


MAX_SIZE_ONE = ["max-size-refuses-new-member-in-stable-group", "max-size-static-members"]


def test_declared_broker_settings_run_what_kafkas_defaults_cannot(tmp_path):
    """``coordspec broker --broker-config group.max.size=1 ...``: without --broker-setting the
    scenarios that need those settings are not run (the reason names the flag that would run
    them); declared, the oracle models the broker with them and they pass."""
    data = tmp_path / "data"
    settings = ["group.max.size=1", "offset.metadata.max.bytes=8"]
    flags = [arg for s in settings for arg in ("--broker-config", s)]
    chosen = [*MAX_SIZE_ONE, "commit-metadata-too-large"]
    with BrokerProcess(data, *flags) as broker:
        before = run(
            KafkaTarget(broker.bootstrap).check(),
            tags=chosen,
            version_selection="latest",
            out=io.StringIO(),
        )
        declared = tmp_path / "server.properties"
        declared.write_text("broker.id=0\noffset.metadata.max.bytes=8\n")  # broker.id: ignored
        after = subprocess.run(
            [
                *COORDSPEC,
                "conform",
                "--target",
                "kafka",
                "--bootstrap",
                broker.bootstrap,
                "--versions",
                "latest",
                "--tags",
                *chosen,
                "--broker-setting",
                settings[0],
                "--broker-settings-file",
                str(declared),
            ],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
    reasons = {r.scenario: r.reason for r in before.results if r.status == "not_run"}
    assert reasons.keys() == set(chosen)
    assert reasons[MAX_SIZE_ONE[0]] == (
        "needs broker settings group.max.size=1 (target: group.max.size=2147483647); "
        "if the broker has them, run with --broker-setting group.max.size=1"
    )
    assert after.returncode == 0, after.stdout + after.stderr
    assert "3 runs: 3 passed" in after.stdout


def test_a_bad_broker_setting_is_one_line(tmp_path):
    assert _conform_error("--broker-setting", "group.max.size=0") == (
        2,
        "coordspec conform: --broker-setting group.max.size: expected an integer >= 1, got '0'\n",
    )
    declared = tmp_path / "server.properties"
    declared.write_text("# ours\noffsets.retention.minutes = soon\n")
    assert _conform_error("--broker-settings-file", str(declared)) == (
        2,
        (
            f"coordspec conform: --broker-settings-file {declared}:2 offsets.retention.minutes: "
            "expected an integer >= 1, got 'soon'\n"
        ),
    )


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]  # closed again: nothing listens there until someone does


def _wait_for_port(port: int, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.05)


def test_the_readme_command_checks_a_broker_at_host_port_and_runs_shell_fault_hooks(tmp_path):
    """``coordspec conform --target kafka --bootstrap HOST:PORT``, as the README shows it, on a
    broker run as a user runs theirs: a background process that the --on-restart hook, a shell
    script, kills and starts again."""
    port, pidfile = _free_port(), tmp_path / "broker.pid"
    start, restart = tmp_path / "start.sh", tmp_path / "restart.sh"
    start.write_text(
        f"cd {ROOT}\n{sys.executable} -m coordspec.broker.server --port {port} --data {tmp_path / 'data'} "
        f">/dev/null 2>&1 &\necho $! > {pidfile}\n"
    )
    restart.write_text(
        f'set -e\npid=$(cat {pidfile})\nkill "$pid"\nwhile kill -0 "$pid" 2>/dev/null; do sleep 0.05; done\n'
        f"sh {start}\n"
        # A hook returns once the broker is back (the README says so): here, once it listens.
        f"{sys.executable} -c 'import socket, time\n"
        f'while socket.socket().connect_ex(("127.0.0.1", {port})): time.sleep(0.05)\'\n'
        f'test -n "$COORDSPEC_GROUP_ID" && test "$COORDSPEC_COORDINATOR" = 127.0.0.1:{port}\n'
    )
    subprocess.run(["sh", str(start)], check=True)
    try:
        _wait_for_port(port)
        done = subprocess.run(
            [
                *COORDSPEC,
                "conform",
                "--target",
                "kafka",
                "--bootstrap",
                f"127.0.0.1:{port}",
                "--on-restart",
                f"sh {restart}",
                "--tags",
                "member-id-required",
                "restart-drops-parked-join",
                "--versions",
                "latest",
            ],
            check=False,
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
        )
    finally:
        subprocess.run(["kill", pidfile.read_text().strip()], check=False)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "2 runs: 2 passed" in done.stdout


def _conform_error(*args: str) -> tuple[int, str]:
    done = subprocess.run(
        [*COORDSPEC, "conform", *args],
        check=False,
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=60,
    )
    return done.returncode, done.stderr


def test_an_unreachable_broker_is_one_line():
    port = _free_port()
    code, stderr = _conform_error("--target", "kafka", "--bootstrap", f"127.0.0.1:{port}")
    assert code == 2
    assert stderr == f"coordspec conform: cannot reach 127.0.0.1:{port}: Connection refused\n"


def test_a_missing_or_malformed_bootstrap_is_one_line():
    assert _conform_error("--target", "kafka") == (
        2,
        "coordspec conform: the kafka target needs --bootstrap HOST:PORT\n",
    )
    assert _conform_error("--target", "kafka", "--bootstrap", "nohost") == (
        2,
        "coordspec conform: --bootstrap must be HOST:PORT[,HOST:PORT...], got 'nohost'\n",
    )


@contextmanager
def _server(answer: bytes | None):
    """A TCP server on 127.0.0.1 that answers every connection with ``answer`` and closes it,
    or (None) reads and never answers."""
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve():
        listener.settimeout(0.1)
        held = []
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except TimeoutError:
                continue
            conn.recv(4096)
            if answer is None:
                held.append(conn)
            else:
                conn.sendall(answer)
                conn.close()
        for conn in held:
            conn.close()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        stop.set()
        thread.join()
        listener.close()


def test_an_endpoint_that_does_not_speak_kafka_is_one_line():
    with _server(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n") as port:
        code, stderr = _conform_error("--target", "kafka", "--bootstrap", f"127.0.0.1:{port}")
    assert code == 2
    assert stderr.count("\n") == 1
    assert stderr.startswith(
        f"coordspec conform: 127.0.0.1:{port} does not speak Kafka: a frame of "
    )


def test_a_silent_endpoint_times_out_in_one_line(monkeypatch):
    monkeypatch.setattr(KafkaTarget, "timeout_s", 0.5)
    with _server(None) as port, pytest.raises(SuiteError) as caught:
        run(
            "kafka",
            bootstrap=f"127.0.0.1:{port}",
            scenarios=[SCENARIO_DIR / "member-id-required.yaml"],
            out=io.StringIO(),
        )
    assert (
        str(caught.value)
        == f"127.0.0.1:{port} does not speak Kafka: no answer to ApiVersions v3 within 0.5 s"
    )
