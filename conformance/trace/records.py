"""Reading trace files: JSONL or gzipped JSONL, files or directories, every line checked.

A bad line is a :class:`~coordspec.conformance.trace.format.TraceError` whose text is one line,
``file:line: field: what``. The envelope is checked by the trace models and the ``fields``
by decoding them into the reference's request and response types, so a line that reads
here replays in :func:`coordspec.conformance.tracecheck.replay.check_key`.
"""

from __future__ import annotations

import functools
import gzip
import json
import typing
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

import pydantic_core
from pydantic import ValidationError

from coordspec.conformance.trace.format import (
    PartitionRecord,
    RequestRecord,
    ResponseRecord,
    TraceError,
    parse_line,
)
from coordspec.conformance.tracecheck import partitions
from coordspec.reference.errors import UsageError
from coordspec.reference.group import json_values
from coordspec.reference.group import requests as request_types

SUFFIXES = (".jsonl", ".jsonl.gz", ".json", ".json.gz")


class Line(NamedTuple):
    """One trace line and where it came from: the unit both checkers move around."""

    path: str
    number: int
    text: str


def expand(paths: Iterable[str | Path]) -> list[Path]:
    """The trace files named: files as given, directories searched for *.jsonl[.gz]."""
    files: list[Path] = []
    for raw in paths:
        path = Path(raw)
        if path.is_dir():
            found = sorted(p for p in path.rglob("*") if p.is_file() and p.name.endswith(SUFFIXES))
            if not found:
                raise TraceError(f"{path}: no trace files (*.jsonl, *.jsonl.gz) in this directory")
            files.extend(found)
        elif path.is_file():
            files.append(path)
        else:
            raise TraceError(f"{path}: no such file or directory")
    return files


def read(path: Path, cut_short: Callable[[str], None] | None = None) -> Iterator[Line]:
    """The non-blank lines of a trace file, gzipped or not. A last line with no newline that
    is not JSON was cut short (its writer stopped mid-line): with ``cut_short`` it is left
    out and ``cut_short`` told why; without, parsing it fails as any bad line does."""
    opener = gzip.open if path.name.endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8") as lines:
            for number, text in enumerate(lines, start=1):
                if not text.strip():
                    continue
                if cut_short and not text.endswith("\n") and not _is_json(text):
                    cut_short(f"{path}:{number}: the last line is cut short; checked without it")
                    continue
                yield Line(str(path), number, text)
    except (OSError, EOFError, UnicodeDecodeError) as exc:
        raise TraceError(f"{path}: cannot read: {exc}") from None


def _is_json(text: str) -> bool:
    try:
        json.loads(text)
    except ValueError:
        return False
    return True


def parse(line: Line, request_id: int | None = None):
    """The record on a line, with its request or response decoded (None for time and fault
    records); raises TraceError naming the file, the line and the field. A request's id is
    ``request_id`` if given, else its correlation id (unique only on its connection)."""
    try:
        record = parse_line(line.text)
    except ValidationError as exc:
        error = exc.errors()[0]
        loc = (
            error["loc"][1:]
            if error["loc"][:1]
            in (("request",), ("response",), ("time",), ("fault",), ("topics",), ("partition",))
            else error["loc"]
        )
        where = ".".join(str(p) for p in loc)  # without the kind the models are picked by
        if error["type"] == "json_invalid":
            where = ""
        raise TraceError(
            f"{line.path}:{line.number}: {where + ': ' if where else ''}{error['msg']}"
        ) from None
    try:
        if isinstance(record, RequestRecord):
            message = json_values.decode_request(
                record.api,
                record.api_version,
                record.correlation_id if request_id is None else request_id,
                record.t_ms,
                record.fields,
            )
        elif isinstance(record, ResponseRecord):
            message = json_values.decode_response(record.api, record.fields)
        else:
            message = None
    except (TypeError, ValueError, KeyError, UsageError) as exc:
        _check_fields(line, record)  # names the field, if one field is the trouble
        raise TraceError(f"{line.path}:{line.number}: fields: {_first_line(exc)}") from None
    return record, message


@functools.cache
def _hints(cls: type) -> dict:
    return typing.get_type_hints(cls)


def _check_fields(line: Line, record) -> None:
    """Name the field that does not decode (codec reports what, not where)."""
    cls = (
        getattr(request_types, record.api)
        if isinstance(record, RequestRecord)
        else json_values.RESPONSES[record.api]
    )
    hints = _hints(cls)
    for name, value in record.fields.items():
        if name not in hints or name in ("request_id", "api_version", "now_ms"):
            raise TraceError(
                f"{line.path}:{line.number}: fields.{name}: not a field of {cls.__name__}"
            )
        try:
            json_values.decode(hints[name], value)
        except (TypeError, ValueError, UsageError) as exc:
            raise TraceError(
                f"{line.path}:{line.number}: fields.{name}: {_first_line(exc)}"
            ) from None


def _first_line(exc: Exception) -> str:
    return str(exc).splitlines()[0] if str(exc) else type(exc).__name__


def quick_key(line: Line) -> tuple[str, str, int]:
    """(key, run, t_ms) of a line, read cheaply; the full check of the line happens when its
    key is replayed. The key is the group's (:func:`~coordspec.conformance.tracecheck.partitions.group_key`) or the partition's
    (:func:`~coordspec.conformance.tracecheck.partitions.key_of`), which cannot be equal. A line without them gets the full check now, which
    says why."""
    try:
        data = _loads(line.text)
        run, t_ms = data["run"], data["t_ms"]
        if data.get("kind") == "partition":
            topic, number = data["topic"], data["partition"]
            key = (
                partitions.key_of(topic, number)
                if isinstance(topic, str) and type(number) is int
                else None
            )
        else:
            key = (
                partitions.group_key(data["group_id"])
                if isinstance(data["group_id"], str)
                else None
            )
        if isinstance(key, str) and isinstance(run, str) and type(t_ms) is int and t_ms >= 0:
            return key, run, t_ms
    except (ValueError, KeyError, TypeError, AttributeError):
        pass
    record, _ = parse(line)
    if isinstance(record, PartitionRecord):
        return partitions.key_of(record.topic, record.partition), record.run, record.t_ms
    return partitions.group_key(record.group_id), record.run, record.t_ms


def _loads(text: str) -> Any:
    """json.loads, at twice its speed: pydantic's parser reads the same values, and json.loads
    is asked only when it refuses (json also takes lone surrogates in strings)."""
    try:
        return pydantic_core.from_json(text)
    except ValueError:
        return json.loads(text)


def order(parsed: tuple) -> tuple[int, str, int]:
    """Events of a key replay in this order: session time, then file and line (of a line
    and its record, as ``check_key`` holds them)."""
    line = parsed[0]
    return (parsed[1].t_ms, line.path, line.number)
