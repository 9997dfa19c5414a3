"""The kafka target and the recording proxy against secured brokers: the catalog over
SASL_SSL with SCRAM-SHA-512 on the project's cluster (credentials in ZooKeeper), one line
for each misconfiguration, and ``coordspec record`` authenticating upstream."""

from __future__ import annotations

import io
import json
import re
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
import tls_files
from confluent_kafka import Consumer, Producer

from coordspec.broker.cluster.launcher import Cluster
from coordspec.broker.cluster.scram_users import user_path
from coordspec.broker.testing import BrokerProcess
from coordspec.conformance.security import load
from coordspec.conformance.suite import run
from coordspec.conformance.suite.kafka_target import KafkaTarget

pytestmark = pytest.mark.wire

ROOT = Path(__file__).resolve().parents[2]
COORDSPEC = [sys.executable, "-m", "coordspec.conformance.cli"]
USER, PASSWORD = "alice", "alice-secret"
# As the embedded target: one offsets partition, so every group has the same coordinator,
# as the scenarios assume.
SETTINGS = {"offsets.topic.num.partitions": 1, "zookeeper.session.timeout.ms": 4000}
# Together these run every group API (JoinGroup, SyncGroup, Heartbeat, LeaveGroup,
# OffsetCommit, OffsetFetch, DescribeGroups, ListGroups, DeleteGroups, OffsetDelete) in a few
# seconds; the whole catalog at the newest versions takes about a minute and runs on the
# embedded cluster.
EVERY_API = [
    "describe-several-groups",
    "delete-several-groups",
    "commit-from-departed-member",
    "list-groups-after-delete",
    "offset-delete-subscribed-topic",
]
GROUP_APIS = {
    "JoinGroup",
    "SyncGroup",
    "Heartbeat",
    "LeaveGroup",
    "OffsetCommit",
    "OffsetFetch",
    "DescribeGroups",
    "ListGroups",
    "DeleteGroups",
    "OffsetDelete",
}


@pytest.fixture(scope="module", name="tls")
def tls_fixture(tmp_path_factory: pytest.TempPathFactory) -> tls_files.TlsFiles:
    return tls_files.make(tmp_path_factory.mktemp("tls"))


def _listener(directory: Path, tls: tls_files.TlsFiles, mechanisms: str) -> Path:
    config = directory / "security.properties"
    config.write_text(
        "security.protocol=SASL_SSL\n"
        f"ssl.keystore.location={tls.server}\n"
        f"sasl.enabled.mechanisms={mechanisms}\n"
    )
    return config


def _client(tls: tls_files.TlsFiles, **overrides: str) -> list[str]:
    given = {
        "security.protocol": "SASL_SSL",
        "ssl.ca.location": str(tls.ca),
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": USER,
        "sasl.password": PASSWORD,
        **overrides,
    }
    return [f"{key}={value}" for key, value in given.items() if value is not None]


@pytest.mark.zookeeper
@pytest.mark.slow
def test_the_catalog_passes_over_sasl_ssl_with_scram_sha_512_on_the_cluster(tmp_path, tls):
    config = _listener(tmp_path, tls, "SCRAM-SHA-512,SCRAM-SHA-256")
    with Cluster(
        tmp_path / "cluster",
        3,
        settings=SETTINGS,
        security_config=config,
        users={USER: PASSWORD},
    ) as cluster:
        # Stored as Kafka stores SCRAM credentials, for both mechanisms.
        stored = json.loads(cluster.view.client.get(user_path(USER))[0])
        assert set(stored["config"]) == {"SCRAM-SHA-256", "SCRAM-SHA-512"}
        assert re.fullmatch(
            r"salt=\S+,stored_key=\S+,server_key=\S+,iterations=4096",
            stored["config"]["SCRAM-SHA-512"],
        )
        target = KafkaTarget(
            cluster.bootstrap.split(",")[0], security=load(None, _client(tls))
        ).check()
        outcome = run(
            target, tags=EVERY_API, version_selection="latest", concurrency=8, out=io.StringIO()
        )
    failed = [f"{r.label}: {r.status} {r.reason}" for r in outcome.results if r.status != "passed"]
    assert outcome.exit_code == 0 and not failed, failed
    assert len(outcome.results) == len(EVERY_API)
    labels = " ".join(r.label for r in outcome.results)
    assert {api for api in GROUP_APIS if re.search(rf"\b{api}v\d", labels)} == GROUP_APIS


@pytest.fixture(scope="module", name="secured")
def secured_fixture(tmp_path_factory: pytest.TempPathFactory, tls: tls_files.TlsFiles):
    directory = tmp_path_factory.mktemp("secured")
    config, users = (
        _listener(directory, tls, "SCRAM-SHA-512,SCRAM-SHA-256,PLAIN"),
        directory / "users",
    )
    users.write_text(f"{USER}={PASSWORD}\n")
    args = ("--security-config", str(config), "--users", str(users))
    with BrokerProcess(directory / "data", *args) as started:
        yield started


@pytest.fixture(scope="module", name="mutual")
def mutual_fixture(tmp_path_factory: pytest.TempPathFactory, tls: tls_files.TlsFiles):
    """TLS with client certificates signed by the test CA required, no SASL."""
    directory = tmp_path_factory.mktemp("mutual")
    config = directory / "security.properties"
    config.write_text(
        "security.protocol=SSL\n"
        f"ssl.keystore.location={tls.server}\n"
        f"ssl.truststore.location={tls.ca}\n"
        "ssl.client.auth=required\n"
    )
    with BrokerProcess(directory / "data", "--security-config", str(config)) as started:
        yield started


@pytest.fixture(scope="module", name="plaintext")
def plaintext_fixture(tmp_path_factory: pytest.TempPathFactory):
    with BrokerProcess(tmp_path_factory.mktemp("plaintext") / "data") as started:
        yield started


def _not_pem(directory: Path) -> Path:
    path = directory / "truststore.jks"
    path.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02")
    return path


MISCONFIGURATIONS = {
    "bad password": (
        "secured",
        {"sasl.password": "wrong"},
        (
            "authentication failed for user alice with SCRAM-SHA-512: Authentication failed "
            "during authentication due to invalid credentials with SASL mechanism SCRAM-SHA-512"
        ),
    ),
    "unknown user": (
        "secured",
        {"sasl.username": "mallory"},
        "authentication failed for user mallory with SCRAM-SHA-512",
    ),
    "wrong CA": (
        "secured",
        {"ssl.ca.location": "OTHER_CA"},
        "TLS: certificate of 127.0.0.1:{port} not trusted (",
    ),
    "plaintext client on a TLS port": (
        "secured",
        {"security.protocol": "PLAINTEXT"},
        "the broker at 127.0.0.1:{port} speaks TLS: set security.protocol=SSL or SASL_SSL",
    ),
    "TLS client on a plaintext port": (
        "plaintext",
        {},
        "the broker at 127.0.0.1:{port} does not speak TLS",
    ),
    "TLS without SASL on a SASL_SSL port": (
        "secured",
        {"security.protocol": "SSL"},
        "(if it asks for SASL, set security.protocol=SASL_SSL or SASL_PLAINTEXT)",
    ),
    "SASL on a listener without it": (
        "plaintext",
        {"security.protocol": "SASL_PLAINTEXT"},
        "takes no SASL (ILLEGAL_SASL_STATE): set security.protocol=SSL or PLAINTEXT",
    ),
    "no client certificate": (
        "mutual",
        {"security.protocol": "SSL"},
        "(if it asks for a client certificate, set ssl.certificate.location)",
    ),
    "a JKS truststore": (
        "secured",
        {"ssl.ca.location": None, "ssl.truststore.location": "JKS"},
        "is not a PEM file",
    ),
    "an unknown protocol": (
        "secured",
        {"security.protocol": "TLS"},
        "'TLS' is not one of PLAINTEXT, SSL, SASL_PLAINTEXT, SASL_SSL",
    ),
}


@pytest.mark.parametrize("case", MISCONFIGURATIONS, ids=list(MISCONFIGURATIONS))
def test_each_misconfiguration_gives_one_line(case, request, tmp_path, tls):
    which, overrides, expected = MISCONFIGURATIONS[case]
    broker = request.getfixturevalue(which)
    replace = {"OTHER_CA": str(tls.other_ca), "JKS": str(_not_pem(tmp_path))}
    properties = _client(tls, **{k: replace.get(v, v) for k, v in overrides.items()})
    command = [*COORDSPEC, "conform", "--target", "kafka", "--bootstrap", broker.bootstrap]
    for given in properties:
        command += ["--command-property", given]
    done = subprocess.run(
        [*command, "--tags", "describe-unknown-group-is-dead"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    lines = done.stderr.splitlines()
    assert done.returncode == 2, done.stdout + done.stderr
    assert len(lines) == 1 and "Traceback" not in done.stderr, done.stderr
    assert expected.format(port=broker.port) in lines[0], lines[0]


def test_a_client_certificate_opens_a_listener_that_requires_one(mutual, tls):
    properties = _client(
        tls,
        **{
            "security.protocol": "SSL",
            "ssl.certificate.location": str(tls.client_certificate),
            "ssl.key.location": str(tls.client_key),
        },
    )
    command = [*COORDSPEC, "conform", "--target", "kafka", "--bootstrap", mutual.bootstrap]
    for given in properties:
        command += ["--command-property", given]
    done = subprocess.run(
        [*command, "--tags", "describe-unknown-group-is-dead"],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_command_config_file_takes_kafkas_java_names(secured, tmp_path, tls):
    """A file written for Kafka's Java tools: credentials in sasl.jaas.config, other client
    settings left alone; the run then passes over SASL_SSL."""
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_SSL\n"
        f"ssl.truststore.location={tls.ca}\n"
        "sasl.mechanism=SCRAM-SHA-256\n"
        "sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required \\\n"
        f'    username="{USER}" password="{PASSWORD}";\n'
        "client.id=checker\n"
    )
    done = subprocess.run(
        [
            *(*COORDSPEC, "conform", "--target", "kafka", "--bootstrap", secured.bootstrap),
            *("--command-config", str(config), "--tags", "describe-unknown-group-is-dead"),
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "passed" in done.stdout


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_record_authenticates_upstream_and_records(secured, tmp_path, tls):
    """``coordspec record`` in front of the SASL_SSL broker: a plaintext confluent-kafka
    consumer behind it joins a group, and the proxy records the group protocol."""
    port, trace = _free_port(), tmp_path / "trace.jsonl"
    command = [*COORDSPEC, "record", "--listen", f"127.0.0.1:{port}"]
    command += ["--upstream", secured.bootstrap, "--out", str(trace)]
    for given in _client(tls):
        command += ["--command-property", given]
    recorder = subprocess.Popen(command, stderr=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the proxy did not listen"
                time.sleep(0.05)
        producer = Producer({"bootstrap.servers": f"127.0.0.1:{port}"})
        producer.produce("recorded", b"one")
        assert producer.flush(20) == 0
        consumer = Consumer(
            {
                "bootstrap.servers": f"127.0.0.1:{port}",
                "group.id": "recorded-group",
                "auto.offset.reset": "earliest",
            }
        )
        consumer.subscribe(["recorded"])
        message, deadline = None, time.monotonic() + 30
        while message is None and time.monotonic() < deadline:
            message = consumer.poll(0.5)
        consumer.close()
        assert message is not None and message.value() == b"one"
    finally:
        recorder.terminate()
        _, err = recorder.communicate(timeout=20)
    assert "(SASL_SSL)" in err and "upstream:" not in err, err
    apis = {json.loads(line)["api"] for line in trace.read_text().splitlines()}
    assert {"JoinGroup", "SyncGroup"} <= apis
