"""Failures grouped into distinct divergences: one per defect, with its severity, its rules, an
example and a command that reruns it; and ``--allow`` entries at field level that let runs go
on past a tolerated divergence. The broker is the reference with bugs planted in its answers."""

from __future__ import annotations

import dataclasses
import io
import shlex

import pytest
from test_conformance_oracle import RewritingTarget

from coordspec.conformance.simulate.planted import every_partition_none
from coordspec.conformance.suite import run
from coordspec.conformance.suite.divergences import rerun_command
from coordspec.conformance.suite.suite import SuiteError
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import GroupConfig
from coordspec.reference.group.responses import (
    DeleteGroupsResponse,
    JoinGroupResponse,
    LeaveGroupResponse,
    OffsetDeleteResponse,
)


def cosmetic(request, response):
    """Tansu's: MEMBER_ID_REQUIRED answers name the protocol (Kafka: null)."""
    if (
        isinstance(response, JoinGroupResponse)
        and response.error_code == ErrorCode.MEMBER_ID_REQUIRED
        and request.api_version >= 7
    ):
        return dataclasses.replace(response, protocol_type="consumer", protocol_name="")
    return response


def deletes_live_groups(request, response):
    if isinstance(response, DeleteGroupsResponse):
        return DeleteGroupsResponse(
            tuple(
                dataclasses.replace(r, error_code=ErrorCode.NONE)
                if r.error_code == ErrorCode.NON_EMPTY_GROUP
                else r
                for r in response.results
            )
        )
    return response


def leaves_unknown_members(request, response):
    if (
        isinstance(response, LeaveGroupResponse)
        and response.error_code == ErrorCode.UNKNOWN_MEMBER_ID
    ):
        return dataclasses.replace(response, error_code=ErrorCode.NONE)
    return response


def all_of(*bugs):
    def rewrite(request, response):
        for bug in bugs:
            response = bug(request, response)
        return response

    return rewrite


PLANTED = all_of(cosmetic, deletes_live_groups, leaves_unknown_members)


@pytest.fixture(scope="module")
def planted():
    """The whole catalog against the three planted bugs, and its console output."""
    out = io.StringIO()
    return run(RewritingTarget(PLANTED), out=out), out.getvalue()


def test_one_divergence_per_planted_bug_most_severe_first(planted):
    outcome, text = planted
    found = [(d.severity, d.signature.api, str(d.signature)) for d in outcome.divergences]
    assert found == [
        (
            "safety",
            "DeleteGroups",
            "results[].error_code: expected NON_EMPTY_GROUP (68), got NONE (0)",
        ),
        ("protocol", "LeaveGroup", "error_code: expected UNKNOWN_MEMBER_ID (25), got NONE (0)"),
        ("cosmetic", "JoinGroup", "protocol_type: expected None, got 'consumer'"),
    ]
    failed = [r for r in outcome.results if r.status == "failed"]
    assert sum(len(d.runs) for d in outcome.divergences) == len(failed)
    joins = outcome.divergences[2]
    assert joins.band == "v7-9" and joins.stopped > 300
    assert joins.rules[0] == "GM-3"  # MEMBER_ID_REQUIRED, as the trace checker attributes it
    assert "3 distinct divergences" in text
    assert "safety: a live group is deleted" in text
    assert "rules: GM-62 DeleteGroups" in text
    # The member id the reference leaves open is no difference in the example's diff.
    example = text[text.index("[cosmetic]") :]
    assert '-  "member_id"' not in example and '+ "protocol_type": "consumer"' in example


def test_a_rerun_command_selects_exactly_its_run(planted):
    outcome, _ = planted
    for divergence in outcome.divergences:
        example = divergence.example
        words = shlex.split(rerun_command(example, "coordspec conform --target reference"))
        tags = words[words.index("--tags") + 1]
        versions = words[words.index("--versions") + 1]
        again = run(
            RewritingTarget(PLANTED), tags=[tags], version_selection=versions, out=io.StringIO()
        )
        assert [r.label for r in again.results] == [example.label]
        assert [str(d.signature) for d in again.divergences] == [str(divergence.signature)]


def test_a_field_allowance_lets_runs_go_on_and_counts_what_it_accepted(tmp_path, planted):
    allow = tmp_path / "allow.yaml"
    allow.write_text(
        "- api: JoinGroup\n  versions: 7+\n  field: protocol_*\n  values: [consumer, '']\n"
        "  reason: clients ignore it\n"
        "- api: OffsetCommit\n  field: topics[].partitions[].error_code\n  reason: matches nothing\n"
    )
    before, _ = planted
    out = io.StringIO()
    outcome = run(RewritingTarget(PLANTED), allow=allow, out=out)
    assert [d.severity for d in outcome.divergences] == ["safety", "protocol"]
    # Past the tolerated first step, the runs reach the other bugs at v7-9 too.
    deletes = outcome.divergences[0]
    assert len(deletes.runs) > len(before.divergences[0].runs)
    assert "v0-2" in deletes.band
    allowed = [r for r in outcome.results if r.status == "allowed"]
    assert allowed and all(r.tolerated for r in allowed)
    assert all(r.steps_run == r.steps_total for r in allowed)
    text = out.getvalue()
    assert "JoinGroup v7-9: protocol_type: expected None, got 'consumer'" in text
    assert f"warning: allow entry matched nothing: {allow}:6: matches nothing" in text
    assert outcome.exit_code == 1


def test_a_value_the_allowance_does_not_name_is_still_a_divergence(tmp_path):
    allow = tmp_path / "allow.yaml"
    allow.write_text(
        "- api: JoinGroup\n  field: protocol_type\n  values: [other]\n  reason: not this one\n"
    )
    outcome = run(
        RewritingTarget(cosmetic), allow=allow, tags=["member-id-required"], out=io.StringIO()
    )
    assert [d.severity for d in outcome.divergences] == ["cosmetic"]
    assert not any(r.tolerated for r in outcome.results)


def test_a_timer_shorter_or_longer_than_kafkas_is_timing():
    def with_delay(ms):
        target = RewritingTarget(lambda q, r: r, GroupConfig(initial_rebalance_delay_ms=ms))
        return run(target, tags=["GM-10"], out=io.StringIO()).divergences

    (early,) = with_delay(1_000)
    assert early.severity == "timing" and early.signature.kind == "answered early"
    assert "group.initial.rebalance.delay.ms" in early.signature.expected
    (late,) = with_delay(5_000)  # the runner listens on after the failure: it answers at 5 s
    assert late.severity == "timing" and late.signature.kind == "answered late"
    assert all(r.failure.answered_after_ms >= 5_000 for r in late.runs)


def test_fail_on_chosen_severities(planted):
    outcome, _ = planted
    assert outcome.exit_code == 1
    cosmetic_only = dataclasses.replace(outcome, fail_on=frozenset({"cosmetic"}))
    assert cosmetic_only.exit_code == 1
    neither = dataclasses.replace(outcome, fail_on=frozenset({"wire", "liveness", "timing"}))
    assert neither.exit_code == 0


def test_fail_on_names_only_severities():
    with pytest.raises(SuiteError, match="--fail-on fatal: not a severity"):
        run("reference", tags=["member-id-required"], fail_on=["fatal"], out=io.StringIO())


def deletes_subscribed_offsets(request, response):
    """A broker that skips GM-63's subscription check (answers NONE where Kafka refuses)."""
    if isinstance(response, OffsetDeleteResponse):
        return every_partition_none(response)
    return response


def test_deleting_offsets_a_live_group_uses_is_a_safety_divergence():
    outcome = run(
        RewritingTarget(deletes_subscribed_offsets),
        tags=["offset-delete-subscribed-topic"],
        out=io.StringIO(),
    )
    found = [(d.severity, d.signature.api, str(d.signature)) for d in outcome.divergences]
    assert found == [
        (
            "safety",
            "OffsetDelete",
            "topics[].partitions[].error_code: expected GROUP_SUBSCRIBED_TO_TOPIC (86), got NONE (0)",
        )
    ]
    assert outcome.divergences[0].rules[0] == "GM-63"
