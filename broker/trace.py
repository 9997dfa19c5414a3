"""The broker's JSONL trace of the group protocol, in the trace format of spec/trace-format.md (v1).

One line per group request and per response, ``source: "broker"``. ``client`` is the
connection (client id and address: a connection carries one request at a time),
``correlation_id`` the broker's own request number (Kafka's correlation ids repeat across
connections), ListGroups, about no one group, is keyed by ``""``. Field values follow the
format: bytes in base64, error codes as numbers, the reference's field names.

A run is the life of the trace file, across broker restarts: the run's name and start
(``<trace>.run``) and the groups it has seen (``<trace>.groups``) are kept next to it, and
a broker that starts on an existing run writes a ``restart`` fault for every group seen or
loaded, so an offline check reloads each group from its log as the broker did. ``t_ms``
counts from the run's start.

A cluster broker is given its run and the clock's start instead (``run``, ``epoch_ms``):
every broker of a cluster writes its own file under the same run and the same clock, so
the files of all of them together are one run, in which a group's coordinator may change
(:mod:`coordspec.broker.cluster.group_trace` writes the ``load_group`` faults).
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from pydantic import BaseModel, ValidationError

from coordspec.reference.group import json_values
from coordspec.reference.group.requests import API_KEYS

FORMAT_VERSION = 1
_COMPACT = json.JSONEncoder(
    separators=(",", ":")
)  # one encoder: json.dumps makes one per call with these
_STRING = (
    json.encoder.encode_basestring_ascii
)  # what _COMPACT writes for a str, without its dispatch


def _json(value: Any) -> str:
    """The JSON text of a value in the trace format, compact."""
    kind = type(value)
    if kind is str:
        return _STRING(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if isinstance(value, int):
        return int.__repr__(value)  # error codes too: an IntEnum is written as its number
    if dataclasses.is_dataclass(value):
        return _object_writer(kind, frozenset())(value)
    return _COMPACT.encode(json_values.encode(value))


@functools.cache
def _object_writer(cls: type, leave_out: frozenset[str]) -> Callable[[Any], str]:
    """Writes an instance of the dataclass ``cls`` as a JSON object without the fields
    ``leave_out``: JSON text made directly, with no dict of JSON values in between."""
    members = [
        (_STRING(name) + ":", name) for name, _ in json_values.fields(cls) if name not in leave_out
    ]

    def write(value: Any) -> str:
        return "{" + ",".join([key + _json(getattr(value, name)) for key, name in members]) + "}"

    return write


class TraceFileError(Exception):
    """The trace's companion files cannot be read; one line for the user."""


class TraceRun(BaseModel):
    run: str
    start_ms: int


class Trace:
    def __init__(
        self,
        path: Path | None,
        node_id: int,
        now_ms: int,
        *,
        run: str | None = None,
        epoch_ms: int = 0,
    ) -> None:
        self._out: TextIO | None = None
        self._open: dict[
            int | str, tuple[str, str]
        ] = {}  # request id -> (client, group id), until answered
        self._seen: set[str] = set()
        self._groups_file: Path | None = None
        self.restarted = False
        self._run, self._start_ms = f"broker-{node_id}-{now_ms}", now_ms
        self._flush_due = False
        self._head: str | None = None  # every line's first members, up to the group id's value
        self._apis: dict[
            tuple[str, str, int], str
        ] = {}  # (kind, api, version) -> their members' JSON
        if path is None:
            return
        if run is not None:  # a cluster's broker: the run and its clock are the cluster's
            self._run, self._start_ms = run, epoch_ms
            self._out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the broker's life
            return
        run_file, self._groups_file = (
            path.with_name(path.name + ".run"),
            path.with_name(path.name + ".groups"),
        )
        if run_file.exists():
            try:
                state = TraceRun.model_validate_json(run_file.read_bytes())
            except ValidationError:
                raise TraceFileError(f"{run_file}: cannot read the trace's run") from None
            self._run, self._start_ms, self.restarted = state.run, state.start_ms, True
            if self._groups_file.exists():
                self._seen = {
                    json.loads(line) for line in self._groups_file.read_text().splitlines() if line
                }
        else:
            run_file.write_text(TraceRun(run=self._run, start_ms=self._start_ms).model_dump_json())
        self._out = open(path, "a", encoding="utf-8")  # noqa: SIM115 - open for the broker's life

    @property
    def enabled(self) -> bool:
        return self._out is not None

    def restart(self, now_ms: int, loaded_groups: set[str]) -> None:
        """After a restart on an existing run: every group starts again from its log."""
        if not self.restarted or self._out is None:
            return
        for group_id in sorted(self._seen | loaded_groups):
            self._line(now_ms, group_id, '"kind":"fault","fault":"restart"}')

    def fault(self, now_ms: int, group_id: str, fault: str, down_ms: int | None = None) -> None:
        if self._out is not None:
            down = (
                {}
                if down_ms is None
                else {
                    "down_ms": min(
                        max(down_ms - self._start_ms, 0), max(now_ms - self._start_ms, 0)
                    )
                }
            )
            self._line(
                now_ms, group_id, _COMPACT.encode({"kind": "fault", "fault": fault, **down})[1:]
            )

    def metadata_image(
        self, now_ms: int, group_id: str, topics: dict[str, int], topic_ids: dict[str, str]
    ) -> None:
        """From now on ``group_id``'s coordinator knows these topics (CG-70)."""
        if self._out is not None:
            self._see(group_id)
            image = {"kind": "metadata_image", "topics": topics, "topic_ids": topic_ids}
            self._line(now_ms, group_id, _COMPACT.encode(image)[1:])

    def resolve_regular_expressions(self, now_ms: int, group_id: str) -> None:
        """The coordinator resolved ``group_id``'s regular expressions (CG-68)."""
        if self._out is not None:
            self._see(group_id)
            self._line(now_ms, group_id, '"kind":"resolve_regular_expressions"}')

    def forget(self, request_id: int | str) -> None:
        """A request that will have no response in the trace (as if in flight at a fault)."""
        self._open.pop(request_id, None)

    def _see(self, group_id: str) -> None:
        if self._groups_file is not None and group_id not in self._seen:
            self._seen.add(group_id)
            with open(self._groups_file, "a", encoding="utf-8") as groups:
                groups.write(json.dumps(group_id) + "\n")

    def request(self, now_ms: int, client: str, request: Any) -> None:
        group_id = request.trace_group
        self._open[request.request_id] = (client, group_id)
        fields = _object_writer(type(request), json_values.REQUEST_ENVELOPE)(request)
        self._write(
            now_ms,
            "request",
            client,
            group_id,
            request.api,
            request.api_version,
            request.request_id,
            fields,
        )

    def response(
        self, now_ms: int, api: str, api_version: int, request_id: int | str, response: Any
    ) -> None:
        client, group_id = self._open.pop(request_id, ("", ""))
        self._write(
            now_ms, "response", client, group_id, api, api_version, request_id, _json(response)
        )

    def _write(
        self,
        now_ms: int,
        kind: str,
        client: str,
        group_id: str,
        api: str,
        api_version: int,
        request_id: int | str,
        fields: str,
    ) -> None:
        if self._out is None:
            return
        self._see(group_id)
        api_members = self._apis.get((kind, api, api_version))
        if api_members is None:
            api_members = self._apis[kind, api, api_version] = (
                f'"api":{_STRING(api)},"api_key":{API_KEYS[api]},"api_version":{api_version},'
            )
        correlation = str(request_id) if type(request_id) is int else _STRING(request_id)
        self._line(
            now_ms,
            group_id,
            f'"kind":"{kind}","client":{_STRING(client)},{api_members}'
            f'"correlation_id":{correlation},"fields":{fields}}}',
        )

    def _line(self, now_ms: int, group_id: str, members: str) -> None:
        """Write a line: the envelope, then ``members``, the record's own members and the closing brace.

        A turn of the event loop flushes its lines once, before the callbacks it queued after
        them (outside a loop, at once). A crash loses at most that turn's lines, and none of
        their requests has a durable effect yet: a group's write starts from such a callback,
        after its request's line is on disk.
        """
        assert self._out is not None
        if self._head is None:
            self._head = f'{{"v":{FORMAT_VERSION},"source":"broker","run":{_STRING(self._run)},"scenario":null,"group_id":'
        self._out.write(
            f'{self._head}{_STRING(group_id)},"ts_ms":{round(time.time() * 1000, 3)!r},'
            f'"t_ms":{max(now_ms - self._start_ms, 0)},{members}\n'
        )
        if self._flush_due:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self._out.flush()
            return
        self._flush_due = True
        loop.call_soon(self._flush)

    def _flush(self) -> None:
        self._flush_due = False
        if self._out is not None:
            self._out.flush()

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
            self._out = None
