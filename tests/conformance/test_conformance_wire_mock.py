"""librdkafka's mock cluster, checked through the kafka target: a lenient fake, so the run
lists divergences from Kafka. These tests pin down a few that were found by running the
catalog against it (confluent-kafka 2.16.1, librdkafka 2.16.0); each is a place where the
mock answers what Apache Kafka's group coordinator does not, and each must be reported
against the scenario step and spec rule that checks it."""

from __future__ import annotations

import asyncio
import io

import pytest

from coordspec.conformance.suite import run
from coordspec.conformance.suite.loader import SCENARIO_DIR
from coordspec.conformance.suite.mock_target import start_mock
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.requests import Heartbeat

pytestmark = pytest.mark.wire

# scenario -> (failing step, rule reported, what the oracle says), and why Kafka differs.
KNOWN = {
    # KIP-394 (Kafka 2.2): a dynamic member joining with an empty member id at JoinGroup v4+
    # gets MEMBER_ID_REQUIRED and an id to join with; the mock admits it at once.
    "member-id-required": (1, "GM-3", "error_code: expected MEMBER_ID_REQUIRED (79), got NONE (0)"),
    # Kafka's classic coordinator answers a heartbeat for a group it does not know with
    # UNKNOWN_MEMBER_ID (the group manager throws UnknownMemberIdException for a missing
    # group); the mock answers GROUP_ID_NOT_FOUND, which a classic heartbeat never returns.
    "heartbeat-validation": (
        1,
        "GM-30",
        "error_code: expected UNKNOWN_MEMBER_ID (25), got GROUP_ID_NOT_FOUND (69)",
    ),
    # A commit with a generation to a group Kafka does not know is fenced: ILLEGAL_GENERATION
    # below OffsetCommit v9 (GROUP_ID_NOT_FOUND from v9); the mock stores it.
    "commit-to-unknown-group-before-v9": (
        1,
        "GM-50",
        "error_code: expected ILLEGAL_GENERATION (22), got NONE (0)",
    ),
    # Kafka stores a null commit metadata as "" (OffsetAndMetadata's NO_METADATA) and
    # OffsetFetch returns ""; the mock hands back null.
    "commit-null-metadata": (2, "GM-53", "metadata: expected '', got None"),
    # OffsetFetch v2+ with null topics asks for every committed partition of the group, and
    # Kafka lists them; the mock answers a null topics array.
    "offset-fetch-all-partitions": (2, "GM-54", "topics: expected 2 entries, got None"),
}


@pytest.fixture(scope="module")
def outcome(tmp_path_factory):
    target = start_mock()
    try:
        return run(
            target,
            scenarios=[SCENARIO_DIR / f"{name}.yaml" for name in KNOWN],
            version_selection="oldest",
            report=tmp_path_factory.mktemp("mock") / "report",
            out=io.StringIO(),
        )
    finally:
        target.stop()


@pytest.mark.parametrize("scenario", sorted(KNOWN))
def test_a_known_divergence_is_reported_at_its_step_and_rule(outcome, scenario):
    step, rule, message = KNOWN[scenario]
    [result] = [r for r in outcome.results if r.scenario == scenario]
    assert result.status == "failed", result.reason
    assert result.failure.kind == "oracle"
    assert result.failure.step == step
    assert rule in result.failure.rules
    assert message in result.failure.message


def test_the_report_lists_the_divergences_by_rule(outcome):
    report = next(p for p in outcome.written if p.suffix == ".md").read_text()
    assert outcome.exit_code == 1
    rows = {line.split(" | ")[0].strip("| "): line for line in report.splitlines()}
    for _, rule, _ in KNOWN.values():
        assert "| ✗ failed |" in rows[rule], rows.get(rule)


def test_a_version_the_mock_advertises_but_cannot_read():
    """ApiVersions advertises JoinGroup up to v6 (the first flexible version), but the mock
        closes the connection on a v6 JoinGroup, which Kafka (and the embedded broker, decoding
        with Kafka's schema through kio) answers. The run fails in one line, not a traceback, that
    says which connection closed after which request."""
    target = start_mock()
    try:
        assert target.versions["JoinGroup"] == range(7)
        result = run(
            target,
            scenarios=[SCENARIO_DIR / "member-id-required.yaml"],
            version_selection="JoinGroup=6",
            out=io.StringIO(),
        ).results[0]
    finally:
        target.stop()
    assert result.status == "failed"
    assert result.failure.kind == "connection"
    assert result.failure.message.startswith("client c1: the broker closed the connection to ")
    assert " after JoinGroup v6 (correlation id " in result.failure.message


def test_requests_go_to_the_groups_coordinator_and_a_client_finds_it_again_after_not_coordinator():
    """The mock runs 3 brokers and answers NOT_COORDINATOR on a broker that does not
    coordinate the group, so it shows the routing: a request goes where FindCoordinator
    says; a NOT_COORDINATOR answer is handed to the runner as it is, and the client's next
    request finds the coordinator again, as a client would."""
    target = start_mock()

    async def heartbeat(session) -> ErrorCode:
        await session.send(
            "c1", Heartbeat(1, 3, 0, group_id=session.group_id, generation_id=1, member_id="nobody")
        )
        return (await session.receive("c1", 5_000))[0].error_code

    async def scenario():
        for i in range(30):  # a group that the bootstrap broker does not coordinate
            session = await target.open(f"coordspec-routing-{i}", target.config)
            if session.coordinator != (target.host, target.port):
                break
            await session.close()
        else:
            pytest.fail("every group landed on the bootstrap broker")
        try:
            routed = await heartbeat(session)
            session.clients["c1"].coordinators[session.group_id] = (
                target.host,
                target.port,
            )  # as if it had moved
            misrouted = await heartbeat(session)
            forgotten = session.group_id not in session.clients["c1"].coordinators
            return routed, misrouted, forgotten, await heartbeat(session)
        finally:
            await session.close()

    try:
        routed, misrouted, forgotten, found_again = asyncio.run(scenario())
    finally:
        target.stop()
    assert (
        routed == ErrorCode.GROUP_ID_NOT_FOUND
    )  # the coordinator's own answer (a divergence, see KNOWN)
    assert misrouted == ErrorCode.NOT_COORDINATOR
    assert forgotten
    assert found_again == ErrorCode.GROUP_ID_NOT_FOUND
