"""Reports are written and parseable: JUnit XML, Markdown, HTML, and the JSONL trace."""

from __future__ import annotations

import io
import json
import xml.etree.ElementTree as ET

import pytest

from coordspec.conformance.suite import SuiteError, run
from coordspec.conformance.suite.loader import SCENARIO_DIR
from coordspec.conformance.suite.reference_target import ReferenceTarget
from coordspec.conformance.trace.format import TraceError, parse_line, validate_file
from coordspec.reference.group.json_values import decode_request, decode_response

SOME = [
    SCENARIO_DIR / f"{name}.yaml"
    for name in (
        "two-members-join-and-sync",
        "stale-generation-commit",
        "session-expiry",
        "restart-resumes-last-written-generation",
        "cg-static-member-comes-back",  # the consumer group APIs' records round-trip too
    )
]


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("reports")
    console = io.StringIO()
    outcome = run(
        "reference",
        scenarios=SOME,
        junit=out / "junit.xml",
        report=out / "report",
        trace=out / "trace.jsonl",
        out=console,
    )
    return outcome, out, console.getvalue()


def test_junit_xml_parses_and_counts_every_run(written):
    outcome, out, _ = written
    suite = ET.parse(out / "junit.xml").getroot().find("testsuite")
    cases = suite.findall("testcase")
    assert len(cases) == len(outcome.results) == int(suite.get("tests"))
    assert suite.get("failures") == "0" and suite.get("errors") == "0"
    assert {c.get("classname") for c in cases} == {f"conformance.{p.stem}" for p in SOME}


def test_the_trace_validates_and_replays_into_the_reference_types(written):
    outcome, out, _ = written
    path = out / "trace.jsonl"
    count = validate_file(path)
    records = [parse_line(line) for line in path.read_text().splitlines()]
    assert count == len(records) > 0
    kinds = {r.kind for r in records}
    assert kinds == {"request", "response", "time", "fault", "topics"}
    topics = [r for r in records if r.kind == "topics"]
    assert len(topics) == len(outcome.results)  # one per run, naming the target's topics
    assert all(r.topics == {"foo": 3, "bar": 3, "baz": 3} for r in topics)
    assert {r.run for r in records} == {r.group_id for r in outcome.results}
    for record in records:
        if record.kind == "request":
            request = decode_request(
                record.api, record.api_version, record.correlation_id, record.t_ms, record.fields
            )
            assert request.api == record.api
        elif record.kind == "response":
            assert decode_response(record.api, record.fields) is not None
    requests = {(r.run, r.correlation_id) for r in records if r.kind == "request"}
    responses = {(r.run, r.correlation_id) for r in records if r.kind == "response"}
    assert responses <= requests


def test_a_bad_trace_line_is_reported_in_one_line(tmp_path, written):
    _, out, _ = written
    good = next(x for x in (out / "trace.jsonl").read_text().splitlines() if '"request"' in x)
    bad = json.loads(good)
    bad["api_key"] = 99
    path = tmp_path / "bad.jsonl"
    path.write_text(good + "\n" + json.dumps(bad) + "\n")
    with pytest.raises(TraceError) as caught:
        validate_file(path)
    assert str(caught.value).startswith(f"{path}:2: ")
    assert "api_key 11, not 99" in str(caught.value) and "\n" not in str(caught.value)


def test_markdown_and_html_reports_give_verdicts_per_rule_and_version(written):
    outcome, out, console = written
    report = out / "report"
    assert sorted(p.name for p in report.iterdir()) == [
        "conformance-details.md",
        "conformance.html",
        "conformance.json",
        "conformance.md",
    ]
    assert all(f"wrote {p}" in console for p in report.iterdir())
    markdown = (report / "conformance.md").read_text()
    assert markdown.splitlines()[2] == "**0 distinct divergences** in 0 runs."
    assert "None: no run failed on a divergence." in markdown
    assert "## Spec rules" in markdown and "| GM-50 | fenced commits | ✓ passed |" in markdown
    assert "| JoinGroup | – | – | – | – | ✓ | ✓ | ✓ | ✓ | ✓ | ✓ |" in markdown
    page = (report / "conformance.html").read_text()
    assert page.startswith("<!doctype html>") and "<td>GM-41<td>loading" in page
    assert "<h2>No divergences</h2>" in page
    doc = json.loads((report / "conformance.json").read_text())
    assert doc["counts"]["passed"] == len(outcome.results) and doc["divergences"] == []


def test_the_console_summary_counts_runs(written):
    outcome, _, console = written
    assert f"{len(outcome.results)} runs: {len(outcome.results)} passed, 0 failed" in console


class NoFaults(ReferenceTarget):
    name = "no-faults"
    supports_faults = False


def test_fault_scenarios_are_not_run_without_fault_hooks(tmp_path):
    outcome = run(NoFaults(), scenarios=SOME, junit=tmp_path / "junit.xml", out=io.StringIO())
    skipped = [r for r in outcome.results if r.status == "not_run"]
    assert {r.scenario for r in skipped} == {"restart-resumes-last-written-generation"}
    assert all("fault hooks (restart)" in r.reason for r in skipped)
    cases = ET.parse(tmp_path / "junit.xml").getroot().iter("testcase")
    marked = [c for c in cases if c.find("skipped") is not None]
    assert len(marked) == len(skipped)
    assert outcome.exit_code == 0


def test_a_tag_that_selects_nothing_is_one_clear_error():
    with pytest.raises(SuiteError, match="no scenario matches --tags nothing-like-this"):
        run("reference", tags=["nothing-like-this"], out=io.StringIO())


def test_a_broker_target_without_its_address_is_one_clear_error():
    with pytest.raises(SuiteError, match=r"^the kafka target needs --bootstrap HOST:PORT$"):
        run("kafka", out=io.StringIO())


def test_report_files_go_into_new_directories_and_unwritable_places_are_one_clear_error(tmp_path):
    nested = tmp_path / "a" / "b"
    outcome = run(
        "reference",
        scenarios=SOME[:1],
        trace=nested / "trace.jsonl",
        junit=nested / "j" / "junit.xml",
        out=io.StringIO(),
    )
    assert (nested / "trace.jsonl").read_text() and (nested / "j" / "junit.xml").read_text()
    assert outcome.exit_code == 0
    blocker = tmp_path / "file"
    blocker.write_text("")
    # Checked before anything runs: one line per path.
    with pytest.raises(
        SuiteError, match=r"^--trace .*file/trace.jsonl: .*file is not a directory$"
    ):
        run("reference", scenarios=SOME[:1], trace=blocker / "trace.jsonl", out=io.StringIO())
    with pytest.raises(SuiteError, match=r"^--report .*file/r: .*file is not a directory$"):
        run("reference", scenarios=SOME[:1], report=blocker / "r", out=io.StringIO())
