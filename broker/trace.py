"""The broker's JSONL trace of the group protocol, in the trace format of spec/trace-format.md (v1).

One line per group request and per response, ``source: "broker"``. ``run`` is this broker
process (node id and start time), ``t_ms`` the milliseconds since it started, ``client``
the connection (client id and address: a connection carries one request at a time), and
``correlation_id`` the broker's own request number, which unlike Kafka's correlation id is
unique within the run. Requests naming several groups (DescribeGroups, DeleteGroups) are
keyed by their first group, ListGroups by ``""``. Field values follow the format: bytes in
base64, error codes as numbers, the reference's field names.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import time
from pathlib import Path
from typing import Any, TextIO

from reference.group.requests import API_KEYS

FORMAT_VERSION = 1
_ENVELOPE = ("request_id", "api_version", "now_ms")


def _plain(value: Any) -> Any:
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, bytes):
        return base64.b64encode(value).decode()
    if isinstance(value, enum.IntEnum):
        return int(value)
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    return value


def group_key(request: Any) -> str:
    if getattr(request, "group_id", None) is not None:
        return request.group_id
    names = [g for g in getattr(request, "groups", ()) or getattr(request, "groups_names", ()) if g is not None]
    return names[0] if names else ""


class Trace:
    def __init__(self, path: Path | None, run: str, start_ms: int) -> None:
        self._out: TextIO | None = open(path, "a", encoding="utf-8") if path is not None else None  # noqa: SIM115
        self._run = run
        self._start_ms = start_ms
        self._open: dict[int | str, tuple[str, str]] = {}  # request id -> (client, group id), until answered

    def request(self, now_ms: int, client: str, request: Any) -> None:
        group_id = group_key(request)
        self._open[request.request_id] = (client, group_id)
        fields = {k: v for k, v in _plain(request).items() if k not in _ENVELOPE}
        self._write(now_ms, "request", client, group_id, request.api, request.api_version, request.request_id, fields)

    def response(self, now_ms: int, api: str, api_version: int, request_id: int | str, response: Any) -> None:
        client, group_id = self._open.pop(request_id, ("", ""))
        self._write(now_ms, "response", client, group_id, api, api_version, request_id, _plain(response))

    def _write(self, now_ms: int, kind: str, client: str, group_id: str, api: str, api_version: int,
               request_id: int | str, fields: dict) -> None:
        if self._out is None:
            return
        line = {"v": FORMAT_VERSION, "source": "broker", "run": self._run, "scenario": None, "group_id": group_id,
                "ts_ms": round(time.time() * 1000, 3), "t_ms": max(now_ms - self._start_ms, 0), "kind": kind,
                "client": client, "api": api, "api_key": API_KEYS[api], "api_version": api_version,
                "correlation_id": request_id, "fields": fields}
        self._out.write(json.dumps(line, separators=(",", ":")) + "\n")
        self._out.flush()

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
