"""Check the events of one key (a group in one run) against the reference: the one
function both the one-machine checker and the Spark pipeline call.

The events replay in session-time order (then file, then line) through the conformance
oracle, which keeps every state of the reference consistent with the broker's answers so
far and follows the broker's choices where Kafka leaves them open. The first response the
reference does not allow is a violation; the oracle cannot follow a broker past it, so the
rest of the key's events are counted as unchecked.
"""

from __future__ import annotations

import dataclasses
import json
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field

from coordspec.conformance.suite.oracle import (
    TIMERS_FIRE_ON_TIME,
    TIMING_TOLERANCE_MS,
    Oracle,
    OracleOverflow,
)
from coordspec.conformance.suite.unify import TOKEN
from coordspec.conformance.trace.format import (
    FaultRecord,
    PartitionRecord,
    RequestRecord,
    ResponseRecord,
    TimeRecord,
    TxnMarkerRecord,
)
from coordspec.conformance.trace.records import Line, order, parse
from coordspec.conformance.tracecheck import partitions, rules
from coordspec.reference.errors import ErrorCode, InvariantViolation, UsageError
from coordspec.reference.group import GroupConfig

CONTEXT_BEFORE, CONTEXT_AFTER = 4, 2
# How far a writer's clock may run ahead of the broker's (see the oracle's latency_ms): the
# reference target, the simulator and the broker stamp events on the coordinator's own clock.
LATENCY_BY_SOURCE = {"conformance:reference": 0, "broker": 0, "simulate": 0}
DEFAULT_LATENCY_MS = 50


@dataclass(frozen=True)
class Settings:
    """What the replay needs besides the events; plain data, so Spark can ship it."""

    config: dict[str, int] = field(default_factory=dict)  # GroupConfig overrides for every key
    scenarios: dict[str, dict[str, int]] = field(
        default_factory=dict
    )  # scenario name -> its broker: settings
    latency_ms: int | None = None  # None: by the trace's source
    timing_tolerance_ms: int = TIMING_TOLERANCE_MS  # GM-36, beyond latency_ms


@dataclass
class Violation:
    group_id: str
    run: str
    source: str
    scenario: str
    # oracle (the broker's answer is not allowed), timing (allowed, but later than the
    # reference's deadline plus the tolerance), trace (a response with no request), error
    kind: str
    rule: str
    invariant: str
    api: str
    api_version: int
    client: str
    file: str
    line: int
    t_ms: int
    message: str
    allowed: list[str]
    broker_response: str
    context: list[str]
    partition: str = ""  # topic-partition of a partition key ("" for a group)

    def where(self) -> str:
        return f"{self.file}:{self.line}"


@dataclass
class KeyReport:
    group_id: str
    run: str
    events: int = 0
    unchecked: int = 0
    violations: list[Violation] = field(default_factory=list)
    coverage: Counter = field(
        default_factory=Counter
    )  # (kind, name) -> count; kind: rule, state, transition, api


def summary(line: Line, record) -> str:
    """One event in one line, for a violation's context."""
    text = f"{line.path}:{line.number} t={record.t_ms} {record.kind}"
    if isinstance(record, (RequestRecord, ResponseRecord)):
        keep = ("member_id", "generation_id", "error_code", "leader", "group_instance_id")
        shown = {k: v for k, v in record.fields.items() if k in keep and v not in (None, "")}
        if isinstance(record, ResponseRecord) and "error_code" not in shown:
            codes = rules.errors_in(record.fields)
            if codes:
                shown["error_codes"] = sorted(set(codes))
        text += f" {record.client} {record.api} v{record.api_version} #{record.correlation_id} {json.dumps(shown, separators=(',', ':'))}"
    elif isinstance(record, TimeRecord):
        text += f" +{record.advance_ms} ms"
    elif isinstance(record, FaultRecord):
        text += f" {record.fault}"
    elif isinstance(record, TxnMarkerRecord):
        text += f" {record.result} of producer {record.producer_id}"
    elif isinstance(record, PartitionRecord):
        text += f" {record.topic}-{record.partition} {partitions.describe(record)}"
    return text


def check_key(key: str, run: str, lines: Iterable[Line], settings: Settings) -> KeyReport:
    """Replay one key's trace lines (in any order; the key from :func:`~coordspec.conformance.trace.records.quick_key`): a
    group's through the oracle (see the module docstring), a partition's through :mod:`partitions`."""
    # Requests are numbered in the key (their correlation ids are unique only per connection).
    parsed = [(line, *parse(line, i)) for i, line in enumerate(lines)]
    parsed.sort(key=order)
    if partitions.is_partition_key(key):
        report = KeyReport(key, run, events=len(parsed))
        return _check_partition(report, parsed) if parsed else report
    group_id = partitions.group_of(key)
    report = KeyReport(group_id, run, events=len(parsed))
    if not parsed:
        return report
    if (
        not group_id
    ):  # requests about no single group (a broker's ListGroups): nothing to replay them on
        report.unchecked = len(parsed)
        return report
    first = parsed[0][1]
    overrides = {**settings.config}
    if first.source.startswith("conformance:") and first.scenario in settings.scenarios:
        overrides.update(settings.scenarios[first.scenario])
    latency = (
        settings.latency_ms
        if settings.latency_ms is not None
        else LATENCY_BY_SOURCE.get(first.source, DEFAULT_LATENCY_MS)
    )
    coverage = rules.Coverage()
    # The broker's topics, for a run whose writer knew them (GM-56): they hold for the whole
    # run, or until a metadata_image record (CG-70).
    topics = next((r.topics for _, r, _ in parsed if r.kind == "topics"), None)
    oracle = Oracle(
        dataclasses.replace(GroupConfig(), **overrides),
        latency,
        observer=coverage,
        timing_tolerance_ms=settings.timing_tolerance_ms,
        topics=topics,
    )
    open_requests: dict[
        tuple[str, int], tuple[str, object]
    ] = {}  # (client, correlation id) -> (oracle client, request)

    def violate(
        index: int, kind: str, rule: str, invariant: str, message: str, allowed=(), broker=None
    ) -> None:
        line, record, _ = parsed[index]
        message_like = isinstance(record, (RequestRecord, ResponseRecord))
        context = [
            summary(l, r)
            for l, r, _ in parsed[max(0, index - CONTEXT_BEFORE) : index + CONTEXT_AFTER + 1]
        ]
        report.violations.append(
            Violation(
                group_id,
                run,
                record.source,
                record.scenario or "",
                kind,
                rule,
                invariant,
                record.api if message_like else "",
                record.api_version if message_like else -1,
                record.client if message_like else "",
                line.path,
                line.number,
                record.t_ms,
                message,
                [
                    a.replace(TOKEN, "member #") for a in allowed
                ],  # the oracle names unbound choices by placeholder
                json.dumps(broker, sort_keys=True) if broker is not None else "",
                context,
            )
        )
        report.unchecked = len(parsed) - index - 1

    api_versions: Counter[tuple[str, int]] = Counter()  # the requests checked, by API and version
    given = _ids_given(parsed)
    for index, (_, record, message) in enumerate(parsed):
        kind = record.kind  # not isinstance: the records' (pydantic) classes check it slowly
        try:
            if kind == "request":
                client = (
                    f"{record.client}#{record.correlation_id}"  # a client may pipeline requests
                )
                open_requests[(record.client, record.correlation_id)] = (client, message)
                oracle.request(client, message, given.get(index))
                api_versions[(record.api, record.api_version)] += 1
            elif kind == "response":
                opened = open_requests.pop((record.client, record.correlation_id), None)
                if opened is None:
                    violate(
                        index,
                        "trace",
                        rules.API_RULES[record.api],
                        "",
                        f"a response to correlation id {record.correlation_id} of {record.client}, which has no request in flight",
                    )
                    break
                client, request = opened
                disagreement = oracle.response(client, message, record.t_ms)
                if disagreement is not None and disagreement.kind == "timing":
                    late = TIMERS_FIRE_ON_TIME
                    violate(
                        index,
                        "timing",
                        late.rule,
                        late.name,
                        disagreement.message,
                        (),
                        record.fields,
                    )
                    break
                if disagreement is not None:
                    rule, invariant = rules.classify(
                        record.api, request, disagreement.closest, record.fields
                    )
                    if disagreement.closest is None and record.api in ("JoinGroup", "SyncGroup"):
                        rule = _parked_rule(oracle, record.api, group_id)
                    violate(
                        index,
                        "oracle",
                        rule,
                        invariant,
                        f"the reference does not allow this: {disagreement.message}",
                        disagreement.allowed,
                        record.fields,
                    )
                    break
                report.coverage[
                    ("rule", rules.rule_for(record.api, rules.first_error(record.fields), request))
                ] += 1
            elif kind == "time":
                oracle.advance(record.t_ms)
            elif kind == "fault":
                down_ms = getattr(record, "down_ms", None)
                down_ms = record.t_ms if down_ms is None else down_ms
                if record.fault == "pause":
                    oracle.pause(down_ms, record.t_ms)
                elif record.fault == "fail_next_write":
                    oracle.fail_next_write(ErrorCode[record.error], record.t_ms)
                elif record.fault in ("resign_coordinator", "become_coordinator"):
                    getattr(oracle, record.fault)(record.t_ms)
                else:
                    oracle.fault(down_ms, record.t_ms)
                    open_requests.clear()
            elif kind == "txn_marker":
                oracle.write_txn_marker(
                    record.group_id, record.producer_id, record.result, record.t_ms
                )
            elif kind == "resolve_regular_expressions":
                oracle.resolve_regular_expressions(record.group_id, record.t_ms)
            elif kind == "metadata_image":
                oracle.new_metadata_image(record.topics, record.topic_ids, record.t_ms)
        except (OracleOverflow, InvariantViolation, UsageError) as exc:
            violate(index, "error", "", getattr(exc, "invariant", ""), f"the replay stopped: {exc}")
            break
    for (api, version), count in api_versions.items():
        report.coverage[("api", f"{api} v{version}")] += count
    if oracle.hypotheses:  # each hypothesis has its own copy: the first surviving one's
        coverage = oracle.hypotheses[0].coordinator.observer
    for state, count in coverage.states.items():
        report.coverage[("state", state)] += count
    for transition, count in coverage.transitions.items():
        report.coverage[("transition", transition)] += count
        report.coverage[("rule", transition.rsplit(" ", 1)[1])] += count
    return report


def _ids_given(parsed: list) -> dict[int, str]:
    """The member id the broker's answer gave each JoinGroup that came without one, by the
    request's index: the oracle's reference names the new member so from the start, instead
    of by a placeholder that the answer binds and every later request is translated into."""
    joining: dict[tuple[str, int], int] = {}  # (client, correlation id) -> request index
    given: dict[int, str] = {}
    for index, (_, record, message) in enumerate(parsed):
        kind = record.kind
        if kind == "request":
            if record.api == "JoinGroup" and not message.member_id:
                joining[(record.client, record.correlation_id)] = index
            elif joining:  # a correlation id used again answers this request, not the join
                joining.pop((record.client, record.correlation_id), None)
        elif kind == "response" and joining:
            asked = joining.pop((record.client, record.correlation_id), None)
            member_id = record.fields.get("member_id") if asked is not None else None
            if isinstance(member_id, str) and member_id:
                given[asked] = member_id
    return given


def _check_partition(report: KeyReport, parsed: list) -> KeyReport:
    """A partition key: the replication invariants over its records, reported as a group's
    violations are (group_id empty, ``partition`` naming it)."""
    found, exercised = partitions.replay([record for _, record, _ in parsed])
    for rule in exercised:
        report.coverage[("rule", rule)] += 1
    report.coverage[("partition", "partitions checked")] += 1
    if found is not None:
        line, record, _ = parsed[found.index]
        context = [
            summary(l, r)
            for l, r, _ in parsed[
                max(0, found.index - CONTEXT_BEFORE) : found.index + CONTEXT_AFTER + 1
            ]
        ]
        report.violations.append(
            Violation(
                "",
                report.run,
                record.source,
                record.scenario or "",
                "partition",
                found.rule,
                found.invariant,
                record.event,
                -1,
                f"broker {record.broker}",
                line.path,
                line.number,
                record.t_ms,
                found.message,
                [],
                "",
                context,
                partition=f"{record.topic}-{record.partition}",
            )
        )
        report.unchecked = len(parsed) - found.index - 1
    return report


def _parked_rule(oracle: Oracle, api: str, group_id: str) -> str:
    """The broker answered a request the reference parks: which rule parks it."""
    if api == "SyncGroup":
        return "GM-21"
    delayed = any(
        (g := h.coordinator.groups.get(group_id)) is not None and g.in_initial_delay
        for h in oracle.hypotheses
    )
    return "GM-10" if delayed else "GM-13"
