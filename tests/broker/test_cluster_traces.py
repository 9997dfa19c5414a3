"""The cluster brokers' traces of the group protocol, checked offline against the reference.

Every broker writes ``<cluster dir>/broker-<id>/trace.jsonl``, all under one run and one
clock; their union is the cluster's trace, in which a group's coordinator may change
(a ``load_group`` fault where a broker loads the group). :func:`assert_traces_replay` is
what the fault tests run after each fault; the test here shows that it fails on a trace
with one planted wrong answer (the helpers live with the fault tests that use them:
tests/broker/test_cluster_failover.py).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from cluster_fixtures import SETTINGS, zookeeper_fixture  # noqa: F401 - the module's ZooKeeper, by name
from test_cluster_failover import (
    PARTITIONS,
    assert_traces_replay,
    check,
    consume_as_a_group,
    create_topic,
    produce,
)

from coordspec.broker.cluster.group_trace import GroupTrace
from coordspec.broker.cluster.launcher import Cluster
from coordspec.broker.group_image import Image
from coordspec.broker.trace import Trace
from coordspec.reference.failover.events import BecomeCoordinator, LoadGroup, ResignCoordinator
from coordspec.reference.failover.host import CoordinatorHost
from coordspec.reference.group import (
    CommitPartition,
    CommitTopic,
    GroupConfig,
    JoinGroup,
    OffsetCommit,
    Protocol,
)
from coordspec.reference.group.effects import Reply

pytestmark = [pytest.mark.zookeeper, pytest.mark.wire]

TOPIC = "audit"
GROUP = "traced-group"


def test_a_planted_wrong_answer_is_reported(tmp_path: Path, zookeeper_connect: str) -> None:
    with Cluster(
        tmp_path / "cluster",
        3,
        zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}",
        settings=SETTINGS,
    ) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        produce(cluster.bootstrap, TOPIC, [f"value-{i}" for i in range(12)])
        consume_as_a_group(cluster.bootstrap, TOPIC, GROUP, 12)
        findings = assert_traces_replay(cluster, GROUP, min_checked=6)
        files = cluster.trace_files()
    assert findings.totals.keys >= 1
    # The coordinator's last OffsetFetch answer (after the commit), with the offsets one further on.
    lines = [line for path in files for line in path.read_text().splitlines()]
    index = max(
        i
        for i, line in enumerate(lines)
        if (record := json.loads(line))["kind"] == "response"
        and record["api"] == "OffsetFetch"
        and record["group_id"] == GROUP
    )
    record = json.loads(lines[index])
    partitions = [p for topic in record["fields"]["topics"] for p in topic["partitions"]]
    assert any(p["committed_offset"] > 0 for p in partitions)
    for partition in partitions:
        partition["committed_offset"] += 1
    lines[index] = json.dumps(record, separators=(",", ":"))
    planted = tmp_path / "planted.jsonl"
    planted.write_text("\n".join(lines) + "\n")
    violations = check(planted).violations
    assert [(v["api"], v["line"]) for v in violations] == [("OffsetFetch", index + 1)], violations


# (when the broker started, the load_group's down_ms): a broker that has run for 1.5 ZooKeeper
# session timeouts before it became coordinator (at 8000) knows the previous one was up until
# then; one that has just started knows only when the previous one last wrote (1500).
@pytest.mark.parametrize(("started_ms", "down_ms"), [(0, 2000), (7000, 1500)])
def test_only_what_a_coordinator_decides_is_traced(
    tmp_path: Path, started_ms: int, down_ms: int
) -> None:
    """GroupTrace on the reference's coordinator host, driven as a cluster broker drives it:
    a request for a partition the broker does not serve is not traced, a group's first
    request is preceded by its load_group fault and the topics it was loaded with (stamped
    at the load), and a write in flight when the broker resigns keeps no response; the trace
    replays."""
    host = CoordinatorHost(1, 2, GroupConfig(initial_rebalance_delay_ms=0))
    served, other = (
        next(g for g in (f"g{i}" for i in range(20)) if host.partition_for(g) == p) for p in (0, 1)
    )
    path = tmp_path / "trace.jsonl"
    image = Image(1, {"t": 1}, {"t": "AAAAAAAAAAAAAAAAAAAAAQ"})
    trace = GroupTrace(
        Trace(path, 1, 0, run="cluster-test", epoch_ms=0), host, 4000, started_ms, lambda: image
    )

    def handle(event, now_ms: int) -> list:
        effects = host.handle(event)
        for effect in effects:
            if isinstance(effect, Reply):
                trace.reply(now_ms, effect, isinstance(event, ResignCoordinator))
        if isinstance(event, ResignCoordinator):
            trace.resigned(event.partition)
        return effects

    handle(image.event(7000), 7000)
    trace.became(0, 8000)
    handle(BecomeCoordinator(0, 3, 8000), 8000)
    handle(LoadGroup(0, 3, (), 0, 8100), 8100)
    trace.loaded(0, 8100, last_write_ms=1500)
    join = JoinGroup(
        1, 5, 9000, group_id=served, member_id="", protocols=(Protocol("range", b"\x00"),)
    )
    elsewhere = JoinGroup(
        2, 5, 9000, group_id=other, member_id="", protocols=(Protocol("range", b"\x00"),)
    )
    commit = OffsetCommit(
        3, 8, 9100, group_id=served, topics=(CommitTopic("t", (CommitPartition(0, 7),)),)
    )
    for request in (join, elsewhere, commit):
        trace.request(f"c{request.request_id}", request)
        handle(request, request.now_ms)
    handle(
        ResignCoordinator(0, 4, 9200), 9200
    )  # the commit's write was never committed: NOT_COORDINATOR
    trace.close()

    records = [json.loads(line) for line in path.read_text().splitlines()]
    assert [
        (r["kind"], r.get("api") or r.get("fault"), r["group_id"], r["t_ms"]) for r in records
    ] == [
        ("fault", "load_group", served, 8100),
        ("metadata_image", None, served, 8100),
        ("request", "JoinGroup", served, 9000),
        ("response", "JoinGroup", served, 9000),
        ("request", "OffsetCommit", served, 9100),
    ]
    assert records[0]["down_ms"] == down_ms
    assert records[1]["topics"] == {"t": 1}
    assert records[3]["fields"]["error_code"] == 79  # MEMBER_ID_REQUIRED
    findings = check(path)
    assert (
        findings.violations == [] and findings.totals.events == 5 and findings.totals.unchecked == 0
    )


def test_a_cluster_started_again_keeps_its_run(tmp_path: Path, zookeeper_connect: str) -> None:
    """Stopped and started again over the same data, the cluster's brokers go on with the same
    run and clock: the group, loaded back from its log, is checked across the restart."""
    runs = []
    for first in (True, False):
        with Cluster(
            tmp_path / "cluster",
            3,
            zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}",
            settings=SETTINGS,
        ) as cluster:
            if first:
                create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
            produce(cluster.bootstrap, TOPIC, [f"value-{i}" for i in range(6)])
            consume_as_a_group(cluster.bootstrap, TOPIC, GROUP, 6)
            runs.append((cluster.trace_run, cluster.trace_epoch_ms))
    assert runs[0] == runs[1]
    assert_traces_replay(cluster, GROUP, min_checked=20)
    records = [
        json.loads(line) for path in cluster.trace_files() for line in path.read_text().splitlines()
    ]
    assert {r["run"] for r in records} == {runs[0][0]}
    assert (
        sum(1 for r in records if r["group_id"] == GROUP and r["kind"] == "fault") >= 2
    )  # loaded at each start


def test_no_trace(tmp_path: Path, zookeeper_connect: str) -> None:
    with Cluster(
        tmp_path / "cluster",
        3,
        zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}",
        settings=SETTINGS,
        broker_args=("--no-trace",),
    ) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        produce(cluster.bootstrap, TOPIC, [f"value-{i}" for i in range(3)])
        consume_as_a_group(cluster.bootstrap, TOPIC, GROUP, 3)
    assert cluster.trace_files() == []
