"""Run one scenario at one version plan against a target, checking every step twice:
against the scenario's expectations and against the oracle."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time

from coordspec.conformance.suite.allow import ScenarioTolerance
from coordspec.conformance.suite.broker_settings import named
from coordspec.conformance.suite.build import build, learn
from coordspec.conformance.suite.expect import check, check_records
from coordspec.conformance.suite.oracle import (
    TIMERS_FIRE_ON_TIME,
    TIMING_TOLERANCE_MS,
    Disagreement,
    Oracle,
    OracleOverflow,
)
from coordspec.conformance.suite.results import Failure, RunResult, ToleratedStep
from coordspec.conformance.suite.scenario import (
    Await,
    CoordinatorEvent,
    FailNextWrite,
    Fault,
    NewMetadataImage,
    RequestStep,
    ResolveRegularExpressions,
    Scenario,
    Sleep,
    WriteTxnMarker,
)
from coordspec.conformance.suite.symbols import Symbols, Unbound
from coordspec.conformance.suite.target import Session, Target, TargetError
from coordspec.conformance.trace.format import TraceWriter
from coordspec.reference.errors import InvariantViolation, UsageError
from coordspec.reference.group import json_values
from coordspec.reference.group.config import GroupConfig
from coordspec.reference.group.requests import API_KEYS, Request
from coordspec.reference.group.responses import ListGroupsResponse, Response

LISTEN_AFTER_FAILURE_MS = 30_000
RECORDS_WAIT_S, RECORDS_POLL_S = 5.0, 0.05


class _Stop(Exception):
    """The run cannot go on: its result is already recorded."""


def missing_capability(scenario: Scenario, target: Target) -> str | None:
    """Why the target cannot run the scenario's steps at all, or None."""
    if scenario.uses_faults and not target.supports_faults:
        return f"needs fault hooks ({', '.join(sorted({s.fault for s in scenario.steps if isinstance(s, Fault)}))}), which target {target.name} has not"
    if scenario.fails_writes and not target.fails_writes:
        return f"needs to make the coordinator's writes fail (fail_next_write), which target {target.name} cannot"
    if scenario.uses_transactions and not target.completes_transactions:
        return f"needs to act as the transaction coordinator (TxnOffsetCommit, write_txn_marker), which target {target.name} does not let it"
    if scenario.moves_coordinator and not (target.supports_faults and target.moves_coordinator):
        return f"needs to resign, become and load the group's coordinator step by step (coordinator: ...), which target {target.name} cannot"
    if scenario.drives_metadata and not (target.supports_faults and target.drives_metadata):
        return f"needs to change the broker's topics or run its regex resolution (new_metadata_image, resolve_regular_expressions), which target {target.name} cannot"
    if scenario.expects_records and not target.shows_records:
        return f"needs the records the coordinator writes (expect.records), which target {target.name} does not show"
    return None


def config_for(scenario: Scenario, target: Target) -> GroupConfig | str:
    """The broker settings a run uses, or why the target cannot run the scenario."""
    missing = missing_capability(scenario, target)
    if missing is not None:
        return missing
    wanted = dataclasses.replace(target.config, **scenario.broker)
    if target.configurable:
        return wanted
    differ = [f for f in scenario.broker if getattr(target.config, f) != getattr(wanted, f)]
    if differ:
        needed = named(wanted, differ)
        return (
            f"needs broker settings {', '.join(needed)} (target: {', '.join(named(target.config, differ))}); "
            f"if the broker has them, run with {' '.join(f'--broker-setting {n}' for n in needed)}"
        )
    return target.config


def result_of(scenario: Scenario, plan: dict[str, int], group_id: str, **outcome) -> RunResult:
    """A run's result, before it ends (``outcome``: a status and reason it already has)."""
    return RunResult(
        scenario.name,
        str(scenario.path),
        scenario.checks,
        scenario.rules,
        plan,
        group_id,
        steps_total=len(scenario.steps),
        **outcome,
    )


async def run_one(
    scenario: Scenario,
    plan: dict[str, int],
    target: Target,
    group_id: str,
    run_id: str,
    trace: TraceWriter,
    timing_tolerance_ms: int = TIMING_TOLERANCE_MS,
    tolerance: ScenarioTolerance | None = None,
    listen_after_failure_ms: int = LISTEN_AFTER_FAILURE_MS,
) -> RunResult:
    """``timing_tolerance_ms``: GM-36's, see the oracle. ``tolerance``: the ``--allow``
    entries the oracle accepts as the run goes. ``listen_after_failure_ms``: when a run
    fails because the broker did not answer a request, how long after sending it the runner
    still waits for the answer, to report whether and when it came."""
    result = result_of(scenario, plan, group_id)
    config = config_for(scenario, target)
    if isinstance(config, str):
        result.status, result.reason = "not_run", config
        return result
    started = time.perf_counter()
    try:
        session = await target.open(group_id, config, faults=scenario.uses_faults)
    except TargetError as exc:
        result.status, result.reason = "error", str(exc)
        return result
    try:
        oracle = Oracle(
            config,
            target.latency_ms,
            topics=target.partitions,
            timing_tolerance_ms=timing_tolerance_ms,
            tolerance=tolerance,
        )
        await _Run(
            scenario,
            plan,
            target,
            session,
            oracle,
            run_id,
            trace,
            result,
            tolerance,
            listen_after_failure_ms,
        ).steps()
    finally:
        await session.close()
        result.duration_s = time.perf_counter() - started
    return result


class _Run:
    def __init__(
        self,
        scenario: Scenario,
        plan: dict[str, int],
        target: Target,
        session: Session,
        oracle: Oracle,
        run_id: str,
        trace: TraceWriter,
        result: RunResult,
        tolerance: ScenarioTolerance | None,
        listen_ms: int = LISTEN_AFTER_FAILURE_MS,
    ) -> None:
        self.scenario, self.plan, self.target, self.session = scenario, plan, target, session
        self.run_id, self.trace, self.result, self.config = run_id, trace, result, oracle.config
        self.symbols = Symbols(result.group_id, scenario.clients)
        self.oracle = oracle
        self.in_flight: dict[str, Request] = {}  # client -> its request awaiting a reply
        self.sent: dict[str, Request] = {}  # client -> its last request
        self.request_ids = 0
        self.tolerance = tolerance
        self.listen_ms = listen_ms
        self.silent: str | None = None  # the client whose unanswered request failed the run

    async def steps(self) -> None:
        self.record(kind="topics", topics=dict(self.target.partitions))  # the oracle's, GM-56
        for index, step in enumerate(self.scenario.steps):
            try:
                await self.step(index, step)
            except _Stop:
                if self.silent is not None:
                    await self.listen(self.silent)
                return
            except TargetError as exc:
                with contextlib.suppress(_Stop):  # fail() records the failure and stops the run
                    self.fail(
                        index,
                        exc.kind,
                        str(exc),
                        request=exc.request,
                        raw_response=exc.raw_response,
                        decode_offset=exc.decode_offset,
                    )
                return
            except (OracleOverflow, InvariantViolation, UsageError) as exc:
                self.result.status, self.result.reason = (
                    "error",
                    f"step {index + 1} (line {self.scenario.lines[index]}): {exc}",
                )
                return
            self.result.steps_run += 1

    async def step(self, index: int, step) -> None:
        expected = getattr(step, "records", None)
        if expected is not None:
            await self.session.written()  # what the step writes is counted from here
        await self.take(index, step)
        if expected is not None:
            written = await self.session.written()
            # Kafka may answer before its write is committed (a new group's JoinGroup answers
            # MEMBER_ID_REQUIRED at once): on a real clock the records expected are waited
            # for a while, as a cluster's followers replicate them.
            deadline = time.monotonic() + RECORDS_WAIT_S
            while (
                len(written) < len(expected)
                and self.target.clock == "real"
                and time.monotonic() < deadline
            ):
                await asyncio.sleep(RECORDS_POLL_S)
                written += await self.session.written()
            if problem := check_records(expected, written, self.symbols):
                self.fail(index, "expectation", problem, request=self.sent[step.client])

    async def take(self, index: int, step) -> None:
        if isinstance(step, RequestStep):
            await self.request(index, step)
        elif isinstance(step, Await):
            if step.expect == "parked":
                got = await self.session.receive(step.client, step.within_ms)
                self.still_parked(
                    index,
                    step.client,
                    got,
                    f"expected no reply within {step.within_ms} ms; the broker answered",
                )
            else:
                # GM-36 lets an answer come up to the timing tolerance late: silence is
                # only silence once that has passed too, after the await's window or, if
                # later, after the reference's own answer.
                late_ms = self.target.latency_ms + self.oracle.timing_tolerance_ms
                got = await self.session.receive(step.client, step.within_ms + late_ms)
                due = None if got else self.oracle.answered_by(step.client, self.session.now_ms())
                if due is not None and due + late_ms > self.session.now_ms():
                    got = await self.session.receive(
                        step.client, due + late_ms - self.session.now_ms()
                    )
                self.answered(
                    index, step.client, got, step.expect, f"no reply within {step.within_ms} ms"
                )
        elif isinstance(step, Sleep):
            await self.session.sleep(step.ms)
            self.record(kind="time", advance_ms=step.ms)
            self.oracle.advance(self.session.now_ms())
        elif isinstance(step, FailNextWrite):
            assert self.session.faults is not None  # config_for: the target fails writes
            at_ms = self.session.now_ms()
            await self.session.faults.fail_next_write(step.error)
            self.record(kind="fault", fault="fail_next_write", error=step.error.name)
            self.oracle.fail_next_write(step.error, at_ms)
        elif isinstance(step, WriteTxnMarker):
            assert self.session.faults is not None  # config_for: the target takes markers
            at_ms = self.session.now_ms()
            group_id = self.result.group_id
            await self.session.faults.write_txn_marker(group_id, step.producer_id, step.result)
            self.record(kind="txn_marker", producer_id=step.producer_id, result=step.result)
            self.oracle.write_txn_marker(group_id, step.producer_id, step.result, at_ms)
        elif isinstance(step, CoordinatorEvent):
            assert self.session.faults is not None  # config_for: the target moves its coordinator
            at_ms = self.session.now_ms()
            await getattr(self.session.faults, step.fault)()
            self.record(kind="fault", fault=step.fault)
            if step.event == "LoadGroup":
                self.oracle.fault(at_ms)  # the loader allows no request in flight here
            else:
                getattr(self.oracle, step.fault)(at_ms)
        elif isinstance(step, ResolveRegularExpressions):
            assert self.session.faults is not None  # config_for: the target drives metadata
            at_ms = self.session.now_ms()
            await self.session.faults.resolve_regular_expressions(self.result.group_id)
            self.record(kind="resolve_regular_expressions")
            self.oracle.resolve_regular_expressions(self.result.group_id, at_ms)
        elif isinstance(step, NewMetadataImage):
            assert self.session.faults is not None  # config_for: the target drives metadata
            at_ms = self.session.now_ms()
            await self.session.faults.new_metadata_image(step.topics, step.topic_ids)
            self.record(
                kind="metadata_image", topics=dict(step.topics), topic_ids=dict(step.topic_ids)
            )
            self.oracle.new_metadata_image(step.topics, step.topic_ids, at_ms)
        elif isinstance(step, Fault):
            # On a real broker or cluster the hook takes time: the coordinator stops when it
            # begins and its successor has loaded the group when it returns.
            down_ms = self.session.now_ms()
            await getattr(self.session.faults, step.fault)()
            self.record(kind="fault", fault=step.fault, down_ms=down_ms)
            self.in_flight.clear()
            self.oracle.fault(down_ms, self.session.now_ms())

    async def request(self, index: int, step: RequestStep) -> None:
        version = step.fields.v if step.fields.v is not None else self.plan[step.api]
        self.request_ids += 1
        try:
            request = build(step, version, self.request_ids, self.session.now_ms(), self.symbols)
        except (Unbound, UsageError) as exc:
            self.fail(index, "scenario", str(exc), api=step.api, version=version)
        self.record(kind="request", client=step.client, **self.message(request))
        await self.session.send(step.client, request)
        self.oracle.request(step.client, request)
        self.in_flight[step.client] = self.sent[step.client] = request
        if step.expect == "parked":
            got = await self.session.receive(step.client, self.target.settle_ms)
            self.still_parked(
                index,
                step.client,
                got,
                "expected the request to park; the broker answered it at once",
            )
            return
        got = await self.session.receive(step.client, self.target.answer_ms)
        self.answered(
            index, step.client, got, step.expect, "expected a reply at once; the request is parked"
        )

    def still_parked(
        self, index: int, client: str, got: tuple[Response, int] | None, answered: str
    ) -> None:
        request = self.in_flight[client]
        if got is None:
            self.silent = client  # if the oracle fails the silence
            self.check_oracle(
                index, self.oracle.silence(client, self.session.now_ms()), request, None
            )
            self.silent = None
            return
        self.answered(index, client, got, None, "")
        self.fail(index, "expectation", answered, request=request, response=got[0])

    def answered(
        self, index: int, client: str, got: tuple[Response, int] | None, expect, silent: str
    ) -> None:
        request = self.in_flight[client]
        if got is None:
            self.silent = client
            self.check_oracle(
                index, self.oracle.silence(client, self.session.now_ms()), request, None
            )
            self.fail(index, "expectation", silent, request=request)
        response, at_ms = got
        if isinstance(response, ListGroupsResponse):  # other runs' groups share a real broker
            response = dataclasses.replace(
                response,
                groups=tuple(
                    g for g in response.groups if g.group_id.startswith(self.result.group_id)
                ),
            )
        self.record(kind="response", client=client, **self.message(request, response), t_ms=at_ms)
        del self.in_flight[client]
        self.check_oracle(index, self.oracle.response(client, response, at_ms), request, response)
        self.note_tolerated(index)
        learn(self.symbols.clients[client], self.symbols, response)
        self.result.exercised.add((request.api, request.api_version))
        accepted = frozenset(
            t.field.rsplit(".", 1)[-1] for t in self.result.tolerated if t.step == index + 1
        )
        if expect and (
            problem := check(
                request.api,
                request.api_version,
                expect,
                response,
                self.symbols,
                accepted,
                getattr(request, "group_id", None),
            )
        ):
            self.fail(index, "expectation", problem, request=request, response=response)

    async def listen(self, client: str) -> None:
        """The run failed because ``client``'s request went unanswered: wait for the answer
        until ``listen_ms`` after the request was sent, and add what came to the failure.
        A broker whose faults hit every run runs fault scenarios one after another: there
        the run waits no longer than it already has, so that the next fault is not delayed."""
        request, failure = self.in_flight[client], self.result.failure
        bound = self.listen_ms
        if self.scenario.uses_faults and self.target.faults_are_shared:
            bound = min(bound, self.session.now_ms() - request.now_ms)
        ended = ""
        try:
            got = await self.session.receive(
                client, max(0, request.now_ms + bound - self.session.now_ms())
            )
        except TargetError as exc:
            got, ended = None, f" (listening ended: {exc})"
        if got is None:
            note = f"; it had not answered {bound / 1000:g} s after the request{ended}"
            late = {"listened_ms": bound}
        else:
            response, at_ms = got
            self.record(
                kind="response", client=client, **self.message(request, response), t_ms=at_ms
            )
            after = at_ms - request.now_ms
            note = f"; the broker answered {after} ms after the request"
            late = {
                "listened_ms": bound,
                "answered_after_ms": after,
                "late_response": json_values.encode(response),
            }
        self.result.failure = dataclasses.replace(failure, message=failure.message + note, **late)
        self.result.reason = self.result.failure.message

    def settings_note(self) -> str:
        """The oracle accepted what the expectation did not. If the broker runs other settings
        than Kafka's defaults, the scenario may simply assume the defaults: say so."""
        if self.target.configurable:
            return ""
        differ = named(
            self.config,
            (
                f.name
                for f in dataclasses.fields(GroupConfig)
                if getattr(self.config, f.name) != getattr(GroupConfig(), f.name)
                and f.name not in self.scenario.broker
            ),
        )
        if not differ:
            return ""
        return f" (the reference accepts the response with this broker's settings {', '.join(differ)}: the scenario may assume Kafka's defaults)"

    def note_tolerated(self, index: int) -> None:
        """Keep the divergences the oracle accepted for ``--allow`` entries, with the entry's reason."""
        for t in self.oracle.tolerated:
            entry = self.tolerance.entry(t.api, t.version, t.mismatch) if self.tolerance else None
            m = t.mismatch
            self.result.tolerated.append(
                ToleratedStep(
                    index + 1,
                    self.scenario.lines[index],
                    t.api,
                    t.version,
                    m.field if m else "",
                    m.expected if m else "",
                    m.got if m else "late",
                    t.message,
                    entry.reason if entry else "",
                )
            )
        self.oracle.tolerated.clear()

    def check_oracle(
        self,
        index: int,
        disagreement: Disagreement | None,
        request: Request,
        response: Response | None,
    ) -> None:
        if disagreement is not None and disagreement.kind == "timing":
            late = TIMERS_FIRE_ON_TIME
            self.fail(
                index,
                "timing",
                f"{late.name}: {disagreement.message}",
                request=request,
                response=response,
                rules=(late.rule,),
                how="late",
                cause=disagreement.cause,
            )
        if disagreement is not None:
            m = disagreement.mismatch
            self.fail(
                index,
                "oracle",
                f"the reference does not allow this: {disagreement.message}",
                request=request,
                response=response,
                allowed=disagreement.allowed,
                closest=disagreement.closest,
                how=disagreement.how,
                field=m.field if m else "",
                expected=m.expected if m else "",
                got=m.got if m else "",
                cause=disagreement.cause,
            )

    def fail(
        self,
        index: int,
        kind: str,
        message: str,
        *,
        request: Request | None = None,
        response: Response | None = None,
        allowed: tuple[str, ...] = (),
        closest: dict | None = None,
        api: str | None = None,
        version: int | None = None,
        rules: tuple[str, ...] = (),
        how: str = "",
        field: str = "",
        expected: str = "",
        got: str = "",
        cause: str = "",
        raw_response: str | None = None,
        decode_offset: int | None = None,
    ) -> None:
        """``rules``: broken besides the step's own; ``how`` … ``cause``: see Failure."""
        if kind == "expectation":
            message += self.settings_note()
        failed = ("oracle", "timing", "expectation", "target", "undecodable", "connection")
        self.result.status = "failed" if kind in failed else "error"
        self.result.failure = Failure(
            kind=kind,
            step=index + 1,
            line=self.scenario.lines[index],
            message=message,
            rules=tuple(dict.fromkeys((*rules, *self.scenario.step_rules(index)))),
            api=request.api if request else api,
            api_version=request.api_version if request else version,
            request=json_values.request_fields(request) if request else None,
            response=json_values.encode(response) if response is not None else None,
            allowed=allowed,
            closest=closest,
            how=how,
            field=field,
            expected=expected,
            got=got,
            cause=cause,
            raw_response=raw_response,
            decode_offset=decode_offset,
        )
        self.result.reason = message
        raise _Stop

    def message(self, request: Request, response: Response | None = None) -> dict:
        return {
            "api": request.api,
            "api_key": API_KEYS[request.api],
            "api_version": request.api_version,
            "correlation_id": int(request.request_id),
            "fields": json_values.request_fields(request)
            if response is None
            else json_values.encode(response),
        }

    def record(self, t_ms: int | None = None, **fields) -> None:
        self.trace.write(
            self.run_id,
            self.scenario.name,
            self.result.group_id,
            self.session.now_ms() if t_ms is None else t_ms,
            **fields,
        )
