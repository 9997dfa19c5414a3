"""The kafka target's harness against the project's broker (``coordspec broker``): a
bootstrap list, the preflight of advertised listeners, fault hooks that fail or hang, and
a shared broker left without the run's groups (and topics, when asked)."""

from __future__ import annotations

import gc
import io
import subprocess
import sys
import time
from pathlib import Path

import pytest

from coordspec.broker.testing import BrokerProcess, Connection
from coordspec.conformance.suite import run, targets
from coordspec.conformance.suite.kafka_target import FaultCommands, KafkaTarget

pytestmark = pytest.mark.wire

COORDSPEC = [sys.executable, "-m", "coordspec.conformance.cli"]
LIST_GROUPS, METADATA = 16, 3


def conform(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [*COORDSPEC, "conform", *args], cwd=cwd, capture_output=True, text=True, timeout=240
    )


def test_a_broker_advertising_an_address_nobody_can_reach_is_one_line(tmp_path):
    """Listening on 127.0.0.1, advertising 127.0.0.2: the bootstrap answers, nothing else does."""
    with BrokerProcess(tmp_path / "data", "--advertised-host", "127.0.0.2") as broker:
        done = conform("--bootstrap", f"127.0.0.1:{broker.port}", cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr == (
        f"coordspec conform: the broker advertises 127.0.0.2:{broker.port} (broker 1), "
        "which refuses connections: check advertised.listeners\n"
    )


def test_a_run_leaves_no_group_and_with_delete_topics_no_topic(tmp_path):
    """A bootstrap list whose first address is dead, no --target (kafka is implied), topics
    renamed; afterwards the broker lists none of the run's groups (static members, a second
    group, offsets committed) and none of the topics it created."""
    scenarios = (
        "describe-several-groups",
        "static-leave-by-instance-id",
        "static-member-takeover-in-stable",
        "member-id-required",
        "commit-overwrites-and-fetch-per-partition",
    )
    with BrokerProcess(tmp_path / "data") as broker:
        done = conform(
            "--bootstrap",
            f"127.0.0.1:1,127.0.0.1:{broker.port}",
            "--tags",
            *scenarios,
            "--versions",
            "latest",
            "--topics",
            "t1,t2,t3",
            "--delete-topics",
            cwd=tmp_path,
        )
        connection = Connection("127.0.0.1", broker.port)
        groups = connection.request(LIST_GROUPS, 4, {}).groups
        topics = {t.name for t in connection.request(METADATA, 12, {"topics": None}).topics}
        connection.close()
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{len(scenarios)} runs: {len(scenarios)} passed" in done.stdout
    assert "\ndeleted 6 groups\n" in done.stdout  # describe-several-groups has two
    assert "\ndeleted topics t1, t2, t3\n" in done.stdout
    assert groups == ()
    assert topics.isdisjoint({"t1", "t2", "t3", "foo", "bar", "baz"})


def test_topics_made_before_the_run_stay(tmp_path):
    with BrokerProcess(tmp_path / "data") as broker:
        target = KafkaTarget(broker.bootstrap).check()  # creates foo, bar, baz
        second = KafkaTarget(broker.bootstrap).check()
        assert target.created == ["foo", "bar", "baz"] and second.created == []
        assert second.clean_up(delete_topics=True) == []  # no group, no topic of its own


def _dead_or_zombie(pid: int) -> bool:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except FileNotFoundError:
        return True
    return "\nState:\tZ" in status


@pytest.mark.parametrize(
    ("hook", "reason"),
    [
        ("exit 3", "exited with 3, no output"),
        ("echo 'cannot restart: no pid file' >&2; exit 1", "exited with 1: cannot restart"),
        ("sleep 1000 & echo $! > {pidfile}; wait", "did not finish within 1 s (--hook-timeout)"),
    ],
    ids=["silent-failure", "failure", "hang"],
)
def test_a_hook_that_fails_or_hangs_is_an_error_of_the_harness(tmp_path, hook, reason):
    pidfile = tmp_path / "sleep.pid"
    with BrokerProcess(tmp_path / "data") as broker:
        faults = FaultCommands(restart=hook.format(pidfile=pidfile), timeout_s=1)
        target = KafkaTarget(broker.bootstrap, faults=faults).check()
        outcome = run(
            target,
            tags=["restart-drops-parked-join"],
            version_selection="latest",
            out=io.StringIO(),
        )
    [result] = outcome.results
    assert result.status == "error", result.reason
    assert result.failure.kind == "hook"
    assert reason in result.reason
    assert outcome.exit_code == 1
    if pidfile.exists():  # the hook's background child went with its process group
        deadline = time.monotonic() + 10
        while not _dead_or_zombie(int(pidfile.read_text())) and time.monotonic() < deadline:
            time.sleep(0.1)
        assert _dead_or_zombie(int(pidfile.read_text()))


@pytest.mark.zookeeper
def test_no_connection_is_left_behind_to_warn_at_collection(caplog):
    """A connection dropped unclosed (the preflight's FindCoordinator client was) shows, once
    collected, as asyncio's "Task was destroyed but it is pending!" in the user's output: on
    the embedded target, once per cluster the pool starts."""
    target = targets.make("embedded")
    try:
        outcome = run(
            target,
            tags=["member-id-required", "failover-stable-group-survives"],
            version_selection="latest",
            out=io.StringIO(),
        )
    finally:
        target.stop()
    gc.collect()
    assert [r.status for r in outcome.results] == ["passed", "passed"]
    assert "Task was destroyed" not in caplog.text
