"""What a failing run carries when the broker's wire misbehaves: the raw bytes of an answer
that does not decode and where decoding stopped, the connection the broker closed, and
whether (and when) a request the broker left unanswered was answered after all.

The broker is a tiny asyncio server in this file that speaks just enough Kafka for the kafka
target (ApiVersions, Metadata, FindCoordinator) and misbehaves on one group request."""

from __future__ import annotations

import argparse
import asyncio
import io
import json
import struct
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager

import kio.index
import pytest
from kio.serial import entity_writer

from coordspec.conformance.cli import conform
from coordspec.conformance.suite import reports, run
from coordspec.conformance.suite.kafka_target import KafkaTarget
from coordspec.conformance.suite.kafka_wire import hex_dump
from coordspec.conformance.suite.loader import SCENARIO_DIR
from coordspec.conformance.suite.results import RunResult
from coordspec.conformance.trace.format import validate_file
from coordspec.reference.wire.entities import build

pytestmark = pytest.mark.wire

API_VERSIONS, METADATA, FIND_COORDINATOR, OFFSET_FETCH, JOIN_GROUP = 18, 3, 10, 9, 11
# One version of each: the scenarios run at it.
SERVED = {API_VERSIONS: (0, 3), METADATA: (1, 1), FIND_COORDINATOR: (1, 1)}
SERVED |= {OFFSET_FETCH: (2, 2), JOIN_GROUP: (4, 4)}

# What the server does with a group request: (api key, version, correlation id, writer).
Behaviour = Callable[[int, int, int, asyncio.StreamWriter], Awaitable[None]]


def frame(api_key: int, version: int, correlation: int, values: dict) -> bytes:
    cls = kio.index.load_response_schema(api_key, version)
    buffer = io.BytesIO()
    entity_writer(cls.__header_schema__)(buffer, cls.__header_schema__(correlation_id=correlation))
    entity_writer(cls)(buffer, build(cls, values))
    return struct.pack(">i", len(buffer.getvalue())) + buffer.getvalue()


@contextmanager
def broker(behaviour: Behaviour) -> Iterator[int]:
    """The server on 127.0.0.1 in a thread of its own; yields its port."""
    loop = asyncio.new_event_loop()
    port = 0
    tasks: set[asyncio.Task] = set()  # held, so that the loop does not drop them

    async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                api_key, version, correlation = struct.unpack(
                    ">hhi", (await reader.readexactly(size))[:8]
                )
                if api_key == API_VERSIONS:
                    keys = [
                        {"api_key": k, "min_version": lo, "max_version": hi}
                        for k, (lo, hi) in SERVED.items()
                    ]
                    writer.write(frame(api_key, version, correlation, {"api_keys": keys}))
                elif api_key == METADATA:
                    topics = [
                        {"name": name, "partitions": [{"partition_index": i} for i in range(3)]}
                        for name in ("foo", "bar", "baz")
                    ]
                    writer.write(frame(api_key, version, correlation, {"topics": topics}))
                elif api_key == FIND_COORDINATOR:
                    here = {"node_id": 0, "host": "127.0.0.1", "port": port}
                    writer.write(frame(api_key, version, correlation, here))
                else:
                    tasks.add(loop.create_task(behaviour(api_key, version, correlation, writer)))
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()

    server = asyncio.run_coroutine_threadsafe(asyncio.start_server(serve, "127.0.0.1", 0), loop)
    thread = threading.Thread(target=loop.run_forever, daemon=True)
    thread.start()
    listening = server.result(5)
    port = listening.sockets[0].getsockname()[1]
    try:
        yield port
    finally:

        async def shut() -> None:  # in the server's loop: asyncio is not thread-safe
            listening.close()
            pending = asyncio.all_tasks() - {asyncio.current_task()}
            for task in pending:
                task.cancel()
            await asyncio.gather(*pending, return_exceptions=True)

        asyncio.run_coroutine_threadsafe(shut(), loop).result(5)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(5)
        loop.close()


def run_against(port: int, scenario: str, **options) -> RunResult:
    target = KafkaTarget(f"127.0.0.1:{port}").check()
    target.answer_ms = 500  # the silent runs fail sooner than at Kafka's 5 s
    outcome = run(
        target, scenarios=[SCENARIO_DIR / f"{scenario}.yaml"], out=io.StringIO(), **options
    )
    [result] = outcome.results
    return result


async def truncated_offset_fetch(api_key, version, correlation, writer) -> None:
    # OffsetFetch v2: one topic "foo", one partition, then metadata whose length (100) runs
    # past the end of the frame.
    body = struct.pack(">ih", 1, 3) + b"foo" + struct.pack(">iiqh", 1, 0, 5, 100) + b"abc"
    payload = struct.pack(">i", correlation) + body
    writer.write(struct.pack(">i", len(payload)) + payload)


def test_an_answer_that_does_not_decode_carries_its_bytes_and_where_decoding_stopped():
    with broker(truncated_offset_fetch) as port:
        result = run_against(port, "offset-fetch-unknown-group")
    failure = result.failure
    assert result.status == "failed"
    assert failure.kind == "undecodable"
    # 4 correlation id, 4 topics, 2+3 name, 4 partitions, 4 index, 8 offset: the metadata's
    # length is at byte 29 of 34.
    assert failure.decode_offset == 29
    assert failure.message == (
        "cannot decode OffsetFetchResponse v2 at byte 29 of 34: BufferUnderflow: Buffer is exhausted"
    )
    assert failure.api == "OffsetFetch" and failure.api_version == 2
    assert failure.request["group_id"] == result.group_id
    dump = failure.raw_response.splitlines()
    assert dump[0].startswith("00000000  00 00 00 ")  # the correlation id
    assert dump[0].endswith(" 00 00 00 01  00 03 66 6f 6f 00 00 00  |..........foo...|")
    assert dump[2] == " " * 50 + "^^ decoding stopped at byte 29"  # under the 14th byte of row 2
    text = reports.failure_text(result)
    assert text.index("request: OffsetFetch v2") < text.index("  00000010  01 00 00 00")


async def closing(api_key, version, correlation, writer) -> None:
    writer.transport.abort()


def test_a_connection_the_broker_closes_is_a_connection_failure_that_names_it():
    with broker(closing) as port:
        result = run_against(port, "offset-fetch-unknown-group")
    failure = result.failure
    assert result.status == "failed"
    assert failure.kind == "connection"
    assert failure.api == "OffsetFetch"
    assert failure.message.startswith(
        f"client c1: the broker closed the connection to 127.0.0.1:{port} "
        "after OffsetFetch v2 (correlation id "
    )
    assert failure.message.endswith(") before answering it")


def late_join(delay_s: float | None) -> Behaviour:
    async def answer(api_key, version, correlation, writer) -> None:
        if delay_s is None:
            return  # never
        await asyncio.sleep(delay_s)
        values = {"error_code": 79, "generation_id": -1, "member_id": "c1-late"}
        writer.write(frame(api_key, version, correlation, values))

    return answer


def test_a_join_answered_two_seconds_late_is_reported_with_when_and_what():
    with broker(late_join(2.0)) as port:
        result = run_against(port, "member-id-required", listen_after_failure_ms=5000)
    failure = result.failure
    assert result.status == "failed"
    assert failure.api == "JoinGroup" and failure.response is None
    assert failure.listened_ms == 5000
    assert 1900 <= failure.answered_after_ms <= 2500
    assert failure.late_response["member_id"] == "c1-late"
    assert failure.late_response["error_code"] == 79
    assert failure.message.endswith(
        f"; the broker answered {failure.answered_after_ms} ms after the request"
    )
    assert f"broker response, {failure.answered_after_ms} ms after the request: " in (
        reports.failure_text(result)
    )


def test_a_join_never_answered_says_how_long_the_runner_listened(tmp_path):
    trace = tmp_path / "trace.jsonl"
    with broker(late_join(None)) as port:
        result = run_against(port, "member-id-required", listen_after_failure_ms=1000, trace=trace)
    failure = result.failure
    assert failure.answered_after_ms is None and failure.late_response is None
    assert failure.listened_ms == 1000
    assert failure.message.endswith("; it had not answered 1 s after the request")
    kinds = [json.loads(line)["kind"] for line in trace.read_text().splitlines()]
    assert kinds == ["topics", "request"]


def test_listening_on_the_reference_target_takes_virtual_time_only(tmp_path):
    """The reference parks a join for the initial rebalance delay (3 s); a scenario that
    wants the answer at once fails, and the runner listens on, on the reference's virtual
    clock: the answer is reported 3000 ms after the request, at no cost in wall time."""
    scenario = tmp_path / "join-expected-at-once.yaml"
    scenario.write_text(
        "checks: a join that parks, wrongly expected at once\n"
        "rules: [GM-3]\n"
        "versions:\n  JoinGroup: 4+\n"
        "clients: [c1]\n"
        "steps:\n"
        "  - c1: JoinGroup\n"
        '    member_id: ""\n'
        "    expect: {error: MEMBER_ID_REQUIRED, member_id: $m1}\n"
        "  - c1: JoinGroup\n"
        "    expect: {error: NONE}\n"
    )
    trace = tmp_path / "trace.jsonl"
    started = time.perf_counter()
    outcome = run(scenarios=[scenario], version_selection="latest", trace=trace, out=io.StringIO())
    assert time.perf_counter() - started < 5
    [result] = outcome.results
    failure = result.failure
    assert failure.kind == "expectation" and failure.step == 2
    assert failure.answered_after_ms == 3000 and failure.listened_ms == 30_000
    assert failure.late_response["error_code"] == 0
    assert failure.message.endswith("; the broker answered 3000 ms after the request")
    last = json.loads(trace.read_text().splitlines()[-1])
    assert (last["kind"], last["t_ms"], last["fields"]["error_code"]) == ("response", 3000, 0)
    assert validate_file(trace) == 5  # topics, two requests, two responses


def test_the_listening_bound_is_an_option_of_coordspec_conform(capsys):
    parser = argparse.ArgumentParser(prog="coordspec conform")
    conform.add_arguments(parser)
    args = parser.parse_args(["--listen-after-failure-ms", "-1", "--tags", "member-id-required"])
    assert conform.run_command(args) == 2
    assert capsys.readouterr().err == (
        "coordspec conform: --listen-after-failure-ms must be at least 0, got -1\n"
    )


def test_a_long_frame_is_dumped_around_where_decoding_stopped_with_its_length():
    data = bytes(range(256)) * 40  # 10240 bytes
    lines = hex_dump(data, 5000).splitlines()
    assert lines[-1] == "(10240 bytes in all; bytes 2944-7039 shown)"
    rows = [line for line in lines if line[:8].strip("0123456789abcdef") == ""]
    assert len(rows) == 4096 // 16
    marker = lines.index(" " * 35 + "^^ decoding stopped at byte 5000")
    assert lines[marker - 1].startswith("00001380  80 81 82 83 84 85 86 87  88 ")  # 5000 = 0x1388
