"""The broker with planted bugs (planted.py) that the diagnosis tests check: each bug, on,
changes what a client sees; with none on, the proxy is transparent. Tansu (tansu.py) starts,
answers and stops without leaving a process behind."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from planted import BUGS, SCENARIOS, VERSIONS, PlantedBroker, ProxyThread
from tansu import TansuProcess, binary

from coordspec.broker.testing import BrokerProcess, Connection

pytestmark = pytest.mark.wire

OFFSET_FETCH, JOIN_GROUP, LEAVE_GROUP, DELETE_GROUPS = 9, 11, 13, 42
PROTOCOLS = [{"name": "range", "metadata": b""}]


@pytest.fixture(scope="module")
def broker(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, int]]:
    """One broker for all the proxies; no initial rebalance delay, so a join is answered at once."""
    data = tmp_path_factory.mktemp("planted") / "data"
    with BrokerProcess(data, "--broker-config", "group.initial.rebalance.delay.ms=0") as b:
        yield b.host, b.port


def _join(group: str, version: int, **values) -> dict:
    return dict(
        group_id=group,
        session_timeout=10000,
        rebalance_timeout=10000,
        member_id="",
        protocol_type="consumer",
        protocols=PROTOCOLS,
        **values,
    )


def _member_id_required(c: Connection, group: str) -> object:
    r = c.request(JOIN_GROUP, 7, _join(group, 7))
    return int(r.error_code), r.protocol_type, r.protocol_name


def _delete_non_empty(c: Connection, group: str) -> object:
    c.request(JOIN_GROUP, 5, _join(group, 5, group_instance_id="i1"))
    return int(c.request(DELETE_GROUPS, 2, {"groups_names": [group]}).results[0].error_code)


def _empty_group_id(c: Connection, group: str) -> object:
    c.sock.settimeout(1.5)
    c.send(JOIN_GROUP, 5, _join("", 5))
    c.send(DELETE_GROUPS, 2, {"groups_names": [group]})  # held behind it
    try:
        return [int(c.receive()[1].error_code), int(c.receive()[1].results[0].error_code)]
    except TimeoutError:
        return "no answer"


def _offset_fetch(c: Connection, group: str) -> object:
    try:
        return c.request(OFFSET_FETCH, 7, {"group_id": group, "topics": None}).topics
    except Exception as exc:  # noqa: BLE001 - kio's decoding errors have many kinds
        return type(exc).__name__


def _leave_unknown(c: Connection, group: str) -> object:
    r = c.request(LEAVE_GROUP, 2, {"group_id": group, "member_id": "nobody"})
    return int(r.error_code)


def _join_time(c: Connection, group: str) -> object:
    started = time.monotonic()
    c.request(JOIN_GROUP, 5, _join(group, 5, group_instance_id="i1"))
    return "late" if time.monotonic() - started > 2 else "at once"


SEEN: dict[str, Callable[[Connection, str], object]] = {
    "join-member-id-required-fields": _member_id_required,
    "delete-non-empty-group": _delete_non_empty,
    "join-empty-group-id-unanswered": _empty_group_id,
    "offset-fetch-truncated": _offset_fetch,
    "leave-unknown-member-accepted": _leave_unknown,
    "join-answer-late": _join_time,
}


@pytest.mark.parametrize("bug", sorted(BUGS))
def test_a_planted_bug_changes_what_a_client_sees(broker, bug):
    seen = {}
    for on in (False, True):
        with ProxyThread(broker, [bug] if on else []) as proxy:
            host, port = proxy.bootstrap.rsplit(":", 1)
            c = Connection(host, int(port), timeout_s=10)
            try:
                seen[on] = SEEN[bug](c, f"planted-{bug}-{on}")
            finally:
                c.close()
    assert seen[True] != seen[False], seen


def test_an_unknown_bug_is_refused_by_name():
    with pytest.raises(ValueError, match="no planted bug named"):
        ProxyThread(("127.0.0.1", 1), ["no-such-bug"])


def test_with_no_bug_on_the_proxy_is_transparent(tmp_path):
    with PlantedBroker(tmp_path / "data") as broker:
        done = subprocess.run(
            [
                sys.executable,
                "-m",
                "coordspec.conformance.cli",
                "conform",
                "--target",
                "kafka",
                "--bootstrap",
                broker.bootstrap,
                "--tags",
                *SCENARIOS,
                "--versions",
                VERSIONS,
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr
    assert "9 runs: 9 passed" in done.stdout


def test_tansu_starts_answers_and_stops(tmp_path):
    with TansuProcess(binary(), tmp_path / "tansu.log") as tansu:
        pid = tansu.process.pid
        version = subprocess.run(
            [str(binary()), "--version"], capture_output=True, text=True, check=True
        )
        with socket.create_connection(("127.0.0.1", tansu.port), timeout=5):
            pass
    assert version.stdout.split() == ["tansu", "0.6.0"]
    assert not Path(f"/proc/{pid}").exists()
