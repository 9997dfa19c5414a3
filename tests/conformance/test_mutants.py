"""Each mutant changes behaviour: its probe scenario, run on a reference target whose
coordinator carries the patch (the oracle in this process does not: the patch acts only
inside the mutated target's steps), fails. So a mutant the broker run misses is missed by
the catalog, not a patch that does nothing."""

from __future__ import annotations

import io
from pathlib import Path

import pytest

from coordspec.conformance.cli import main
from coordspec.conformance.mutants import catalog, patches, table
from coordspec.conformance.mutants.on_reference import MutatedTarget
from coordspec.conformance.suite import run
from coordspec.conformance.suite.loader import SCENARIO_DIR


def _probe(scenario: str):
    return run(
        MutatedTarget(),
        scenarios=[SCENARIO_DIR / f"{scenario}.yaml"],
        version_selection="all",
        out=io.StringIO(),
    )


@pytest.mark.parametrize("mutant", catalog.MUTANTS, ids=lambda m: f"b{m.bug}")
def test_each_mutant_fails_its_probe_on_a_mutated_reference(mutant):
    assert _probe(mutant.probe).exit_code == 0  # the probe passes unmutated
    patches.install(mutant.bug)
    try:
        outcome = _probe(mutant.probe)
    finally:
        patches.uninstall()
    # failed, or an invariant the mutated target checks broke (an error of that run)
    failed = [r for r in outcome.results if r.status in ("failed", "error")]
    assert failed, f"#{mutant.bug}: {mutant.probe} passed on the mutated reference"


def test_every_bug_of_the_catalog_is_a_mutant_or_says_why_not():
    bugs = [m.bug for m in catalog.MUTANTS] + [n.bug for n in catalog.NOT_APPLICABLE]
    assert sorted(bugs) == list(range(1, 79))
    assert sorted(patches.PATCHES) == sorted(catalog.BY_BUG)


def test_uninstall_restores_the_reference():
    from coordspec.reference.group import coordinator, membership

    before = (membership.join_group, coordinator._HANDLERS[coordinator.JoinGroup])
    patches.install(28)
    assert membership.join_group is not before[0]
    assert coordinator._HANDLERS[coordinator.JoinGroup] is membership.join_group
    patches.uninstall()
    assert (membership.join_group, coordinator._HANDLERS[coordinator.JoinGroup]) == before


def test_the_spec_table_is_the_catalogs():
    page = Path(__file__).resolve().parents[2] / "spec" / "conformance-power.md"
    assert page.read_text() == table.render(), "run: coordspec mutants --table > " + str(page)


def test_a_bug_without_a_mutant_is_one_line(capsys):
    assert main(["mutants", "--only", "3,99"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("coordspec mutants: --only 3,99: no mutant for 99 (mutants: 1,2,3,")
    assert len(err.splitlines()) == 1


def test_a_selection_of_no_scenario_is_one_line(capsys):
    assert main(["mutants", "--only", "3", "--select", "no-such-scenario"]) == 2
    assert (
        capsys.readouterr().err
        == "coordspec mutants: no scenario matches --select no-such-scenario\n"
    )


def test_mutants_of_the_reference_target_are_measured_in_process(capsys):
    """The transactional-offset bugs, which the project's broker cannot show: each still
    caught by the scenario recorded, on a reference target carrying the mutant."""
    on_reference = [m for m in catalog.MUTANTS if m.on == "reference"]
    assert on_reference and all(m.caught_by for m in on_reference)
    bugs = ",".join(str(m.bug) for m in on_reference)
    assert main(["mutants", "--only", bugs]) == 0
    out = capsys.readouterr().out
    for m in on_reference:
        assert f"#{m.bug} {m.title}: caught by {m.caught_by} [" in out
    assert (
        out.splitlines()[-1]
        == f"{len(on_reference)} of {len(on_reference)} applicable caught (100%)"
    )
