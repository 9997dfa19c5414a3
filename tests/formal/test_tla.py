"""coordspec tla check: TLC model-checks the specs at CI bounds, every mutant is caught by
its own invariant, counterexamples read as tables, and misuse gets one clear line."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from coordspec.conformance.formal import tlc

pytestmark = pytest.mark.tlc


def coordspec(*args: str, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "coordspec.conformance.cli", *args],
        capture_output=True,
        text=True,
        timeout=600,
        env=env,
    )


@pytest.fixture(scope="module")
def group_membership(tmp_path_factory):
    out = tmp_path_factory.mktemp("tla")
    return tlc.check(["GroupMembership"], out=out, say=lambda line: None), out


def test_group_membership_holds_at_ci_bounds(group_membership):
    verdicts, _ = group_membership
    spec = verdicts[0]
    assert spec.label == "GroupMembership" and spec.ok
    assert spec.result.distinct > 100_000 and spec.result.depth > 10


def test_every_mutant_is_caught_by_its_own_invariant(group_membership):
    verdicts, out = group_membership
    mutants = verdicts[1:]
    expected = {flag: invariant for _, flag, invariant in tlc.mutants_of("GroupMembership")}
    assert {v.label.split(" with ")[1] for v in mutants} == set(expected)
    assert set(expected.values()) >= {
        "NoStaleGenerationCommit",
        "AtMostOneOwnerPerPartition",
        "LeaderIsMember",
        "StableImpliesAllSynced",
        "GenerationMonotonic",
    }
    for verdict in mutants:
        assert verdict.ok, f"{verdict.label}: {verdict.result.violated}"
        assert verdict.result.trace, "a caught mutant comes with a counterexample"
    table = (out / "GroupMembership-BugCommitWithoutGenerationCheck-counterexample.md").read_text()
    assert "| step | action | variable | value |" in table and "OffsetCommit" in table


def test_trace_states_parse_into_actions_and_values():
    state = tlc.parse_state(
        "3: <CompleteJoin line 120, col 5 to line 140, col 60 of module GroupMembership>\n"
        '/\\ state = "CompletingRebalance"\n/\\ members = {c1, c2}\n/\\ owners = <<[p1 |-> {}],\n   [p1 |-> {c1}]>>\n'
    )
    assert state.number == 3 and state.action == "CompleteJoin"
    assert state.values["members"] == "{c1, c2}"
    assert state.values["owners"] == "<<[p1 |-> {}], [p1 |-> {c1}]>>"
    table = tlc.trace_table([tlc.TraceState(1, "Initial", {"x": "0", "y": "0"}), state])
    assert "| 3 | CompleteJoin | state |" in table and "| 1 | Initial | x | `0` |" in table


def test_cfg_lists_what_is_checked():
    names = tlc.checked_names(tlc.TLA_DIR / "MCGroupMembership.cfg")
    assert names == [
        "TypeOK",
        "NoStaleGenerationCommit",
        "AtMostOneOwnerPerPartition",
        "LeaderIsMember",
        "StableImpliesAllSynced",
        "GenerationMonotonic",
    ]


def test_unknown_spec_is_one_line():
    result = coordspec("tla", "check", "Nonsense")
    assert result.returncode == 2
    assert result.stderr.strip().startswith("coordspec tla check: no spec named Nonsense")
    assert "Traceback" not in result.stderr


def test_missing_jar_is_one_line(tmp_path):
    import os

    env = dict(os.environ, TLA2TOOLS_JAR=str(tmp_path / "nowhere.jar"))
    result = coordspec("tla", "check", "--no-mutants", env=env)
    assert result.returncode == 2
    assert (
        result.stderr.strip()
        == f"coordspec tla check: TLA2TOOLS_JAR={tmp_path / 'nowhere.jar'} is not a file"
    )


def test_a_broken_spec_is_reported_not_crashed(tmp_path, monkeypatch):
    (tmp_path / "MCBroken.tla").write_text(
        "---- MODULE MCBroken ----\nVARIABLE x\nInit == x = \nNext == x' = x\n====\n"
    )
    (tmp_path / "MCBroken.cfg").write_text("INIT Init\nNEXT Next\n")
    with pytest.raises(tlc.TlcError, match=r"TLC failed on MCBroken.cfg \(exit"):
        tlc.run_tlc("MCBroken", tmp_path / "MCBroken.cfg", directory=tmp_path)
    assert Path(tmp_path / "MCBroken.tla").exists()
