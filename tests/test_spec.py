"""spec/ stays true to the code: the rendered tables match transitions.py, every rule the
code cites is defined in spec/group-membership.md, and every test the spec cites exists."""

from __future__ import annotations

import fnmatch
import re
from pathlib import Path

from conformance.diagram import dot_source, outcomes_markdown
from reference.group.transitions import TRANSITIONS

ROOT = Path(__file__).resolve().parent.parent
SPEC = (ROOT / "spec" / "group-membership.md").read_text()


def rules_defined() -> set[str]:
    return set(re.findall(r"^\*\*(GM-\d+):", SPEC, flags=re.MULTILINE))


def test_committed_diagram_matches_the_tables():
    assert (ROOT / "spec" / "group-states.dot").read_text() == dot_source(), "run: coordspec diagram"
    assert (ROOT / "spec" / "group-states-outcomes.md").read_text() == outcomes_markdown(), "run: coordspec diagram"


def test_every_rule_the_code_cites_is_defined():
    cited = {t.rule for t in TRANSITIONS}
    for path in (ROOT / "reference").rglob("*.py"):
        cited |= set(re.findall(r"GM-\d+", path.read_text()))
    missing = cited - rules_defined()
    assert not missing, f"rules cited in reference/ but not defined in spec/group-membership.md: {sorted(missing)}"


def test_rules_are_numbered_once():
    headings = re.findall(r"^\*\*(GM-\d+):", SPEC, flags=re.MULTILINE)
    assert len(headings) == len(set(headings))


def test_every_test_and_file_the_spec_cites_exists():
    defined = set()
    for path in (ROOT / "tests").glob("test_*.py"):
        defined |= set(re.findall(r"^def (test_\w+)", path.read_text(), flags=re.MULTILINE))
    for page in (ROOT / "spec").glob("*.md"):
        text = page.read_text()
        cited = set(re.findall(r"`(?:[\w./]+\.py::)?(test_[\w*]+)(?![\w*]|\.py)", text))
        missing = [name for name in cited if not fnmatch.filter(defined, name)]
        assert not missing, f"{page.name} cites tests that do not exist: {sorted(missing)}"
        files = set(re.findall(r"`(test_\w+\.py)", text))
        absent = [name for name in files if not (ROOT / "tests" / name).exists()]
        assert not absent, f"{page.name} cites test files that do not exist: {sorted(absent)}"
        links = re.findall(r"\]\((\.\./[^)#]+)", text)
        broken = [link for link in links if not (page.parent / link).resolve().exists()]
        assert not broken, f"{page.name} links to files that do not exist: {broken}"
