"""The oracle catches a broker that differs from the reference, names the step and the rule,
and accepts every outcome Kafka leaves open."""

from __future__ import annotations

import dataclasses
import io
from pathlib import Path

from coordspec.conformance.suite import run
from coordspec.conformance.suite.loader import SCENARIO_DIR
from coordspec.conformance.suite.reference_target import ReferenceTarget
from coordspec.conformance.suite.verdicts import api_verdicts, rule_verdicts
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import GroupConfig
from coordspec.reference.group.responses import (
    CommitPartitionResponse,
    CommitTopicResponse,
    HeartbeatResponse,
    JoinGroupResponse,
    OffsetCommitResponse,
)


def scenario(name: str) -> Path:
    return SCENARIO_DIR / f"{name}.yaml"


class RewritingTarget(ReferenceTarget):
    """The reference with a bug: ``rewrite(request, response)`` changes what clients hear."""

    name = "rewriting"

    def __init__(self, rewrite, config: GroupConfig | None = None, seed: int = 0) -> None:
        super().__init__(seed=seed)
        self.rewrite = rewrite
        self.session_config = config

    async def open(self, group_id, config, **options):
        session = await super().open(group_id, self.session_config or config, **options)
        return _RewritingSession(session, self.rewrite)


class _RewritingSession:
    def __init__(self, inner, rewrite) -> None:
        self.inner, self.rewrite, self.sent = inner, rewrite, {}
        self.faults = inner.faults

    def now_ms(self):
        return self.inner.now_ms()

    async def send(self, client, request):
        self.sent[client] = request
        await self.inner.send(client, request)

    async def receive(self, client, within_ms):
        got = await self.inner.receive(client, within_ms)
        if got is None:
            return None
        response, at = got
        return self.rewrite(self.sent[client], response), at

    async def sleep(self, ms):
        await self.inner.sleep(ms)

    async def written(self):
        return await self.inner.written()

    async def close(self):
        pass


def accepts_stale_commits(request, response):
    if isinstance(response, OffsetCommitResponse):
        return OffsetCommitResponse(
            tuple(
                CommitTopicResponse(
                    t.name,
                    tuple(
                        CommitPartitionResponse(p.partition_index, ErrorCode.NONE)
                        for p in t.partitions
                    ),
                )
                for t in response.topics
            )
        )
    return response


def test_a_broker_that_accepts_a_stale_generation_commit_is_caught_at_that_step(tmp_path):
    outcome = run(
        RewritingTarget(accepts_stale_commits),
        scenarios=[scenario("stale-generation-commit")],
        report=tmp_path,
        out=io.StringIO(),
    )
    assert {r.status for r in outcome.results} == {"failed"}
    failure = outcome.results[0].failure
    assert failure.kind == "oracle"
    assert failure.step == 9 and failure.api == "OffsetCommit"
    assert failure.line == 31  # the line of the step in the file
    assert "GM-50" in failure.rules
    assert failure.request["generation_id"] == 1
    assert failure.response["topics"][0]["partitions"][0]["error_code"] == 0
    assert failure.rules == ("GM-50",)  # the step names its rule
    assert any('"error_code": 22' in allowed for allowed in failure.allowed)  # ILLEGAL_GENERATION
    assert [v.verdict for v in rule_verdicts(outcome.results) if v.rule == "GM-50"] == ["failed"]
    report = (tmp_path / "conformance.md").read_text()
    assert "step 9 (oracle)" in report and "stale-generation-commit.yaml:31" in report
    assert (
        '  -     "error_code": 22,\n  +     "error_code": 0,' in report
    )  # the diff, allowed -> broker
    assert outcome.exit_code == 1


def wrong_heartbeat_error_at_v2(request, response):
    if (
        isinstance(response, HeartbeatResponse)
        and request.api_version == 2
        and response.error_code == ErrorCode.REBALANCE_IN_PROGRESS
    ):
        return HeartbeatResponse(ErrorCode.UNKNOWN_MEMBER_ID)
    return response


def test_a_wrong_error_code_at_one_version_fails_that_version_only():
    outcome = run(
        RewritingTarget(wrong_heartbeat_error_at_v2),
        scenarios=[scenario("heartbeat-during-rebalance")],
        out=io.StringIO(),
    )
    failed = [r for r in outcome.results if r.status == "failed"]
    assert len(failed) == 1
    assert failed[0].plan["Heartbeat"] == 2
    assert failed[0].failure.step == 7 and failed[0].failure.kind == "oracle"
    assert "GM-30" in failed[0].failure.rules
    table = api_verdicts(outcome.results)
    assert table["Heartbeat"][2] == "failed"
    assert {v for n, v in table["Heartbeat"].items() if n != 2} == {"passed"}


def test_a_broker_without_the_initial_rebalance_delay_is_caught():
    eager = RewritingTarget(
        lambda request, response: response, config=GroupConfig(initial_rebalance_delay_ms=0)
    )
    outcome = run(
        eager,
        scenarios=[scenario("member-id-required")],
        version_selection="latest",
        out=io.StringIO(),
    )
    failure = outcome.results[0].failure
    assert failure is not None and failure.kind == "oracle"
    assert failure.step == 2
    assert "parked" in failure.message and "GM-10" in failure.rules


def test_a_leader_that_is_not_a_member_is_caught():
    def strange_leader(request, response):
        if isinstance(response, JoinGroupResponse) and response.generation_id == 2:
            return dataclasses.replace(response, leader="somebody-else")
        return response

    outcome = run(
        RewritingTarget(strange_leader),
        scenarios=[scenario("leader-leaves-mid-rebalance")],
        version_selection="latest",
        out=io.StringIO(),
    )
    failure = outcome.results[0].failure
    assert failure.kind == "oracle" and failure.step == 12
    assert "leader" in failure.message


def test_every_leader_kafka_allows_is_accepted():
    leaders = set()

    def record(request, response):
        if (
            isinstance(response, JoinGroupResponse)
            and response.generation_id == 2
            and response.leader
        ):
            leaders.add(response.leader.split("-")[0])  # the client id that prefixes the member id
        return response

    for seed in range(8):
        outcome = run(
            RewritingTarget(record, seed=seed),
            scenarios=[scenario("leader-leaves-mid-rebalance")],
            version_selection="latest",
            out=io.StringIO(),
        )
        assert outcome.exit_code == 0, outcome.results[0].reason
    assert leaders == {"c2", "c3"}


def test_every_protocol_a_tie_allows_is_accepted():
    chosen = set()

    def record(request, response):
        if isinstance(response, JoinGroupResponse) and response.error_code == ErrorCode.NONE:
            chosen.add(response.protocol_name)
        return response

    for seed in range(8):
        outcome = run(
            RewritingTarget(record, seed=seed),
            scenarios=[scenario("protocol-tie")],
            version_selection="latest",
            out=io.StringIO(),
        )
        assert outcome.exit_code == 0, outcome.results[0].reason
    assert chosen == {"range", "roundrobin"}


def test_an_expectation_the_broker_does_not_meet_is_reported_as_such(tmp_path):
    text = (
        scenario("member-id-required").read_text().replace("generation_id: 1,", "generation_id: 7,")
    )
    wrong = tmp_path / "wrong-expectation.yaml"
    wrong.write_text(text)
    outcome = run("reference", scenarios=[wrong], version_selection="latest", out=io.StringIO())
    failure = outcome.results[0].failure
    assert failure.kind == "expectation" and failure.step == 3
    assert failure.message == "expect.generation_id: expected 7, got 1"


class LaggyTarget(ReferenceTarget):
    """The reference behind a network: requests (of the ``lagging`` APIs, default all) reach
    it ``lag_ms`` after they were sent."""

    name = "laggy"

    def __init__(
        self, lag_ms: int, latency_ms: int, lagging: tuple[str, ...] = (), seed: int = 0
    ) -> None:
        super().__init__(seed=seed)
        self.lag_ms, self.latency_ms, self.lagging = lag_ms, latency_ms, lagging

    async def open(self, group_id, config, **options):
        session = await super().open(group_id, config, **options)
        lag, lagging = self.lag_ms, self.lagging

        async def late_send(client, request, send=session.send):
            if not lagging or request.api in lagging:
                await session.sleep(lag)
            await send(client, request)

        session.send = late_send
        return session


RACY = """\
# A heartbeat sent 5 ms before its session ends.
checks: a heartbeat that races the end of its member's session
rules: [GM-33]
versions: {JoinGroup: 9}
clients: [c1]
steps:
  - c1: JoinGroup
    group_instance_id: i1
    expect: parked
  - await: c1
    within: 3000
    expect: {error: NONE}
  - c1: SyncGroup
    expect: {error: NONE}
  - sleep: 9995
  - c1: Heartbeat                # no expectation: either outcome is Kafka's
"""


def test_a_timer_racing_a_request_over_the_network_may_go_either_way(tmp_path):
    path = tmp_path / "racy.yaml"
    path.write_text(RACY)
    # Only the heartbeat is slow: it reaches the broker 10 ms late, 5 ms after the session ended.
    unaware = run(
        LaggyTarget(lag_ms=10, latency_ms=0, lagging=("Heartbeat",)),
        scenarios=[path],
        out=io.StringIO(),
    )
    failure = unaware.results[0].failure
    assert failure is not None and failure.kind == "oracle" and failure.step == 5
    assert failure.response == {"error_code": ErrorCode.UNKNOWN_MEMBER_ID}
    assert failure.allowed == ('{"error_code": 0}',)
    aware = run(
        LaggyTarget(lag_ms=10, latency_ms=20, lagging=("Heartbeat",)),
        scenarios=[path],
        out=io.StringIO(),
    )
    assert aware.exit_code == 0, aware.results[0].reason
    in_time = run(LaggyTarget(lag_ms=0, latency_ms=20), scenarios=[path], out=io.StringIO())
    assert in_time.exit_code == 0, in_time.results[0].reason


def test_the_catalog_passes_behind_a_network():
    outcome = run(LaggyTarget(lag_ms=15, latency_ms=20), out=io.StringIO())
    assert [r.label for r in outcome.results if r.status != "passed"] == []


def test_an_allowed_divergence_is_reported_as_allowed_and_does_not_fail(tmp_path):
    allow = tmp_path / "allow.yaml"
    allow.write_text(
        "# my broker's known divergences\n- rule: GM-5\n  reason: in the works\n"
        "- rule: GM-50\n  api: OffsetCommit\n  versions: 2+\n  reason: accepts stale commits (known bug 12)\n"
    )
    outcome = run(
        RewritingTarget(accepts_stale_commits),
        scenarios=[scenario("stale-generation-commit")],
        allow=allow,
        junit=tmp_path / "junit.xml",
        report=tmp_path,
        out=io.StringIO(),
    )
    assert {r.status for r in outcome.results} == {"allowed"}
    assert outcome.exit_code == 0
    assert outcome.results[0].reason.startswith(
        "allowed (accepts stale commits (known bug 12)): the reference does not allow"
    )
    assert [v.verdict for v in rule_verdicts(outcome.results) if v.rule == "GM-50"] == ["allowed"]
    report = (tmp_path / "conformance.md").read_text()
    assert "] (allowed) OffsetCommit v" in report and "step 9 (oracle)" in report
    junit = (tmp_path / "junit.xml").read_text()
    assert "<failure" not in junit and "allowed divergence" in junit


def test_an_allowance_for_other_versions_does_not_hide_a_failure(tmp_path):
    allow = tmp_path / "allow.yaml"
    allow.write_text(
        "- scenario: stale-*\n  api: OffsetCommit\n  versions: 2-4\n  reason: old versions only\n"
    )
    outcome = run(
        RewritingTarget(accepts_stale_commits),
        scenarios=[scenario("stale-generation-commit")],
        allow=allow,
        out=io.StringIO(),
    )
    by_version = {r.failure.api_version: r.status for r in outcome.results}
    assert by_version == {
        2: "allowed",
        3: "allowed",
        4: "allowed",
        5: "failed",
        6: "failed",
        7: "failed",
        8: "failed",
        9: "failed",
    }
    assert outcome.exit_code == 1


class EagerBroker(ReferenceTarget):
    """A broker without the initial rebalance delay, which says so (not configurable)."""

    name = "eager"
    configurable = False

    def __init__(self) -> None:
        super().__init__(config=GroupConfig(initial_rebalance_delay_ms=0))


def test_an_expectation_that_assumes_kafkas_defaults_says_so_on_a_broker_configured_otherwise():
    outcome = run(
        EagerBroker(),
        scenarios=[scenario("member-id-required"), scenario("group-max-size")],
        version_selection="latest",
        out=io.StringIO(),
    )
    by_name = {r.scenario: r for r in outcome.results}
    failure = by_name["member-id-required"].failure
    assert failure.kind == "expectation" and failure.step == 2
    assert failure.message.endswith(
        "(the reference accepts the response with this broker's settings "
        "group.initial.rebalance.delay.ms=0: the scenario may assume Kafka's defaults)"
    )
    assert by_name["group-max-size"].status == "not_run"
    assert by_name["group-max-size"].reason == (
        "needs broker settings group.max.size=2 (target: group.max.size=2147483647); "
        "if the broker has them, run with --broker-setting group.max.size=2"
    )


def test_tags_select_and_leave_out():
    from coordspec.conformance.suite.loader import load_all
    from coordspec.conformance.suite.suite import select

    catalog = load_all()
    static = select(catalog, ["static"])
    assert static and all("static" in s.tags for s in static)
    assert select(catalog, ["static", "!timing"]) == [s for s in static if "timing" not in s.tags]
    assert len(select(catalog, ["!slow"])) == len(catalog) - sum("slow" in s.tags for s in catalog)
