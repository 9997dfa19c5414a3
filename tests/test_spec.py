"""spec/ stays true to the code: the rendered tables match transitions.py, every rule the
code, the scenarios and the TLA+ specs cite is defined in its spec page, every invariant TLC
checks is explained there, and every test and file the spec cites exists."""

from __future__ import annotations

import fnmatch
import importlib
import re
from pathlib import Path

import pytest

from coordspec.conformance.cli.diagram import dot_source, outcomes_markdown
from coordspec.conformance.formal.tlc import TLA_DIR, checked_names
from coordspec.reference.group.transitions import TRANSITIONS

ROOT = Path(__file__).resolve().parent.parent
# rule prefix -> (its spec page, the TLA+ spec whose invariants the page explains)
PAGES = {
    "GM": ("group-membership.md", "GroupMembership"),
    "ISR": ("isr-versioned-writes.md", "IsrVersionedWrites"),
    "CF": ("coordinator-failover.md", "CoordinatorFailover"),
}
INVARIANT_MODULES = {
    "GM": "coordspec.reference.group.invariants",
    "ISR": "coordspec.reference.replication.invariants",
    "CF": "coordspec.reference.failover.invariants",
    "CG": "coordspec.reference.group.consumer.invariants",
}
# rule prefix -> its spec page, for every page of numbered rules (some have no TLA+ spec)
RULE_PAGES = {prefix: name for prefix, (name, _) in PAGES.items()} | {
    "SA": "server-assignors.md",
    "CG": "consumer-group.md",
}
CITING = [
    *(ROOT / "reference").rglob("*.py"),
    *(ROOT / "tla").glob("*.tla"),
    *(ROOT / "conformance" / "scenarios").glob("*.yaml"),
]


def page(prefix: str) -> str:
    return (ROOT / "spec" / RULE_PAGES[prefix]).read_text()


def rules_defined(prefix: str = "GM") -> set[str]:
    return set(re.findall(rf"^\*\*({prefix}-\d+):", page(prefix), flags=re.MULTILINE))


def test_committed_diagram_matches_the_tables():
    assert (ROOT / "spec" / "group-states.dot").read_text() == dot_source(), (
        "run: coordspec diagram"
    )
    assert (ROOT / "spec" / "group-states-outcomes.md").read_text() == outcomes_markdown(), (
        "run: coordspec diagram"
    )


@pytest.mark.parametrize("prefix", RULE_PAGES)
def test_every_rule_the_code_scenarios_and_specs_cite_is_defined(prefix):
    cited = {t.rule for t in TRANSITIONS} if prefix == "GM" else set()
    for path in CITING:
        cited |= set(re.findall(rf"\b{prefix}-\d+\b", path.read_text()))
    missing = cited - rules_defined(prefix)
    assert not missing, (
        f"rules cited in reference/, tla/ or the scenarios but not defined in spec/{RULE_PAGES[prefix]}: {sorted(missing)}"
    )


@pytest.mark.parametrize("prefix", RULE_PAGES)
def test_rules_are_numbered_once(prefix):
    headings = re.findall(rf"^\*\*({prefix}-\d+):", page(prefix), flags=re.MULTILINE)
    assert headings and len(headings) == len(set(headings))


@pytest.mark.parametrize("prefix", PAGES)
def test_every_invariant_tlc_checks_is_explained(prefix):
    spec = PAGES[prefix][1]
    checked = [name for name in checked_names(TLA_DIR / f"MC{spec}.cfg") if name != "TypeOK"]
    text = page(prefix)
    unexplained = [name for name in checked if f"`{name}`" not in text]
    assert checked and not unexplained, (
        f"spec/{PAGES[prefix][0]} does not name these invariants of {spec}: {unexplained}"
    )


def test_every_test_and_file_the_spec_cites_exists():
    defined = set()
    test_files = {path.name: path for path in (ROOT / "tests").rglob("test_*.py")}
    for path in test_files.values():
        defined |= set(re.findall(r"^def (test_\w+)", path.read_text(), flags=re.MULTILINE))
    for page in (ROOT / "spec").glob("*.md"):
        text = page.read_text()
        cited = set(re.findall(r"`(?:[\w./]+\.py::)?(test_[\w*]+)(?![\w*]|\.py)", text))
        missing = [name for name in cited if not fnmatch.filter(defined, name)]
        assert not missing, f"{page.name} cites tests that do not exist: {sorted(missing)}"
        files = set(re.findall(r"`(test_\w+\.py)", text))
        absent = [name for name in files if name not in test_files]
        assert not absent, f"{page.name} cites test files that do not exist: {sorted(absent)}"
        links = re.findall(r"\]\((\.\./[^)#]+)", text)
        broken = [link for link in links if not (page.parent / link).resolve().exists()]
        assert not broken, f"{page.name} links to files that do not exist: {broken}"


def test_the_consumer_group_page_names_its_invariants_and_their_rules():
    invariants = importlib.import_module(INVARIANT_MODULES["CG"]).INVARIANTS
    tla = set(checked_names(TLA_DIR / "MCConsumerGroup.cfg")) - {"TypeOK"}
    assert all(f"`{name}`" in page("CG") for name in set(invariants) | tla)
    assert {i.rule for i in invariants.values()} <= rules_defined("CG")
    assert {name for name, i in invariants.items() if i.tla} == tla


@pytest.mark.parametrize("prefix", PAGES)
def test_the_reference_checks_every_invariant_tlc_checks_under_the_same_name(prefix):
    spec = PAGES[prefix][1]
    module = INVARIANT_MODULES[prefix]
    python = set(importlib.import_module(module).INVARIANTS)
    tla = set(checked_names(TLA_DIR / f"MC{spec}.cfg")) - {"TypeOK"}
    assert tla <= python, f"{spec} checks {sorted(tla - python)}, which {module} does not"
    unexplained = [name for name in python if f"`{name}`" not in page(prefix)]
    assert not unexplained, (
        f"spec/{PAGES[prefix][0]} does not name the reference's invariants {unexplained}"
    )


@pytest.mark.parametrize("prefix", PAGES)
def test_each_invariant_names_a_defined_rule_and_whether_tlc_checks_it(prefix):
    module = INVARIANT_MODULES[prefix]
    invariants = importlib.import_module(module).INVARIANTS
    undefined = {i.rule for i in invariants.values()} - rules_defined(prefix)
    assert not undefined, f"{module} cites rules spec/{PAGES[prefix][0]} does not define"
    tla = set(checked_names(TLA_DIR / f"MC{PAGES[prefix][1]}.cfg")) - {"TypeOK"}
    assert {name for name, i in invariants.items() if i.tla} == tla
