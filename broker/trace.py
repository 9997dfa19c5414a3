"""The broker's JSONL trace of the group protocol: one line per request and per response.

Each line is ``{"ts_ms", "event": "request" | "response", "api", "api_version",
"request_id", "body"}``; ``body`` is the reference's request or response dataclass as a
mapping, bytes as hex and error codes as their numbers, so a trace can be replayed
through the reference offline. The conformance kit's trace format is not defined yet;
this is the minimal record until it is.
"""

from __future__ import annotations

import dataclasses
import enum
import json
from pathlib import Path
from typing import Any, TextIO


def _plain(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.hex()
    if isinstance(value, enum.IntEnum):
        return int(value)
    if dataclasses.is_dataclass(value):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (tuple, list)):
        return [_plain(v) for v in value]
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    return value


class Trace:
    def __init__(self, path: Path | None) -> None:
        self._out: TextIO | None = open(path, "a", encoding="utf-8") if path is not None else None  # noqa: SIM115

    def request(self, ts_ms: int, request: Any) -> None:
        body = _plain(request)
        self._write(ts_ms, "request", request.api, body.pop("api_version"), body.pop("request_id"), body)

    def response(self, ts_ms: int, api: str, api_version: int, request_id: int | str, response: Any) -> None:
        self._write(ts_ms, "response", api, api_version, request_id, _plain(response))

    def _write(self, ts_ms: int, event: str, api: str, api_version: int, request_id: Any, body: dict) -> None:
        if self._out is None:
            return
        line = {"ts_ms": ts_ms, "event": event, "api": api, "api_version": api_version, "request_id": request_id, "body": body}
        self._out.write(json.dumps(line, separators=(",", ":")) + "\n")
        self._out.flush()

    def close(self) -> None:
        if self._out is not None:
            self._out.close()
