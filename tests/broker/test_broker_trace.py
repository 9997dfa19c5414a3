"""The broker's trace writer (broker/trace.py) makes its JSON text itself, for speed: every
request and response of the whole catalog, at every API version, comes out as the trace
format's own encoding says (``json_values.encode``), and a turn of the event loop flushes its lines
once, before the callbacks queued after them (a group's write starts from one)."""

from __future__ import annotations

import asyncio
import io
import json

import pytest

from coordspec.broker.trace import Trace
from coordspec.conformance.suite import run
from coordspec.conformance.trace.records import Line, parse
from coordspec.reference.group import json_values

pytestmark = pytest.mark.wire

COMPACT = {"separators": (",", ":")}


@pytest.fixture(scope="module")
def catalog(tmp_path_factory) -> list[dict]:
    path = tmp_path_factory.mktemp("catalog") / "trace.jsonl"
    assert run("reference", trace=path, version_selection="all", out=io.StringIO()).exit_code == 0
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_every_message_of_the_catalog_is_written_as_the_format_encodes_it(tmp_path, catalog):
    trace = Trace(tmp_path / "trace.jsonl", 1, 0)
    messages = []
    for record in catalog:
        if record["kind"] == "request":
            message = json_values.decode_request(
                record["api"],
                record["api_version"],
                record["correlation_id"],
                record["t_ms"],
                record["fields"],
            )
            trace.request(record["t_ms"], record["client"], message)
            expected = json_values.request_fields(message)
        elif record["kind"] == "response":
            message = json_values.decode_response(record["api"], record["fields"])
            trace.response(
                record["t_ms"],
                record["api"],
                record["api_version"],
                record["correlation_id"],
                message,
            )
            expected = json_values.encode(message)
        else:
            continue
        messages.append((record, expected))
    trace.close()

    lines = (tmp_path / "trace.jsonl").read_text().splitlines()
    assert len(lines) == len(messages) > 10_000
    apis = set()
    for number, (text, (record, expected)) in enumerate(zip(lines, messages, strict=True), start=1):
        parsed, _ = parse(
            Line("trace.jsonl", number, text)
        )  # the format's models and the reference's types
        written = json.loads(text)
        assert text.endswith(',"fields":' + json.dumps(expected, **COMPACT) + "}"), text
        assert (
            written["kind"],
            written["api"],
            written["api_version"],
            written["correlation_id"],
            written["t_ms"],
        ) == (
            record["kind"],
            record["api"],
            record["api_version"],
            record["correlation_id"],
            record["t_ms"],
        )
        if record["kind"] == "request":
            assert written["client"] == record["client"]
        assert parsed.source == "broker"
        apis.add((record["api"], record["api_version"]))
    assert len(apis) > 40  # every group API, each at its versions


def test_a_response_names_the_client_and_group_of_its_request(tmp_path, catalog):
    record = next(r for r in catalog if r["kind"] == "request" and r["api"] == "JoinGroup")
    request = json_values.decode_request("JoinGroup", record["api_version"], 7, 0, record["fields"])
    response = next(r for r in catalog if r["kind"] == "response" and r["api"] == "JoinGroup")
    trace = Trace(tmp_path / "trace.jsonl", 1, 0)
    trace.request(5, "client-1/127.0.0.1:4000", request)
    trace.response(
        9,
        "JoinGroup",
        record["api_version"],
        7,
        json_values.decode_response("JoinGroup", response["fields"]),
    )
    trace.close()
    first, second = (
        json.loads(line) for line in (tmp_path / "trace.jsonl").read_text().splitlines()
    )
    assert second["client"] == first["client"] == "client-1/127.0.0.1:4000"
    assert (
        second["group_id"]
        == first["group_id"]
        == request.trace_group
        == record["fields"]["group_id"]
    )
    assert (first["t_ms"], second["t_ms"]) == (5, 9)


def test_a_turns_lines_are_flushed_once_before_the_callbacks_queued_after_them(tmp_path, catalog):
    path = tmp_path / "trace.jsonl"
    record = next(r for r in catalog if r["kind"] == "request" and r["api"] == "Heartbeat")
    request = json_values.decode_request("Heartbeat", record["api_version"], 1, 0, record["fields"])

    async def write_then_look() -> tuple[int, int]:
        trace = Trace(path, 1, 0)
        seen = asyncio.get_running_loop().create_future()
        for _ in range(3):  # one turn's lines: flushed together
            trace.request(0, "c", request)
        on_disk_at_once = len(path.read_text().splitlines())
        asyncio.get_running_loop().call_soon(
            lambda: seen.set_result(len(path.read_text().splitlines()))
        )
        lines = await seen
        trace.close()
        return on_disk_at_once, lines

    assert asyncio.run(write_then_look()) == (0, 3)

    trace = Trace(path, 1, 0)  # outside an event loop: at once
    trace.fault(0, record["fields"]["group_id"], "restart")
    assert len(path.read_text().splitlines()) == 4
    trace.close()
