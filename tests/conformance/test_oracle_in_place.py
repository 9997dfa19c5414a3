"""The oracle takes most events in place (conformance/suite/oracle.py, ``Hypothesis.take``)
and rebuilds a hypothesis from its checkpoint where the reference had a choice. Taking every
event on a copy, as the oracle did before, must keep the same hypotheses at every event and
come to the same verdicts, with checkpoints every step or every 32.
"""

from __future__ import annotations

from collections import Counter

import pytest

from coordspec.conformance.simulate import groups
from coordspec.conformance.suite import oracle
from coordspec.conformance.trace import records
from coordspec.conformance.tracecheck import replay


def check_all(directory, counts: list[int]) -> list:
    """Every key's report, and (in ``counts``) how many hypotheses each event left."""
    keys: dict[tuple[str, str], list] = {}
    for path in records.expand([directory]):
        for line in records.read(path):
            group_id, run, _ = records.quick_key(line)
            keys.setdefault((group_id, run), []).append(line)
    expand = oracle.Oracle._expand

    def counted(self, hypotheses, make_event, in_place=True, given=None):
        expanded = expand(self, hypotheses, make_event, in_place, given)
        counts.append(len(expanded))
        return expanded

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(oracle.Oracle, "_expand", counted)
        return [
            replay.check_key(g, run, lines, replay.Settings()) for (g, run), lines in keys.items()
        ]


def verdicts(reports: list) -> tuple:
    return (
        [(v.group_id, v.rule, v.line, v.message) for r in reports for v in r.violations],
        [r.unchecked for r in reports],
        sum((Counter(r.coverage) for r in reports), Counter()),
    )


@pytest.fixture(scope="module")
def traces(tmp_path_factory):
    """Runs with every fault, and runs with a planted bug for violations to agree on."""
    directory = tmp_path_factory.mktemp("traces")
    groups.simulate(30, 0, groups.Options(), directory / "faults")
    groups.simulate(10, 100, groups.Options(bug="stale-commit"), directory / "bug")
    return directory


@pytest.mark.parametrize("every", [1, 32])
def test_in_place_keeps_the_hypotheses_and_verdicts_of_copying(traces, monkeypatch, every):
    copied: list[int] = []
    with pytest.MonkeyPatch.context() as patch:  # every event on a copy: the old way
        patch.setattr(oracle.Hypothesis, "take", lambda self, make_event, record, given: False)
        expected = check_all(traces, copied)

    rebuilt = []
    take = oracle.Hypothesis.take

    def noting(self, make_event, record, given):
        taken = take(self, make_event, record, given)
        rebuilt.append(not taken)
        return taken

    monkeypatch.setattr(oracle, "CHECKPOINT_EVERY", every)
    monkeypatch.setattr(oracle.Hypothesis, "take", noting)
    in_place: list[int] = []
    got = check_all(traces, in_place)

    assert in_place == copied
    assert verdicts(got) == verdicts(expected)
    assert any(v.violations for v in got)  # the planted bug was found, by both
    assert any(rebuilt)  # some event chose, so a hypothesis was rebuilt from its checkpoint
    assert max(copied) > 1  # and the choice left more than one hypothesis


def test_merging_equal_hypotheses_keeps_the_verdicts(traces):
    """Hypotheses whose futures are the same merge (oracle._merged): the verdicts and
    coverage are those of following each of them, with fewer hypotheses to follow."""
    unmerged: list[int] = []
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(oracle, "_merged", lambda hypotheses: hypotheses)
        expected = check_all(traces, unmerged)
    merged: list[int] = []
    got = check_all(traces, merged)

    assert verdicts(got) == verdicts(expected)
    assert any(v.violations for v in got)
    assert sum(merged) < sum(unmerged)


def test_hypotheses_differing_in_a_pending_write_do_not_merge():
    """A crash keeps or loses a write in flight: hypotheses apart only there stay apart."""
    from coordspec.reference.group import GroupConfig, JoinGroup, Protocol

    o = oracle.Oracle(GroupConfig())
    o.request(
        "c",
        JoinGroup(
            request_id=1,
            api_version=4,
            now_ms=0,
            group_id="g",
            session_timeout_ms=10_000,
            rebalance_timeout_ms=10_000,
            protocols=(Protocol("range", b""),),
        ),
    )
    (h,) = o.hypotheses
    twin = h.copy()
    assert h.same_future(twin) and oracle._merged([h, twin]) == [h]
    twin.write_ends[99] = 1  # a write in flight that a crash may keep, in this one only
    assert not h.same_future(twin)
    assert oracle._merged([h, twin]) == [h, twin]
    other = h.copy()
    other.choices.made.append("leader x")  # what only reports show
    assert oracle._merged([h, other]) == [h]
    other.coordinator.now_ms += 1
    assert oracle._merged([h, other]) == [h, other]


def test_ids_the_trace_gives_keep_the_hypotheses_and_verdicts_of_placeholders(traces, monkeypatch):
    """A new member named by the id the broker's answer gives it (replay._ids_given) and one
    named by a placeholder that the answer binds allow the same: the same hypotheses after
    every event, the same verdicts."""
    named: list[int] = []
    with pytest.MonkeyPatch.context() as patch:  # placeholders only: the way before
        patch.setattr(replay, "_ids_given", lambda parsed: {})
        expected = check_all(traces, named)
    bindings = []
    keep = oracle.Oracle._keep

    def noting(self, request_id, response, tolerate):
        kept, problems, deadlines = keep(self, request_id, response, tolerate)
        bindings.extend(h.binding for h in kept)
        return kept, problems, deadlines

    monkeypatch.setattr(oracle.Oracle, "_keep", noting)
    given: list[int] = []
    got = check_all(traces, given)

    assert given == named
    assert verdicts(got) == verdicts(expected)
    assert any(v.violations for v in got)
    assert any(b.named for b in bindings)  # the trace's ids were taken as they are
    assert not any(b.ids for b in bindings)  # and left nothing for a placeholder to bind
