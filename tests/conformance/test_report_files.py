"""The report files of a run with many failures: the Markdown summary (always under 1 MiB),
the details, the HTML page, the JSON document and JUnit XML. The broker is the reference
with bugs planted in its answers (test_divergences.py), three times over: more than a
thousand failing runs; it has no fault hooks (runs not run) and cannot open the
session-expiry scenario's groups (errors)."""

from __future__ import annotations

import io
import json
import re
import time
import xml.etree.ElementTree as ET

import pytest
from test_conformance_oracle import RewritingTarget
from test_divergences import PLANTED

from coordspec.conformance.suite import reports, run
from coordspec.conformance.suite.divergences import rerun_command
from coordspec.conformance.suite.report_facts import Facts
from coordspec.conformance.suite.reports_markdown import summary
from coordspec.conformance.suite.target import TargetError

RERUN = "coordspec conform --target kafka --bootstrap 127.0.0.1:9092"
MIB = 1024 * 1024


class Broken(RewritingTarget):
    name = "broken"
    supports_faults = False

    async def open(self, group_id, config, **options):
        if "-session-expiry-" in group_id:
            raise TargetError("cannot reach the coordinator of this group")
        return await super().open(group_id, config, **options)


@pytest.fixture(scope="module")
def planted(tmp_path_factory):
    out = tmp_path_factory.mktemp("planted")
    outcome = run(
        Broken(PLANTED),
        loop=3,
        report=out / "report",
        junit=out / "junit.xml",
        rerun=RERUN,
        out=io.StringIO(),
    )
    failing = [r for r in outcome.results if r.status == "failed"]
    assert len(failing) > 1_000
    return outcome, out


def read(out, name):
    return (out / "report" / name).read_text(encoding="utf-8")


def test_the_summary_leads_with_the_distinct_divergences_and_stays_under_1_mib(planted):
    outcome, out = planted
    text = read(out, "conformance.md")
    assert len(text.encode()) < MIB
    found = outcome.divergences
    assert text.splitlines()[2].startswith(f"**{len(found)} distinct divergences** in ")
    for n, d in enumerate(found, start=1):
        block = text[text.index(f"### {n}. [{d.severity}] {d.title}") :]
        assert block.index(f"- **runs** {len(d.runs)} failed, {d.stopped} stopped") < 300
        assert f"- **rerun** `{rerun_command(d.example, RERUN)}`" in block
        assert f"```text\n{d.example.path}:{d.example.failure.line}: step" in block
    assert "- **rules** GM-62 DeleteGroups; CG-64 DeleteGroups of a consumer group" in text
    assert "| **safety** | a stale generation or zombie is accepted" in text
    assert "| GM-62 | DeleteGroups | ✗ failed |" in text
    assert "| JoinGroup | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ | ✗ | ✗ | ✗ |" in text
    assert re.search(r"\| CF-\d+ \| [^|]+ \| – not run \|", text)  # fault rules: readable
    assert "not_run" not in text
    # Errors and runs not run, grouped by reason with their counts.
    errors = [r for r in outcome.results if r.status == "error"]
    skipped = [r for r in outcome.results if r.status == "not_run"]
    assert errors and skipped
    assert f"- **{len(errors)}** runs: cannot reach the coordinator of this group" in text
    reasons = {r.reason for r in skipped}
    for reason in reasons:
        n = sum(r.reason == reason for r in skipped)
        assert f"- **{n}** run{'s' if n > 1 else ''}: {reason}" in text
    # The order: divergences, the tables, then errors and runs not run.
    order = ["## Divergences", "## Severity classes", "## Spec rules", "## API versions"]
    order += ["## Errors", "## Not run"]
    assert [text.index(h) for h in order] == sorted(text.index(h) for h in order)
    assert "capped" not in text


def test_a_summary_over_its_cap_shortens_the_last_entries_and_says_so(planted):
    outcome, _ = planted
    facts = Facts(outcome.results, "broken", outcome.wall_s, outcome.divergences, RERUN)
    full = summary(facts)
    assert summary(facts, limit=len(full.encode())) == full
    capped = summary(facts, limit=len(full.encode()) - 1)
    assert len(capped.encode()) < len(full.encode())
    assert "Shown in one line, without their example: 1; left out: 0." in capped
    for n, d in enumerate(outcome.divergences, start=1):  # the divergences keep their example
        assert f"### {n}. [{d.severity}] {d.title}" in capped
    # The tables alone, and then the most severe divergence in one line.
    bare = summary(facts, limit=0)
    assert "### " not in bare and "| GM-62 | DeleteGroups |" in bare
    tight = summary(facts, limit=len(bare.encode()) + 600)
    assert len(tight.encode()) <= len(bare.encode()) + 600
    one_line = f"1. **[{outcome.divergences[0].severity}]** {outcome.divergences[0].title}: "
    assert one_line in tight and "left out: 0." not in tight


def test_the_details_give_every_failing_run_under_its_divergence(planted):
    outcome, out = planted
    text = read(out, "conformance-details.md")
    sections = re.split(r"^## ", text, flags=re.MULTILINE)[1:]
    assert len(sections) == len(outcome.divergences) + 1  # and the errors
    for n, (d, section) in enumerate(zip(outcome.divergences, sections, strict=False), start=1):
        assert section.startswith(f"{n}. [{d.severity}] {d.title}\n")
        assert section.count("\n### ") == len(d.runs)
        assert f"rerun: `{rerun_command(d.runs[-1], RERUN)}`" in section
    errors = [r for r in outcome.results if r.status == "error"]
    assert sections[-1].startswith("Errors") and sections[-1].count("\n### ") == len(errors)


def test_the_html_page_links_rules_and_versions_to_their_divergences(planted):
    outcome, out = planted
    page = read(out, "conformance.html")
    assert page.index("distinct divergences") < page.index("<h2>Spec rules")
    assert page.index("<h2>Spec rules") < page.index("<h2>API versions")
    assert "white-space:pre-wrap" in page and "overflow-x" not in page
    # Every link leads somewhere on the page.
    ids = set(re.findall(r"\bid='([^']+)'", page))
    links = set(re.findall(r"href='#([^']+)'", page))
    assert links and links <= ids
    row = re.search(r"<tr id='rule-GM-62'[^\n]*", page).group(0)
    deletes = 1 + next(
        i for i, d in enumerate(outcome.divergences) if d.signature.api == "DeleteGroups"
    )
    assert "<td>DeleteGroups<td>✗ failed" in row and f"href='#d{deletes}'" in row
    assert "href='#at-DeleteGroups-v0'" in page
    cell = re.search(r"<li id='at-DeleteGroups-v0'>[^\n]*", page).group(0)
    assert f"href='#d{deletes}'" in cell
    # Each failing run collapsed under its divergence, with the rerun command.
    for n, d in enumerate(outcome.divergences, start=1):
        section = page[page.index(f"<section id='d{n}'>") :]
        section = section[: section.index("</section>")]
        assert f"class='sev sev-{d.severity}'" in section
        assert section.count("<details id='run-") == len(d.runs)
    assert "– not run" in page and "– not_run" not in page


def test_the_json_document_is_what_a_bot_needs(planted):
    outcome, out = planted
    doc = json.loads(read(out, "conformance.json"))
    assert doc["format"] == "coordspec-conformance/1"
    tally = doc["counts"]
    statuses = [r.status for r in outcome.results]
    assert tally["runs"] == len(statuses) and tally["failed"] == statuses.count("failed")
    assert tally["divergences"] == len(outcome.divergences)
    for n, (d, entry) in enumerate(zip(outcome.divergences, doc["divergences"], strict=True), 1):
        assert entry["number"] == n and entry["severity"] == d.severity
        assert (entry["api"], entry["band"], entry["field"]) == (
            d.signature.api,
            d.band,
            d.signature.field,
        )
        assert (entry["runs"], entry["stopped"]) == (len(d.runs), d.stopped)
        assert len(entry["failures"]) == len(d.runs)
        assert entry["example"]["response"] == d.example.failure.response
        assert entry["rerun"] == rerun_command(d.example, RERUN)
    deletes = next(e for e in doc["divergences"] if e["api"] == "DeleteGroups")
    assert deletes["kind"] == "error code" and deletes["got"] == "NONE (0)"
    assert {"rule": "GM-62", "title": "DeleteGroups"} in deletes["rules"]
    assert len({e["id"] for e in doc["divergences"]}) == len(doc["divergences"])
    rule = next(r for r in doc["rules"] if r["rule"] == "GM-62")
    assert rule["verdict"] == "failed" and deletes["number"] in rule["divergences"]
    cell = next(a for a in doc["apis"] if (a["api"], a["version"]) == ("DeleteGroups", 0))
    assert cell["verdict"] == "failed" and cell["divergences"] == [deletes["number"]]
    assert sum(g["runs"] for g in doc["not_run"]) == statuses.count("not_run")
    assert len(doc["errors"]) == statuses.count("error")


def test_a_divergence_keeps_its_id_from_run_to_run(planted, tmp_path):
    _, out = planted
    before = json.loads(read(out, "conformance.json"))
    run(Broken(PLANTED), tags=["leave-unknown-member"], report=tmp_path, out=io.StringIO())
    after = json.loads((tmp_path / "conformance.json").read_text())
    signature = ("api", "kind", "field", "expected", "got")
    earlier = {e["id"]: [e[k] for k in signature] for e in before["divergences"]}
    assert {e["api"] for e in after["divergences"]} == {"LeaveGroup", "JoinGroup"}
    for entry in after["divergences"]:
        assert earlier[entry["id"]] == [entry[k] for k in signature]


def test_each_junit_testcase_names_its_rules_and_divergence(planted):
    outcome, out = planted
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(outcome.results)
    numbers = {id(r): n for n, d in enumerate(outcome.divergences, start=1) for r in d.runs}
    for case, result in zip(cases, outcome.results, strict=True):
        assert case[0].tag == "properties"  # first, as JUnit readers expect
        props = [(p.get("name"), p.get("value")) for p in case[0]]
        assert {v for k, v in props if k == "rule"} >= set(result.rules)
        if result.status == "failed":
            n = numbers[id(result)]
            d = outcome.divergences[n - 1]
            assert ("divergence", str(n)) in props and ("severity", d.severity) in props
            assert ("divergence_title", d.title) in props
            assert case.find("failure") is not None
        else:
            assert "divergence" not in dict(props)


def test_writing_again_is_quick_and_leaves_only_whole_files(planted, tmp_path):
    outcome, _ = planted
    args = (outcome.results, "broken", outcome.wall_s)
    reports.write_report(*args, tmp_path, outcome.divergences, RERUN)
    started = time.perf_counter()
    written = reports.write_report(*args, tmp_path, outcome.divergences, RERUN)
    reports.write_junit(*args, tmp_path / "junit.xml", outcome.divergences)
    assert time.perf_counter() - started < 3
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(
        [p.name for p in written] + ["junit.xml"]
    )
    usual = tmp_path / "usual"
    usual.write_text("")  # the permissions any file written here gets
    assert {p.stat().st_mode for p in written} == {usual.stat().st_mode}


def test_what_allow_accepted_is_counted_apart(tmp_path):
    allow = tmp_path / "allow.yaml"
    allow.write_text(
        "- api: JoinGroup\n  versions: 7+\n  field: protocol_*\n  values: [consumer, '']\n"
        "  reason: clients ignore it\n"
        "- scenario: leave-*\n  reason: leaves unknown members\n"
    )
    outcome = run(
        RewritingTarget(PLANTED),
        tags=["leave-*", "delete-*", "member-id-required"],
        allow=allow,
        report=tmp_path / "report",
        junit=tmp_path / "junit.xml",
        out=io.StringIO(),
    )
    leaves = next(d for d in outcome.divergences if d.signature.api == "LeaveGroup")
    assert leaves.allowed
    text = (tmp_path / "report" / "conformance.md").read_text()
    assert f"[protocol] (allowed) {leaves.title}" in text
    accepted = text[text.index("## Divergences --allow accepted") :]
    assert re.search(
        r"- JoinGroup v7-9: protocol_type: expected None, got 'consumer': \d+ times in \d+ runs "
        r"\(clients ignore it\)",
        accepted,
    )
    doc = json.loads((tmp_path / "report" / "conformance.json").read_text())
    assert next(e for e in doc["divergences"] if e["api"] == "LeaveGroup")["allowed"] is True
    (joins, *_) = [a for a in doc["allowed"] if a["field"] == "protocol_type"]
    assert joins["reason"] == "clients ignore it" and joins["versions"] == [7, 8, 9]
    page = (tmp_path / "report" / "conformance.html").read_text()
    assert "<h2>Divergences --allow accepted</h2>" in page
    cases = ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    allowed = [c for c in cases if c.find("system-out") is not None]
    assert allowed and all(c.find("failure") is None for c in allowed)
