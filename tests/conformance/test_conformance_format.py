"""Scenario files: a bad one gives one clear line (file, line, what is wrong); version plans."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from coordspec.conformance.suite.loader import ScenarioError, load
from coordspec.conformance.suite.versions import VersionError, parse_range, parse_selection, plans

ROOT = Path(__file__).resolve().parents[2]
HEADER = "checks: a scenario written to be wrong\nrules: [GM-3]\nclients: [c1, c2]\n"

BAD = {
    "unknown field": (
        HEADER + "steps:\n  - c1: JoinGroup\n    member_idd: x\n",
        6,
        "JoinGroup: unknown field 'member_idd'",
    ),
    "unknown error name": (
        HEADER + "steps:\n  - c1: Heartbeat\n    expect: {error: NOPE}\n",
        6,
        "Heartbeat: expect.error: 'NOPE' is not an error name",
    ),
    "expectation of another API": (
        HEADER + "steps:\n  - c1: Heartbeat\n    expect: {assignment: [foo-0]}\n",
        6,
        "Heartbeat has no expectation 'assignment'",
    ),
    "unknown API": (HEADER + "steps:\n  - c1: JoinGroupp\n", 5, "'JoinGroupp' is not an API"),
    "unlisted client": (
        HEADER + "steps:\n  - c3: Heartbeat\n",
        5,
        "client c3 is not listed in clients",
    ),
    "await without parked request": (
        HEADER + "steps:\n  - c1: Heartbeat\n  - await: c1\n    within: 5\n",
        6,
        "await: c1 has no parked request",
    ),
    "await without within": (
        HEADER + "steps:\n  - c1: JoinGroup\n    expect: parked\n  - await: c1\n",
        7,
        "await: missing field 'within'",
    ),
    "request while parked": (
        HEADER + "steps:\n  - c1: JoinGroup\n    expect: parked\n  - c1: Heartbeat\n",
        7,
        "c1 still waits for its JoinGroup from line 5",
    ),
    "bad rule": (
        "checks: a scenario written to be wrong\nrules: [GM-3, rule4]\nclients: [c1]\nsteps:\n  - sleep: 1\n",
        2,
        "rules: 'rule4' is not a spec rule",
    ),
    "version outside the model": (
        HEADER
        + "versions: {OffsetCommit: 0-3}\nsteps:\n  - c1: OffsetCommit\n    offsets: {foo-0: 1}\n",
        4,
        "OffsetCommit: versions 0-3 lie outside v2-v9",
    ),
    "versions of an unused API": (
        HEADER + "versions: {SyncGroup: 5}\nsteps:\n  - sleep: 1\n",
        4,
        "versions names SyncGroup, which no step sends",
    ),
    "bad partition": (
        HEADER + "steps:\n  - c1: OffsetFetch\n    partitions: [foo]\n",
        6,
        "expected a partition as topic-N",
    ),
    "missing required field": (
        HEADER + "steps:\n  - c1: OffsetFetch\n",
        5,
        "OffsetFetch: missing field 'partitions'",
    ),
    "several groups below v8": (
        HEADER + "steps:\n  - c1: OffsetFetch\n    groups: [{partitions: all}]\n",
        6,
        "OffsetFetch: several groups need v8+",
    ),
    "groups and partitions": (
        HEADER
        + "versions: {OffsetFetch: 8+}\nsteps:\n  - c1: OffsetFetch\n    partitions: all\n"
        + "    groups: [{partitions: all}]\n",
        6,
        "OffsetFetch: give 'groups' or 'group_id' and 'partitions', not both",
    ),
    "expectation of a group not a mapping": (
        HEADER
        + "versions: {OffsetFetch: 8+}\nsteps:\n  - c1: OffsetFetch\n    groups: [{partitions: all}]\n"
        + "    expect: {groups: {$group: NONE}}\n",
        8,
        "expect.groups: expected a group id and a mapping of expectations",
    ),
    "record without its partition": (
        HEADER
        + "steps:\n  - c1: OffsetCommit\n    offsets: {foo-0: 1}\n"
        + "    expect:\n      records: [{kind: offset_tombstone}]\n",
        8,
        "expect.records: offset_tombstone needs a partition (topic-N)",
    ),
    "record field of another kind": (
        HEADER
        + "steps:\n  - c1: OffsetCommit\n    offsets: {foo-0: 1}\n"
        + "    expect:\n      records:\n        - {kind: group_metadata, offset: 1}\n",
        9,
        "expect.records: group_metadata has no offset",
    ),
    "unknown broker setting": (
        HEADER + "broker: {max_sise: 3}\nsteps:\n  - sleep: 1\n",
        4,
        "unknown broker setting 'max_sise'",
    ),
    "invalid broker setting": (
        HEADER + "broker: {max_size: 0}\nsteps:\n  - sleep: 1\n",
        4,
        "max_size must be at least 1",
    ),
    "unknown fault": (
        HEADER + "steps:\n  - fault: reboot\n",
        5,
        "fault: fault: Input should be 'kill_coordinator' or 'restart'",
    ),
    "duplicate key": (
        HEADER + "steps:\n  - c1: Heartbeat\n    member_id: a\n    member_id: b\n",
        7,
        "duplicate key 'member_id'",
    ),
    "not YAML": ("checks: [unclosed\nrules: [GM-3]\n", 2, "not valid YAML"),
    "empty file": ("", 1, "the file is empty"),
    "not a mapping": ("- just\n- a list\n", 1, "a scenario is a mapping"),
    "two clients in a step": (
        HEADER + "steps:\n  - c1: Heartbeat\n    c2: Heartbeat\n",
        5,
        "one client per step",
    ),
}


@pytest.mark.parametrize("name", list(BAD))
def test_a_bad_file_gives_one_line_with_its_line_number(tmp_path, name):
    content, line, message = BAD[name]
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(ScenarioError) as caught:
        load(path)
    text = str(caught.value)
    assert "\n" not in text
    assert text.startswith(f"{path}:{line}: "), text
    assert message in text


def test_the_command_reports_a_bad_file_in_one_line_without_a_traceback(tmp_path):
    path = tmp_path / "bad.yaml"
    path.write_text(BAD["unknown field"][0])
    done = subprocess.run(
        [sys.executable, "-m", "coordspec.conformance.suite", "--scenarios", str(path)],
        capture_output=True,
        text=True,
        cwd=ROOT,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2
    assert done.stdout == ""
    assert done.stderr == f"coordspec conform: {path}:6: JoinGroup: unknown field 'member_idd'\n"


def test_a_good_file_loads_with_its_step_lines(tmp_path):
    path = tmp_path / "good.yaml"
    path.write_text(
        textwrap.dedent("""\
        # a comment
        checks: a scenario written to be right
        rules: [GM-3]
        versions: {JoinGroup: 4+}
        clients: [c1]
        steps:
          - c1: JoinGroup
            expect: {error: MEMBER_ID_REQUIRED}
          - sleep: 10
        """)
    )
    scenario = load(path)
    assert scenario.name == "good"
    assert scenario.lines == (7, 9)
    assert scenario.versions == {"JoinGroup": range(4, 10)}


def test_version_ranges():
    assert parse_range("JoinGroup", "all") == range(10)
    assert parse_range("JoinGroup", "4+") == range(4, 10)
    assert parse_range("SyncGroup", "2-4") == range(2, 5)
    assert parse_range("Heartbeat", 3) == range(3, 4)
    with pytest.raises(VersionError, match="outside"):
        parse_range("SyncGroup", "6")
    with pytest.raises(VersionError, match="unknown API"):
        parse_range("Produce", "1")


def test_plans_line_ranges_up_at_their_newest_versions():
    assert plans({"JoinGroup": range(4, 10), "SyncGroup": range(6)}) == [
        {"JoinGroup": v, "SyncGroup": v - 4} for v in range(4, 10)
    ]
    assert plans({"JoinGroup": range(4, 10), "SyncGroup": range(3, 6)}) == [
        {"JoinGroup": 4, "SyncGroup": 3},
        {"JoinGroup": 5, "SyncGroup": 3},
        {"JoinGroup": 6, "SyncGroup": 3},
        {"JoinGroup": 7, "SyncGroup": 3},
        {"JoinGroup": 8, "SyncGroup": 4},
        {"JoinGroup": 9, "SyncGroup": 5},
    ]
    assert plans({}) == [{}]


def test_version_selection():
    assert parse_selection("latest") == ("latest", {})
    assert parse_selection("JoinGroup=4-9,SyncGroup=5") == (
        "all",
        {"JoinGroup": range(4, 10), "SyncGroup": range(5, 6)},
    )
    with pytest.raises(VersionError, match="not API=RANGE"):
        parse_selection("JoinGroup")


@pytest.mark.parametrize(
    ("content", "line", "message"),
    [
        (
            "- reason: no rule or scenario\n",
            1,
            "an entry names a rule, a scenario, or an api with field",
        ),
        ("- rule: GM-3\n", 1, "missing field 'reason'"),
        (
            "- rule: GM-3\n  reason: fine\n- rule: GM-4\n  reason: fine\n  reasn: typo\n",
            5,
            "unknown field 'reasn'",
        ),
        (
            "- rule: GM-3\n  api: JoinGroup\n  versions: 12\n  reason: too new\n",
            1,
            "versions 12 lie outside",
        ),
        ("rule: GM-3\n", 1, "an allow file is a list"),
    ],
)
def test_a_bad_allow_file_gives_one_line(tmp_path, content, line, message):
    from coordspec.conformance.suite.allow import AllowError
    from coordspec.conformance.suite.allow import load as load_allow

    path = tmp_path / "allow.yaml"
    path.write_text(content)
    with pytest.raises(AllowError) as caught:
        load_allow(path)
    assert str(caught.value).startswith(f"{path}:{line}: ") and message in str(caught.value)
    assert "\n" not in str(caught.value)
