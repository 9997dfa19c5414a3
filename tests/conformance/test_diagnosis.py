"""What issue 15 is done by: ``coordspec conform`` turns a divergent broker's failures into
distinct divergences, one per defect, ordered by severity.

Two brokers that are not Kafka: the project's own broker with bugs planted by a proxy
(planted.py), where the answer is known, and Tansu 0.6.0 (tansu.py), whose defects
../shared/research/review-user-experience.md §2 lists (A-U below are its letters).
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from planted import BUGS, SCENARIOS, VERSIONS, PlantedBroker
from tansu import tansu_fixture  # noqa: F401 - the fixture is used by name

from coordspec.conformance.suite import run
from coordspec.conformance.suite.divergences import Divergence
from coordspec.conformance.suite.kafka_target import KafkaTarget
from coordspec.conformance.suite.severity import ORDER
from coordspec.conformance.suite.suite import Outcome
from coordspec.reference.group.requests import API_KEYS

pytestmark = pytest.mark.wire

_API_NAMES = {key: api for api, key in API_KEYS.items()}


def _titles(found: list[Divergence]) -> str:
    return "\n".join(f"{d.severity}: {d.title} ({len(d.runs)} runs)" for d in found)


def test_each_planted_bug_is_one_divergence_of_its_severity(tmp_path):
    """All six bugs at once, over a part of the catalog that meets each: one entry per bug,
    with the bug's API and severity, most severe first."""
    with PlantedBroker(tmp_path / "data", BUGS) as broker:
        outcome = run(
            KafkaTarget(broker.bootstrap).check(),
            tags=SCENARIOS,
            version_selection=VERSIONS,
            listen_after_failure_ms=8000,  # the late JoinGroup answers 2.5 s after 3 s
            out=io.StringIO(),
        )
    found = outcome.divergences
    assert sorted((d.severity, d.signature.api) for d in found) == sorted(
        (bug.severity, _API_NAMES[bug.api_key]) for bug in BUGS.values()
    ), _titles(found)
    assert [ORDER[d.severity] for d in found] == sorted(ORDER[d.severity] for d in found)


# The review's example scenario of each defect: every defect at every version, in 151 runs.
TANSU_SCENARIOS = [
    "member-id-required",
    "join-below-v4-is-admitted-at-once",
    "empty-group-id-is-invalid",
    "join-with-member-id-into-unknown-group",
    "empty-protocols-into-empty-group",
    "no-common-protocol",
    "session-timeout-bounds",
    "invalid-session-timeout-checked-first",
    "delete-empty-group",
    "delete-group-during-rebalance",
    "list-groups-after-delete",
    "list-groups-while-rebalancing",
    "commit-to-unknown-group-before-v9",
    "simple-group-commit-with-member-identity",
    "commit-null-metadata",
    "commit-leader-epoch-and-metadata",
    "commit-overwrites-and-fetch-per-partition",
    "offset-fetch-all-partitions",
    "describe-unknown-group-is-dead",
    "sync-validation",
    "leave-unknown-member",
]

# The review's defects: (API, words of the signature, the severity if only one fits).
TANSU_DEFECTS = {
    "A": ("JoinGroup", ("protocol_type", "'consumer'"), "cosmetic"),
    "B": ("JoinGroup", ("CompleteJoin",), "timing"),
    "D": ("JoinGroup", ("no answer yet", "MEMBER_ID_REQUIRED"), "protocol"),
    # E: answered when the join phase ends (5 s), not never as the review thought
    "E": ("JoinGroup", ("INVALID_GROUP_ID",), None),
    "F": ("JoinGroup", ("(UNKNOWN_MEMBER_ID",), None),
    "G": ("JoinGroup", ("INCONSISTENT_GROUP_PROTOCOL", "got MEMBER_ID_REQUIRED"), "protocol"),
    "H": ("JoinGroup", ("INVALID_SESSION_TIMEOUT", "got NONE"), "protocol"),
    "I": ("DeleteGroups", ("GROUP_ID_NOT_FOUND", "got NONE"), "protocol"),
    "J": ("DeleteGroups", ("NON_EMPTY_GROUP", "got NONE"), "safety"),
    "K": ("ListGroups", ("protocol_type", "'consumer'"), "protocol"),
    "L": ("ListGroups", ("groups", "1 entries"), "protocol"),
    "M": ("OffsetCommit", ("ILLEGAL_GENERATION", "got UNKNOWN_MEMBER_ID"), "protocol"),
    "N": ("OffsetCommit", ("expected NONE", "got UNKNOWN_MEMBER_ID"), "protocol"),
    "O": ("OffsetFetch", ("metadata", "got None"), "protocol"),
    "P": ("OffsetFetch", ("committed_leader_epoch",), "protocol"),
    "Q": ("OffsetFetch", ("topics[].name",), "protocol"),
    "R": ("OffsetFetch", ("decode",), "wire"),
    "S": ("DescribeGroups", ("group_state", "'Dead'"), "protocol"),
    "T": ("SyncGroup", ("UNKNOWN_MEMBER_ID", "got REBALANCE_IN_PROGRESS"), "protocol"),
    "U": ("LeaveGroup", ("UNKNOWN_MEMBER_ID", "got NONE"), "protocol"),
}


# Tansu ends its join phase after half the session timeout (5 s in the catalog): an answer
# that late is late, not missing.
LISTEN_MS = 8000


def _entry(found: list[Divergence], api: str, words: tuple[str, ...]) -> list[Divergence]:
    return [
        d for d in found if d.signature.api == api and all(w in str(d.signature) for w in words)
    ]


def test_tansu_defects_are_separate_divergences_ordered_by_severity(tansu, tmp_path):
    out = io.StringIO()
    found = _tansu_run(tansu, out=out, report=tmp_path / "report").divergences
    entries = {}
    for letter, (api, words, severity) in TANSU_DEFECTS.items():
        matching = _entry(found, api, words)
        assert len(matching) == 1, f"{letter}: {len(matching)} entries\n{_titles(found)}"
        assert severity is None or matching[0].severity == severity, (
            f"{letter}: {matching[0].title} is {matching[0].severity}, not {severity}"
        )
        entries[letter] = matching[0]
    assert len({id(d) for d in entries.values()}) == len(TANSU_DEFECTS), _titles(found)
    assert [ORDER[d.severity] for d in found] == sorted(ORDER[d.severity] for d in found)
    # The console and the Markdown summary list them in that order, each with its rerun.
    console, summary = out.getvalue(), (tmp_path / "report" / "conformance.md").read_text()
    for text in (console, summary):
        listed = text[text.index(f"{len(found)} distinct divergences") :]
        places = [listed.index(d.title) for d in found]
        assert places == sorted(places)
        assert listed.count("--tags ") >= len(found)
    # A rerun command reproduces its divergence alone (the wire, safety and a protocol one).
    for letter in "RJD":
        example = entries[letter].example
        again = _tansu_run(
            tansu, tags=[example.scenario], version_selection=_plan(example.plan)
        ).divergences
        assert [d.signature for d in again] == [entries[letter].signature], _titles(again)


def _plan(plan: dict[str, int]) -> str:
    """As a rerun command's --versions."""
    return ",".join(f"{api}={version}" for api, version in sorted(plan.items()))


def _allow_cosmetic_fields(tmp_path: Path) -> Path:
    allow = tmp_path / "tansu-allow.yaml"
    allow.write_text(
        "- api: JoinGroup\n"
        "  versions: 7+\n"
        "  field: protocol_type\n"
        "  values: [consumer]\n"
        "  reason: Tansu sets it on MEMBER_ID_REQUIRED answers, which clients ignore\n"
        "- api: JoinGroup\n"
        "  versions: 7+\n"
        "  field: protocol_name\n"
        "  values: ['']\n"
        "  reason: as protocol_type\n"
    )
    return allow


def _tansu_run(bootstrap: str, **options) -> Outcome:
    return run(
        KafkaTarget(bootstrap).check(),
        **{
            "tags": TANSU_SCENARIOS,
            "listen_after_failure_ms": LISTEN_MS,
            "out": io.StringIO(),
            **options,
        },
    )


def test_tansu_past_its_cosmetic_fields_shows_the_defects_behind_them(tansu, tmp_path):
    """With the cosmetic JoinGroup fields (A) allowed, the runs at JoinGroup v7-9 go on:
    A is gone from the divergences (reported as tolerated), J shows at those versions too,
    and the other defects still show."""
    outcome = _tansu_run(tansu, allow=_allow_cosmetic_fields(tmp_path))
    after = outcome.divergences
    assert not _entry(after, *TANSU_DEFECTS["A"][:2]), _titles(after)
    assert any(r.tolerated for r in outcome.results)
    (j,) = _entry(after, *TANSU_DEFECTS["J"][:2])
    assert any(r.plan["JoinGroup"] >= 7 for r in j.runs), _titles(after)
    for letter in "BDEIRU":
        assert _entry(after, *TANSU_DEFECTS[letter][:2]), f"{letter} is gone\n{_titles(after)}"


def test_tansu_with_its_join_phase_declared_goes_past_the_late_answers(tansu, tmp_path):
    """Tansu ends a join phase after half the session timeout: 5 s in most scenarios. With
    the cosmetic fields allowed and that declared as its initial rebalance delay, the late
    answers at the end of the join phase (B) are gone and the other defects still show.
    (No one Kafka setting says "half the session timeout": scenarios with other session
    timeouts, and those whose expectations assume Kafka's 3 s, still show timing entries.)"""
    after = _tansu_run(
        tansu,
        allow=_allow_cosmetic_fields(tmp_path),
        broker_settings={"group.initial.rebalance.delay.ms": 5000},
    ).divergences
    assert not _entry(after, *TANSU_DEFECTS["A"][:2]), _titles(after)
    assert not _entry(after, *TANSU_DEFECTS["B"][:2]), _titles(after)
    for letter in "DIJRU":
        assert _entry(after, *TANSU_DEFECTS[letter][:2]), f"{letter} is gone\n{_titles(after)}"
