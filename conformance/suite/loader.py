"""Load scenario files. A file that is not a valid scenario raises ``ScenarioError``,
whose message is one line: ``path:line: what is wrong``."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from pydantic import BaseModel, ValidationError

from coordspec.conformance.suite import yaml_lines
from coordspec.conformance.suite.scenario import (
    CLIENT,
    REQUEST_STEPS,
    Await,
    AwaitStep,
    CoordinatorEvent,
    CoordinatorStep,
    ExpectationError,
    FailNextWrite,
    FailNextWriteStep,
    Fault,
    FaultStep,
    Header,
    NewMetadataImage,
    NewMetadataImageStep,
    OffsetFetchStep,
    RecordSpec,
    RequestStep,
    ResolveRegularExpressions,
    ResolveRegularExpressionsStep,
    Scenario,
    Sleep,
    SleepStep,
    WriteTxnMarker,
    WriteTxnMarkerStep,
    parse_expectation,
)
from coordspec.conformance.suite.target import CATALOG_TOPICS
from coordspec.conformance.suite.versions import parse_range
from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.requests import VERSIONS

SCENARIO_DIR = Path(__file__).resolve().parent.parent / "scenarios"
# The coordinator: step each one must follow; a scenario starts with the group's partition
# loaded (as after LoadGroup).
_FOLLOWS = {
    "ResignCoordinator": "LoadGroup",
    "BecomeCoordinator": "ResignCoordinator",
    "LoadGroup": "BecomeCoordinator",
}
# Steps a broker that does not serve the group cannot take in the model: faults and markers
# act on its coordinator, and its host does not answer TxnOffsetCommit.
_SERVED_ONLY = {
    "fault",
    "fail_next_write",
    "write_txn_marker",
    "TxnOffsetCommit",
    "resolve_regular_expressions",
}


class ScenarioError(ValueError):
    """A scenario file is invalid. ``str()`` is the one line to show a user."""

    def __init__(self, path: Path, line: int, message: str) -> None:
        super().__init__(f"{_display(path)}{f':{line}' if line else ''}: {message}")
        self.path = path
        self.line = line


def _display(path: Path) -> str:
    try:
        return str(path.resolve().relative_to(Path.cwd()))
    except ValueError:
        return str(path)


def discover(paths: Iterable[Path] = ()) -> list[Path]:
    """Scenario files: the given files, and the ``*.yaml`` under the given directories
    (default: the bundled catalog), sorted by name."""
    paths = list(paths) or [SCENARIO_DIR]
    found: list[Path] = []
    for path in paths:
        if path.is_dir():
            inside = sorted(path.rglob("*.yaml"))
            if not inside:
                raise ScenarioError(path, 0, "no scenario files (*.yaml) in this directory")
            found.extend(inside)
        elif path.exists():
            found.append(path)
        else:
            raise ScenarioError(path, 0, "no such file or directory")
    return found


def load_all(paths: Iterable[Path] = ()) -> list[Scenario]:
    return [load(path) for path in discover(paths)]


def load(path: Path) -> Scenario:
    try:
        data, lines = yaml_lines.read(path)
    except yaml_lines.YamlError as exc:
        raise ScenarioError(path, exc.line, exc.message) from None
    except (OSError, UnicodeDecodeError) as exc:
        raise ScenarioError(path, 0, f"cannot read: {exc}") from None
    return _Builder(path, lines).scenario(data)


class _Builder:
    def __init__(self, path: Path, lines: dict) -> None:
        self.path = path
        self.lines = lines
        self.coordinator = "LoadGroup"  # the last coordinator: step; LoadGroup: serving
        self.topic_ids = {name: name for name in CATALOG_TOPICS}  # the image's, CG-70
        self.incarnations = dict.fromkeys(CATALOG_TOPICS, 1)  # topics by name so far

    def fail(self, where: tuple, message: str) -> ScenarioError:
        for cut in range(len(where), -1, -1):
            if where[:cut] in self.lines:
                return ScenarioError(self.path, self.lines[where[:cut]], message)
        return ScenarioError(self.path, 1, message)

    def validate(self, model: type[BaseModel], data: object, where: tuple, what: str) -> BaseModel:
        try:
            return model.model_validate(data)
        except ValidationError as exc:
            error = exc.errors()[0]
            loc = tuple(
                p for p in error["loc"] if isinstance(p, int) or p in _keys(data, error["loc"])
            )
            field = ".".join(str(p) for p in loc)
            if error["type"] == "extra_forbidden":
                message = f"unknown field {loc[-1]!r}"
            elif error["type"] == "missing":
                message = f"missing field {error['loc'][-1]!r}"
            else:
                message = (
                    f"{field}: {error['msg'].removeprefix('Value error, ')}"
                    if field
                    else error["msg"].removeprefix("Value error, ")
                )
            raise self.fail((*where, *loc), f"{what}{message}") from None

    def scenario(self, data: object) -> Scenario:
        if not isinstance(data, dict):
            raise self.fail((), "a scenario is a mapping with checks, rules, clients and steps")
        header = self.validate(Header, data, (), "")
        steps, step_lines = [], []
        waiting: dict[str, tuple[str, int]] = {}  # client -> (API, line) of its parked request
        used: set[str] = set()
        for index, raw in enumerate(header.steps):
            where = ("steps", index)
            step = self.step(raw, where, header.clients, waiting)
            steps.append(step)
            step_lines.append(self.lines.get(where, 0))
            if isinstance(step, RequestStep):
                used.add(step.api)
        versions = {}
        for api, spec in header.versions.items():
            if api not in used:
                raise self.fail(("versions", api), f"versions names {api}, which no step sends")
            versions[api] = parse_range(api, spec)
        for api in sorted(used - set(versions)):
            versions[api] = VERSIONS[api]
        for index, step in enumerate(steps):
            if not (isinstance(step, RequestStep) and isinstance(step.fields, OffsetFetchStep)):
                continue
            lowest = step.fields.v if step.fields.v is not None else versions[step.api].start
            if step.fields.groups is not None and lowest < 8:
                raise self.fail(
                    ("steps", index, "groups"),
                    "OffsetFetch: several groups need v8+ "
                    "(versions: {OffsetFetch: 8+}, or v: 8 on the step)",
                )
        return Scenario(
            name=self.path.stem,
            path=self.path,
            checks=" ".join(header.checks.split()),
            rules=tuple(header.rules),
            versions=versions,
            broker=dict(header.broker),
            clients=tuple(header.clients),
            tags=tuple(header.tags),
            steps=tuple(steps),
            lines=tuple(step_lines),
        )

    def step(self, raw: object, where: tuple, clients: list[str], waiting: dict) -> object:
        if not isinstance(raw, dict) or not raw:
            raise self.fail(
                where,
                "a step is a mapping: '- c1: JoinGroup', '- await: c1', '- sleep: MS' or '- fault: NAME'",
            )
        actors = [k for k in raw if isinstance(k, str) and CLIENT.match(k)]
        if len(actors) > 1:
            raise self.fail(where, f"one client per step, got {', '.join(actors)}")
        kind = raw[actors[0]] if actors else next(iter(raw))
        if self.coordinator != "LoadGroup" and kind in _SERVED_ONLY:
            raise self.fail(
                where,
                f"{kind}: the broker is not serving the group after coordinator: "
                f"{self.coordinator}; load it first (coordinator: LoadGroup)",
            )
        if actors:
            return self.request(raw, actors[0], where, clients, waiting)
        if "await" in raw:
            parsed = self.validate(AwaitStep, raw, where, "await: ")
            client = parsed.await_
            if client not in waiting:
                raise self.fail(
                    (*where, "await"),
                    f"await: {client} has no parked request (a request whose expect is 'parked')",
                )
            api, _ = waiting[client]
            expect, records = self.expectation(api, parsed.expect, where)
            if expect != "parked":
                del waiting[client]
            return Await(client, api, parsed.within, expect, parsed.rule, records)
        if "sleep" in raw:
            return Sleep(self.validate(SleepStep, raw, where, "sleep: ").sleep)
        if "coordinator" in raw:
            return self.coordinator_event(raw, where, waiting)
        if "fault" in raw:
            waiting.clear()  # requests in flight are lost with their connections
            return Fault(self.validate(FaultStep, raw, where, "fault: ").fault)
        if "fail_next_write" in raw:
            step = self.validate(FailNextWriteStep, raw, where, "fail_next_write: ")
            return FailNextWrite(ErrorCode[step.fail_next_write])
        if "write_txn_marker" in raw:
            marker = self.validate(WriteTxnMarkerStep, raw, where, "write_txn_marker: ")
            m = marker.write_txn_marker
            return WriteTxnMarker(m.producer_id, m.result)
        if "resolve_regular_expressions" in raw:
            self.validate(
                ResolveRegularExpressionsStep, raw, where, "resolve_regular_expressions: "
            )
            return ResolveRegularExpressions()
        if "new_metadata_image" in raw:
            image = self.validate(NewMetadataImageStep, raw, where, "new_metadata_image: ")
            return self.metadata_image(dict(image.new_metadata_image))
        raise self.fail(
            where,
            "a step starts with a client (c1: ...), await, sleep, fault, fail_next_write, "
            "write_txn_marker, coordinator, resolve_regular_expressions or new_metadata_image; "
            f"got {', '.join(map(str, raw))}",
        )

    def coordinator_event(self, raw: dict, where: tuple, waiting: dict) -> CoordinatorEvent:
        event = self.validate(CoordinatorStep, raw, where, "coordinator: ").coordinator
        if self.coordinator != _FOLLOWS[event]:
            raise self.fail(
                where,
                f"coordinator: {event} must follow {_FOLLOWS[event]}, not {self.coordinator} "
                "(the order is ResignCoordinator, BecomeCoordinator, LoadGroup)",
            )
        if event == "LoadGroup" and waiting:
            client = next(iter(waiting))
            raise self.fail(
                where,
                f"coordinator: LoadGroup while {client}'s {waiting[client][0]} is parked; "
                f"await it first",
            )
        self.coordinator = event
        return CoordinatorEvent(event)

    def metadata_image(self, topics: dict[str, int]) -> NewMetadataImage:
        """A topic keeps its id while it exists; one created again gets ``name~N``."""
        ids = {}
        for name in topics:
            if name not in self.topic_ids:
                self.incarnations[name] = self.incarnations.get(name, 0) + 1
                count = self.incarnations[name]
                ids[name] = name if count == 1 else f"{name}~{count}"
            else:
                ids[name] = self.topic_ids[name]
        self.topic_ids = ids
        return NewMetadataImage(topics, dict(ids))

    def request(
        self, raw: dict, client: str, where: tuple, clients: list[str], waiting: dict
    ) -> RequestStep:
        api = raw[client]
        if client not in clients:
            raise self.fail((*where, client), f"client {client} is not listed in clients")
        if api not in REQUEST_STEPS:
            raise self.fail(
                (*where, client),
                f"{client}: {api!r} is not an API (known: {', '.join(REQUEST_STEPS)})",
            )
        if client in waiting:
            other, line = waiting[client]
            raise self.fail(
                where,
                f"{client} still waits for its {other} from line {line}; await it first, or send from another client",
            )
        fields = {k: v for k, v in raw.items() if k != client}
        parsed = self.validate(REQUEST_STEPS[api], fields, where, f"{api}: ")
        if parsed.v is not None and parsed.v not in VERSIONS[api]:
            known = VERSIONS[api]
            raise self.fail(
                (*where, "v"),
                f"{api}: v{parsed.v} is not modelled (v{known.start}-v{known.stop - 1})",
            )
        expect, records = self.expectation(api, parsed.expect, where)
        if expect == "parked":
            waiting[client] = (api, self.lines.get(where, 0))
        return RequestStep(client, api, parsed, expect, records)

    def expectation(self, api: str, raw: object, where: tuple):
        """The expectations of the response, and the records the step writes (or None)."""
        if raw is None:
            return None, None
        records = None
        if isinstance(raw, dict) and "records" in raw:
            raw = dict(raw)
            records = self.records(raw.pop("records"), (*where, "expect", "records"))
        try:
            parsed = parse_expectation(api, raw)
        except ExpectationError as exc:
            raise self.fail(
                (*where, "expect", *((exc.key,) if exc.key else ())), f"{api}: {exc}"
            ) from None
        return parsed, records

    def records(self, raw: object, where: tuple) -> tuple[RecordSpec, ...]:
        if not isinstance(raw, list):
            raise self.fail(where, f"expect.records: expected a list of records, got {raw!r}")
        return tuple(
            self.validate(RecordSpec, item, (*where, i), "expect.records: ")
            for i, item in enumerate(raw)
        )


def _keys(data: object, loc: tuple) -> set:
    """The keys met along ``loc`` in ``data``, to drop pydantic's union tags from a location."""
    keys, node = set(), data
    for part in loc:
        if isinstance(node, dict) and part in node:
            keys.add(part)
            node = node[part]
        elif isinstance(node, list) and isinstance(part, int) and part < len(node):
            node = node[part]
    return keys
