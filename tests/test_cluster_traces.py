"""The cluster brokers' traces of the group protocol, checked offline against the reference.

Every broker writes ``<cluster dir>/broker-<id>/trace.jsonl``, all under one run and one
clock; their union is the cluster's trace, in which a group's coordinator may change
(a ``load_group`` fault where a broker loads the group). :func:`assert_traces_replay` is
what the fault tests run after each fault; the test here shows that it fails on a trace
with one planted wrong answer (the helpers live with the fault tests that use them:
tests/test_cluster_failover.py).
"""

from __future__ import annotations

import json
from pathlib import Path

from cluster_fixtures import BROKER_ARGS, zookeeper_fixture  # noqa: F401 - the module's ZooKeeper, by name
from test_cluster_failover import PARTITIONS, assert_traces_replay, check, consume_as_a_group, create_topic, produce

from broker.cluster.launcher import Cluster

TOPIC = "audit"
GROUP = "traced-group"


def test_a_planted_wrong_answer_is_reported(tmp_path: Path, zookeeper_connect: str) -> None:
    with Cluster(tmp_path / "cluster", 3, zookeeper_connect=f"{zookeeper_connect}/{tmp_path.name}", broker_args=BROKER_ARGS) as cluster:
        create_topic(cluster.bootstrap, TOPIC, PARTITIONS)
        produce(cluster.bootstrap, TOPIC, [f"value-{i}" for i in range(12)])
        consume_as_a_group(cluster.bootstrap, TOPIC, GROUP, 12)
        findings = assert_traces_replay(cluster, tmp_path / "trace.jsonl", GROUP, min_checked=6)
    assert findings.totals.keys >= 1
    # The coordinator's last OffsetFetch answer (after the commit), with the offsets one further on.
    lines = (tmp_path / "trace.jsonl").read_text().splitlines()
    index = max(i for i, line in enumerate(lines)
                if (record := json.loads(line))["kind"] == "response" and record["api"] == "OffsetFetch" and record["group_id"] == GROUP)
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
