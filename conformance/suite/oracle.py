"""The oracle: the reference follows a broker and accepts its responses if it allows them.

Kafka leaves some outcomes open: the member ids it hands out, which member leads after the
leader goes, which protocol wins a tie. The oracle keeps every state of the reference that
is consistent with what the broker has answered so far (a *hypothesis* each). Each input
is applied to every hypothesis once per way the reference could choose
(:class:`ExploringChoices` enumerates them), so a hypothesis splits where a choice is
open; a response from the broker then keeps only the hypotheses whose reference gave that
response (member ids unified, see :mod:`unify`). That is "accept the response as one of the
allowed outcomes, then follow the outcome the broker chose". When no hypothesis is left,
the broker did something the reference never allows: a disagreement, reported with what
the reference would have answered instead.

Time comes from the target: the oracle's reference sees every input at the time the
session says it happened, and timers fire at their own deadlines in between. Over a
network a request reaches the broker up to ``latency_ms`` after it was sent, so the
broker's timers run up to that much later than the reference's: a timer due within
``latency_ms`` of a request, on either side, may fire before or after it, and the oracle
allows both. It fires a timer for certain only once it is ``latency_ms`` overdue, and
branches on the ones in the window when a request or a response arrives.

The oracle also knows when the reference answered: at a request's arrival, or at the
deadline of the timer that answered it. A broker's answer that the reference allows but
that comes later than that by more than the tolerance (``timing_tolerance_ms`` plus
``latency_ms``, in every hypothesis that allows it) is a *timing* divergence (GM-36,
``TimersFireOnTime``). An answer that waits on a write is not timed: the reference does not
bound how long a replicated write takes.

A :class:`Tolerance` (``--allow`` entries at field level) may accept a difference in a field,
or a late answer: the oracle then follows the broker as if it had answered as the reference
does, notes the difference in ``tolerated``, and the run goes on.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal, Protocol

from coordspec.conformance.suite.unify import TOKEN, Binding, Mismatch, unify
from coordspec.conformance.suite.unserved import Unserved
from coordspec.reference.errors import ErrorCode, Invariant
from coordspec.reference.frozen import quicken
from coordspec.reference.group import (
    FailNextWrite,
    GroupConfig,
    GroupCoordinator,
    LoadGroups,
    Tick,
    UnloadGroups,
    WriteTxnMarker,
    json_values,
)
from coordspec.reference.group.coordinator import Observer
from coordspec.reference.group.effects import AppendRecords, Reply
from coordspec.reference.group.records import Record
from coordspec.reference.group.requests import (
    Event,
    NewMetadataImage,
    Request,
    ResolveRegularExpressions,
)
from coordspec.reference.group.responses import Response

MAX_HYPOTHESES = 256
# GM-36: how much later than the reference's deadline a broker may answer, beyond the
# latency window. One second: a loaded machine's scheduling, far below the group timers
# (3 s initial delay, 10 s and up for sessions and rebalances) that a late broker misses.
TIMING_TOLERANCE_MS = 1_000
# The property a late answer breaks: a broker's, against the reference's clock, not one of the
# reference's own (reference/group/invariants.py), and not in TLA+, whose specs have no time.
TIMERS_FIRE_ON_TIME = Invariant(
    "TimersFireOnTime",
    "GM-36",
    "a broker answers no later than the reference's deadline plus the timing tolerance",
    tla=False,
)
# What each timer of the coordinator waits for, by its kind (reference/group/coordinator.py).
_TIMER_SETTINGS = {
    "CompleteJoin": "the rebalance timeout",
    "ExpireSession": "the member's session timeout",
    "ExpirePendingSync": "the rebalance timeout",
    "ExpireOffsets": "offsets.retention.check.interval.ms",
}


# What made the reference answer, told only when a report asks (see _cause): a text, the
# event, or the timers a Tick fired as (kind, setting, deadline).
Why = str | Event | tuple[tuple[str, str, int], ...]


class Tolerance(Protocol):
    """Differences the user accepts (``--allow``): in a field, or in when an answer came."""

    def field(self, api: str, version: int, mismatch: Mismatch) -> bool: ...

    def timing(self, api: str, version: int) -> bool: ...


@dataclass(frozen=True)
class Tolerated:
    """A difference a :class:`Tolerance` accepted: a field's, or an answer's lateness."""

    api: str
    version: int
    mismatch: Mismatch | None  # None: the answer was late
    message: str


class CopyingObserver(Observer, Protocol):
    """An observer of the reference's steps that each hypothesis can have its own copy of."""

    def copy(self) -> CopyingObserver: ...


class OracleOverflow(RuntimeError):
    """Too many outcomes stay open to follow; the scenario should pin more of them down."""


class ExploringChoices:
    """Choices that follow a script of option indexes and then take the first option,
    recording how many options each unscripted choice had, so siblings can be explored."""

    def __init__(self) -> None:
        self.issued = 0
        self.script: tuple[int, ...] = ()
        self.position = 0
        self.arities: list[int] = []
        self.made: list[str] = []
        self.chose = False  # whether this step picked among several options
        # The broker's id for a member this step names, when known (see Oracle.request); and
        # whether this step named it so.
        self.given: str | None = None
        self.gave = False

    def copy(self) -> ExploringChoices:
        other = ExploringChoices()
        other.issued, other.script, other.position = self.issued, self.script, self.position
        other.arities, other.made = list(self.arities), list(self.made)
        other.chose, other.given, other.gave = self.chose, self.given, self.gave
        return other

    def start(self, script: tuple[int, ...], given: str | None = None) -> None:
        self.script, self.position, self.arities, self.chose = script, 0, [], False
        self.given, self.gave = given, False

    def member_id(self, prefix: str) -> str:
        self.issued += 1  # numbered alike either way: the placeholders after it stay the same
        if self.given is not None and not self.gave:
            self.gave = True
            return self.given
        return f"{TOKEN}{self.issued}"

    def _pick(self, what: str, options: Sequence[str]) -> str:
        options = list(options)
        if self.position < len(self.script):
            index = self.script[self.position]
        else:
            index = 0
            self.arities.append(len(options))
        self.position += 1
        if len(options) > 1:
            self.made.append(f"{what} {options[index]}")
            self.chose = True
        return options[index]

    def leader(self, candidates: Sequence[str]) -> str:
        return self._pick("leader", candidates)

    def protocol(self, tied: Sequence[str]) -> str:
        return self._pick("protocol", tied)


@dataclass
class Hypothesis:
    coordinator: GroupCoordinator
    binding: Binding = field(default_factory=Binding)
    replies: dict[int | str, Response] = field(
        default_factory=dict
    )  # answered, not yet seen from the broker
    log: list[Record] = field(default_factory=list)
    # What a crash keeps of the log: ``durable`` records surely (loaded, or written before an
    # answer the broker gave that waits on its write), and any prefix up to a write's end after.
    durable: int = 0
    write_ends: dict[int, int] = field(
        default_factory=dict
    )  # append id (this coordinator's) -> log length after it, past durable
    reply_needs: dict[int | str, int] = field(
        default_factory=dict
    )  # request id -> log length its reply waits on
    deadlines: dict[int | str, Deadline] = field(
        default_factory=dict
    )  # request id -> when the reference gave its reply in ``replies`` (not one after a write)
    # A copy of the coordinator from a few steps back and the events it has taken since:
    # the coordinator as it was before any of them, rebuilt when needed (see take()).
    checkpoint: GroupCoordinator | None = None
    since: list[tuple[Event, str | None]] = field(default_factory=list)  # with their given ids

    @property
    def choices(self) -> ExploringChoices:
        return self.coordinator.choices

    def copy(self) -> Hypothesis:
        """An independent copy; the log's records (frozen) are shared."""
        return Hypothesis(
            _copy_coordinator(self.coordinator),
            self.binding.copy(),
            dict(self.replies),
            list(self.log),
            self.durable,
            dict(self.write_ends),
            dict(self.reply_needs),
            dict(self.deadlines),
        )

    def same_future(self, other: Hypothesis) -> bool:
        """Whether ``other`` allows and answers exactly what this one does, whatever comes:
        the same coordinator state, log, pending replies and writes, and bound ids. What only
        reports show (the choices that led here, the coverage seen) may differ."""
        return (
            self.log == other.log
            and self.durable == other.durable
            and self.write_ends == other.write_ends
            and self.reply_needs == other.reply_needs
            and self.replies == other.replies
            and self.binding.ids == other.binding.ids
            and self.binding.named == other.binding.named
            and self.choices.issued == other.choices.issued  # numbers the next member ids
            and self.deadlines.keys() == other.deadlines.keys()
            and all(d.same(other.deadlines[r]) for r, d in self.deadlines.items())
            and self.coordinator.same_state(other.coordinator)
        )

    def fingerprint(self) -> tuple:
        """A few of what :meth:`same_future` compares, cheap to take: most hypotheses that
        differ (a write lost in a crash, another leader chosen) differ here already."""
        c = self.coordinator
        return (
            c.now_ms,
            len(self.log),
            self.durable,
            c.appends_issued,
            self.choices.issued,
            len(self.replies),
            tuple([(g.generation_id, g.leader_id) for g in c.groups.values()]),
        )

    def restart(self, coordinator: GroupCoordinator) -> None:
        """A new coordinator in place of this one (a restart); what it takes starts afresh."""
        self.coordinator, self.checkpoint, self.since = coordinator, None, []

    def given(self, member_id: str | None) -> str | None:
        """``member_id``, if this hypothesis has not seen the broker give it out already."""
        binding = self.binding
        if member_id is None or member_id in binding.placeholders or member_id in binding.named:
            return None
        return member_id

    def take(self, make_event, record, given: str | None = None) -> bool:
        """Apply the event from ``make_event`` to this hypothesis itself, if the reference
        has only one way to take it, and ``record`` its effects; True if so. Otherwise (a
        choice had several options) False, with the coordinator as it was before the event.

        Most events leave the reference no choice, and copying a hypothesis costs more than
        the step itself. But whether a step chooses shows only once it has run; so the
        coordinator of ``CHECKPOINT_EVERY`` steps back is kept, and where a step did
        choose, the events since it are replayed on it: the reference is deterministic
        given its state, the event and the choices (here, the first option each time).
        """
        coordinator = self.coordinator
        if self.checkpoint is None or len(self.since) >= CHECKPOINT_EVERY:
            self.checkpoint, self.since = _copy_coordinator(coordinator), []
        choices = coordinator.choices
        if given is not None:
            given = self.given(given)
        choices.start((), given)
        event = make_event(self)
        cause = _cause(coordinator, event)
        effects = coordinator.handle(event)
        if choices.chose:
            self.coordinator, self.checkpoint = self.checkpoint, None
            for earlier, named in self.since:
                self.choices.start((), named)
                self.coordinator.handle(earlier)
            return False
        self.since.append((event, given))
        record(self, event, cause, effects)
        return True


# How many steps a hypothesis takes in place between copies of its coordinator (see
# Hypothesis.take): a copy costs about three steps; a replay, rare, at most this many.
CHECKPOINT_EVERY = 32


def _copy_coordinator(coordinator: GroupCoordinator) -> GroupCoordinator:
    observer = coordinator.observer
    return coordinator.copy(
        coordinator.choices.copy(), observer.copy() if observer is not None else None
    )


@dataclass(
    frozen=True, eq=False, slots=True
)  # compared by identity: ``None in deadlines`` stays quick
class Deadline:
    """When the reference answered a request, and what made it answer then."""

    at_ms: int
    # What the cause is told from when asked (most never are): a text, the request (or other
    # event), or the timers a Tick fired (see _cause).
    why: Why

    def same(self, other: Deadline) -> bool:
        return self.at_ms == other.at_ms and self.why == other.why

    @property
    def cause(self) -> str:
        """ "the Heartbeat that arrived at t=…", "CompleteJoin at the end of …, due at t=…" """
        return _told(self.why)


@dataclass(frozen=True)
class Disagreement:
    """The broker's answer (or silence) is not an outcome the reference allows (``outcome``),
    or it is, but came later than the reference's deadline plus the tolerance (``timing``)."""

    message: str
    allowed: tuple[str, ...]  # what the reference would have done instead, one line each
    closest: dict | None = None  # the allowed response nearest to the broker's, for a diff
    kind: Literal["outcome", "timing"] = "outcome"
    # What differs, for grouping failures: the field (an outcome), or None where the broker
    # answered and the reference waits, or the broker is silent and the reference answers.
    mismatch: Mismatch | None = None
    # Outcomes only: "differs" (both answered), "early" (the broker answered what the reference
    # answers only later, at a timer), "unexpected" (the broker answered; the reference waits
    # and would not answer so), "silent" (the broker has not answered; the reference has).
    how: Literal["differs", "early", "unexpected", "silent"] = "differs"
    # Timing, silence and early answers: what made (or makes) the reference answer, without
    # its times ("CompleteJoin at the end of group.initial.rebalance.delay.ms").
    cause: str = ""


class Oracle:
    """The reference, following a broker. ``latency_ms``: see the module docstring."""

    def __init__(
        self,
        config: GroupConfig,
        latency_ms: int = 0,
        observer: CopyingObserver | None = None,
        timing_tolerance_ms: int = TIMING_TOLERANCE_MS,
        tolerance: Tolerance | None = None,
        topics: Mapping[str, int] | None = None,
    ) -> None:
        """``observer`` watches the reference's steps (each hypothesis has a copy of it, kept
        across coordinator restarts). ``topics``: the broker's, when known (GroupCoordinator)."""
        self.config = config
        self.topics = topics
        self.topic_ids: Mapping[str, str] = {}  # by name, when not the name (CG-70)
        self.latency_ms = latency_ms
        self.timing_tolerance_ms = timing_tolerance_ms
        self.tolerance = tolerance
        self.tolerated: list[Tolerated] = []  # the caller takes them as they come
        self.hypotheses = [
            Hypothesis(
                GroupCoordinator(config, ExploringChoices(), observer=observer, topics=topics)
            )
        ]
        self.in_flight: dict[str, int | str] = {}  # client -> request id
        self.asked: dict[str, tuple[str, int]] = {}  # client -> (API, version) in flight
        self.pauses: list[tuple[int, int]] = []  # (down_ms, up_ms) of the coordinator's pauses
        self.unserved: Unserved | None = None  # answers from ResignCoordinator until a load

    # -- time -----------------------------------------------------------------------------

    def _expand(
        self,
        hypotheses: list[Hypothesis],
        make_event,
        in_place: bool = True,
        given: str | None = None,
    ) -> list[Hypothesis]:
        """Apply an event to each hypothesis, in every way the reference could choose.

        ``in_place``: the caller keeps no hypothesis as it was, so one where the reference
        has a single way may take the event itself, uncopied (see :meth:`Hypothesis.take`).
        ``given``: the member id the broker gave, if the event names a new member (request).
        """
        expanded = []
        for hypothesis in hypotheses:
            if in_place and hypothesis.take(make_event, self._record, given):
                expanded.append(hypothesis)
                continue
            scripts: list[tuple[int, ...]] = [()]
            while scripts:
                script = scripts.pop()
                branch = hypothesis.copy()
                branch.choices.start(script, branch.given(given))
                event = make_event(branch)
                cause = _cause(branch.coordinator, event)
                self._record(branch, event, cause, branch.coordinator.handle(event))
                for depth, arity in enumerate(branch.choices.arities, start=len(script)):
                    prefix = script + (0,) * (depth - len(script))
                    scripts.extend((*prefix, k) for k in range(1, arity))
                expanded.append(branch)
        # Where no hypothesis split, any that became alike merge at the next split or
        # response (each response merges): their count does not grow meanwhile.
        if len(expanded) > len(hypotheses):
            expanded = _merged(expanded)
        if len(expanded) > MAX_HYPOTHESES:
            raise OracleOverflow(
                f"more than {MAX_HYPOTHESES} outcomes of the reference are still open"
            )
        return expanded

    def _record(self, branch: Hypothesis, event: Event, cause: Why, effects) -> None:
        """What the reference did on ``event``: its replies and their deadlines, its writes;
        and the broker's id it gave a new member, which no later placeholder may take."""
        choices = branch.choices
        if choices.gave and choices.given is not None:
            branch.binding.named.add(choices.given)
        for effect in effects:
            if isinstance(effect, Reply):
                branch.replies[effect.request_id] = effect.response
                if effect.after_append is not None:
                    branch.reply_needs[effect.request_id] = branch.write_ends.get(
                        effect.after_append, 0
                    )
                else:
                    branch.deadlines[effect.request_id] = self._deadline(event, cause)
            elif isinstance(effect, AppendRecords):
                branch.log.extend(effect.records)
                branch.write_ends[effect.append_id] = len(branch.log)

    def _tick_through(
        self, hypotheses: list[Hypothesis], until_ms: int, keep_each_step: bool
    ) -> list[Hypothesis]:
        """Fire the timers due by ``until_ms``, each at its deadline. With ``keep_each_step``
        the result also holds the hypotheses as they were before each deadline."""
        result = list(hypotheses) if keep_each_step else []
        frontier = hypotheses
        while True:
            step = None  # the earliest deadline due by until_ms, in any hypothesis
            for h in frontier:
                timers = h.coordinator.timers
                if timers.first_deadline_ms > until_ms:  # no timer is due before it: skip
                    continue
                d = timers.next_deadline_ms()
                if d is not None and d <= until_ms and (step is None or d < step):
                    step = d
            if step is None:
                return result if keep_each_step else frontier
            frontier = self._expand(
                frontier,
                lambda h, t=step: Tick(max(t, h.coordinator.now_ms)),
                in_place=not keep_each_step,
            )
            if keep_each_step:
                result.extend(frontier)

    def advance(self, now_ms: int) -> None:
        """Time is ``now_ms`` on the runner's clock: fire every timer that has surely fired on
        the broker by then (due ``latency_ms`` or more before)."""
        self.hypotheses = self._tick_through(
            self.hypotheses, now_ms - self.latency_ms, keep_each_step=False
        )

    def _maybe_fired(self, until_ms: int) -> None:
        """Allow timers due from ``latency_ms`` ago up to ``until_ms`` to have fired or not."""
        if self.latency_ms:
            self.hypotheses = self._tick_through(self.hypotheses, until_ms, keep_each_step=True)

    def _deadline(self, event: Event, cause: Why) -> Deadline:
        """A timer due while the coordinator was paused fires when it resumes."""
        for down_ms, up_ms in self.pauses if isinstance(event, Tick) else ():
            if down_ms < event.now_ms <= up_ms:
                return Deadline(
                    up_ms, f"{_told(cause)}, in a pause of the coordinator until t={up_ms:,} ms"
                )
        return Deadline(event.now_ms, cause)

    def pause(self, down_ms: int, up_ms: int) -> None:
        """The coordinator did nothing from ``down_ms`` to ``up_ms`` (a stopped process): its
        state and the requests in flight are kept, and the timers due meanwhile fire late, at
        ``up_ms``, which GM-36 allows."""
        self.advance(down_ms)
        self.pauses.append((down_ms, up_ms))

    def fail_next_write(self, error: ErrorCode, at_ms: int) -> None:
        """From ``at_ms`` the coordinator's log refuses its next write with ``error`` (a fault
        the target injects): the reference answers what that write waited on as Kafka does."""
        self.advance(at_ms)
        self.hypotheses = self._expand(
            self.hypotheses,
            lambda h: FailNextWrite(error, max(h.coordinator.now_ms, at_ms - self.latency_ms)),
        )

    def resolve_regular_expressions(self, group_id: str, at_ms: int) -> None:
        """CG-68: at ``at_ms`` the coordinator resolved ``group_id``'s regexes."""
        self.advance(at_ms)
        self.hypotheses = self._expand(
            self.hypotheses,
            lambda h: ResolveRegularExpressions(
                group_id, max(h.coordinator.now_ms, at_ms - self.latency_ms)
            ),
        )

    def new_metadata_image(
        self, topics: Mapping[str, int], topic_ids: Mapping[str, str], at_ms: int
    ) -> None:
        """CG-70: from ``at_ms`` the broker's topics are ``topics``, known by ``topic_ids``; a
        coordinator loaded later knows them too."""
        self.advance(at_ms)
        self.topics, self.topic_ids = dict(topics), dict(topic_ids)
        self.hypotheses = self._expand(
            self.hypotheses,
            lambda h: NewMetadataImage(
                topics, max(h.coordinator.now_ms, at_ms - self.latency_ms), topic_ids
            ),
        )

    def write_txn_marker(self, group_id: str, producer_id: int, result: str, at_ms: int) -> None:
        """At ``at_ms`` the transaction coordinator (the harness) ends ``producer_id``'s
        transaction on the partition of ``group_id`` (GM-58)."""
        self.advance(at_ms)
        self.hypotheses = self._expand(
            self.hypotheses,
            lambda h: WriteTxnMarker(
                group_id, producer_id, result, max(h.coordinator.now_ms, at_ms - self.latency_ms)
            ),
        )

    def resign_coordinator(self, at_ms: int) -> None:
        """CF-7: the broker no longer leads the group's partition. The groups unload, which
        answers parked JoinGroups and SyncGroups (GM-43), and until a load (:meth:`fault`)
        every request is answered NOT_COORDINATOR."""
        self.advance(at_ms)
        self.hypotheses = self._expand(
            self.hypotheses,
            lambda h: UnloadGroups(max(h.coordinator.now_ms, at_ms - self.latency_ms)),
        )
        self.unserved = Unserved(self.config, at_ms, loading=False, topics=self.topics)

    def become_coordinator(self, at_ms: int) -> None:
        """CF-3, CF-5: the broker leads the partition again and loads it: until the load,
        requests are answered COORDINATOR_LOAD_IN_PROGRESS."""
        self.advance(at_ms)
        self.unserved = Unserved(self.config, at_ms, loading=True, topics=self.topics)

    # -- inputs -------------------------------------------------------------------------

    def request(self, client: str, request: Request, given: str | None = None) -> None:
        """``client`` sent ``request`` (in the broker's member ids) at ``request.now_ms``; the
        broker handles it up to ``latency_ms`` later. ``given``: the member id the broker's
        answer gives a new member, when the caller knows it already (a trace): the reference
        then names that member so, instead of by a placeholder that the answer would bind."""
        sent = request.now_ms
        self.advance(sent)
        self._maybe_fired(sent + self.latency_ms)
        self.in_flight[client] = request.request_id
        self.asked[client] = (request.api, request.api_version)
        if self.unserved is not None:
            self._answer_unserved(self.unserved, request)
            return

        def arrive(h: Hypothesis) -> Request:
            # Not before the timers this hypothesis has fired, nor before those that surely fired.
            at = max(h.coordinator.now_ms, sent - self.latency_ms)
            translated = h.binding.translate(request)
            return translated if at == sent else dataclasses.replace(translated, now_ms=at)

        self.hypotheses = self._expand(self.hypotheses, arrive, given=given)

    def _answer_unserved(self, unserved: Unserved, request: Request) -> None:
        """Every hypothesis answers at once as the broker's host does, with no group to ask."""
        for h in self.hypotheses:
            at = max(h.coordinator.now_ms, request.now_ms - self.latency_ms)
            translated = dataclasses.replace(h.binding.translate(request), now_ms=at)
            h.replies[request.request_id] = unserved.answer(translated)
            h.deadlines[request.request_id] = Deadline(at, translated)

    def fault(self, down_ms: int, up_ms: int | None = None) -> None:
        """The coordinator stopped at ``down_ms`` and a coordinator (a new one, or the same one
        restarted, or one that resigned: LoadGroup) loaded the group from its log at ``up_ms``
        (default: at once), and serves it. Requests in flight are lost; no timer fires in
        between, and the loaded members' sessions start again from the load.

        The log loaded holds every write the broker answered as written, and every write before
        those; of the writes after, the first few or none may have reached it (a crash before
        they were on disk, or on the replica that took over), so each such prefix is a hypothesis.
        """
        up_ms = down_ms if up_ms is None else max(up_ms, down_ms)
        self.advance(down_ms)
        self.in_flight.clear()
        self.unserved = None
        reloaded = []
        for hypothesis in self.hypotheses:
            ends = sorted(
                {
                    hypothesis.durable,
                    *(end for end in hypothesis.write_ends.values() if end > hypothesis.durable),
                }
            )
            for end in ends:
                branch = hypothesis if end == ends[-1] else hypothesis.copy()
                del branch.log[end:]
                branch.durable, branch.write_ends, branch.reply_needs = end, {}, {}
                branch.replies.clear()
                branch.deadlines.clear()
                branch.restart(
                    GroupCoordinator(
                        self.config,
                        branch.choices,
                        now_ms=up_ms,
                        observer=branch.coordinator.observer,
                        topics=self.topics,
                        topic_ids=self.topic_ids,
                    )
                )
                reloaded.append(branch)
        # Prefixes of the log may load alike.
        self.hypotheses = _merged(self._expand(reloaded, lambda h: LoadGroups(tuple(h.log), up_ms)))

    # -- observations -------------------------------------------------------------------

    def response(self, client: str, response: Response, at_ms: int) -> Disagreement | None:
        """The broker answered ``client`` at ``at_ms``; keep the hypotheses that allow it (up
        to the differences the tolerance accepts, when none allows it exactly)."""
        self.advance(at_ms)
        self._maybe_fired(at_ms)
        request_id = self.in_flight.pop(client)
        api, version = self.asked.pop(client)
        kept, problems, deadlines = self._keep(request_id, response, None)
        if not kept and self.tolerance is not None:
            tolerance = self.tolerance
            kept, _, deadlines = self._keep(
                request_id, response, lambda m: tolerance.field(api, version, m)
            )
            if kept:
                self.tolerated.extend(
                    Tolerated(api, version, m, f"{api} v{version} {m}")
                    for m in kept[0].binding.tolerated
                )
                for h in kept:
                    h.binding.tolerated.clear()
        if not kept:
            telling = _most_telling(problems)
            early = self._answers_later(request_id, response) if telling is None else None
            return Disagreement(
                str(telling)
                if telling is not None
                else f"{_PARKED}; it answers so only at {early}"
                if early
                else _PARKED,
                self._allowed(request_id),
                self._closest(request_id, response),
                mismatch=telling,
                how="differs" if telling is not None else "early" if early else "unexpected",
                cause=early or "",
            )
        self.hypotheses = _merged(kept)  # ids bound alike may have made some equal
        late = self._timing(api, deadlines, at_ms)
        if late is not None and self.tolerance is not None and self.tolerance.timing(api, version):
            self.tolerated.append(Tolerated(api, version, None, late.message))
            return None
        return late

    def _keep(self, request_id: int | str, response: Response, tolerate):
        """The hypotheses whose reference answered ``request_id`` as ``response`` (moved on
        past it), the problems of the others (None: not answered yet), and the deadlines."""
        kept: list[Hypothesis] = []
        problems: list[Mismatch | None] = []
        deadlines: list[Deadline | None] = []
        for hypothesis in self.hypotheses:
            allowed = hypothesis.replies.get(request_id)
            if allowed is None:
                problems.append(None)
                continue
            # Equal, or equal once the ids bound so far are shown as the broker's: nothing new
            # to bind (most answers name no member, or only members bound already).
            if allowed != response and hypothesis.binding.as_broker(allowed) != response:
                trial = hypothesis.binding.copy()
                problem = unify(allowed, response, trial, tolerate=tolerate)
                if problem is not None:
                    problems.append(problem)
                    continue
                hypothesis.binding = trial
            del hypothesis.replies[request_id]
            deadlines.append(hypothesis.deadlines.pop(request_id, None))
            needs = hypothesis.reply_needs.pop(request_id, 0)
            if needs > hypothesis.durable:
                hypothesis.durable = needs
                hypothesis.write_ends = {
                    a: end for a, end in hypothesis.write_ends.items() if end > needs
                }
            kept.append(hypothesis)
        return kept, problems, deadlines

    def _answers_later(self, request_id: int | str, response: Response) -> str | None:
        """Whether some hypothesis still waiting on ``request_id`` answers it as ``response``
        once its timers fire, or with success where ``response`` is one: the broker's timer
        ran shorter (and a join it completed early may well hold fewer members). The cause of
        that answer, without times; None if not so. Trial copies: nothing changes."""
        for hypothesis in self.hypotheses:
            if request_id in hypothesis.replies:
                continue
            frontier = [hypothesis.copy()]
            for _ in range(_LOOKAHEAD_TIMERS):
                due = [d for h in frontier if (d := h.coordinator.next_deadline_ms()) is not None]
                if not due:
                    break
                try:
                    frontier = self._tick_through(frontier, min(due), keep_each_step=False)
                except OracleOverflow:
                    return None
                for h in frontier:
                    if request_id in h.replies and _same_outcome(
                        h.replies[request_id], response, h
                    ):
                        deadline = h.deadlines.get(request_id)
                        return _timeless(deadline.cause) if deadline else "a later timer"
                frontier = [h for h in frontier if request_id not in h.replies]
        return None

    def _timing(
        self, api: str, deadlines: list[Deadline | None], at_ms: int
    ) -> Disagreement | None:
        """GM-36: the answer at ``at_ms`` is late if it is in every hypothesis that allows it."""
        if None in deadlines:  # an answer after a write: not timed
            return None
        latest = deadlines[0] if len(deadlines) == 1 else max(deadlines, key=lambda d: d.at_ms)
        late_ms, tolerance = at_ms - latest.at_ms, self.timing_tolerance_ms + self.latency_ms
        if late_ms <= tolerance:
            return None
        return Disagreement(
            f"{api} answered {late_ms:,} ms after the reference's deadline "
            f"({latest.cause}; tolerance {tolerance:,} ms)",
            (),
            kind="timing",
            cause=_timeless(latest.cause),
        )

    def _closest(self, request_id: int | str, response: Response) -> dict | None:
        theirs = json.dumps(json_values.encode(response), indent=1, sort_keys=True).splitlines()
        candidates = [
            h.binding.show(json_values.encode(h.replies[request_id]))
            for h in self.hypotheses
            if request_id in h.replies
        ]

        def distance(candidate: dict) -> int:
            mine = json.dumps(candidate, indent=1, sort_keys=True).splitlines()
            return sum(1 for line in difflib.ndiff(mine, theirs) if line[:1] in "+-")

        return min(candidates, key=distance, default=None)

    def answered_by(self, client: str, now_ms: int) -> int | None:
        """When the reference, at ``now_ms``, has answered ``client``'s request in every
        hypothesis, at a time (not after a write): the latest such time; else None."""
        self.advance(now_ms)
        request_id = self.in_flight[client]
        deadlines = [h.deadlines.get(request_id) for h in self.hypotheses]
        if not deadlines or None in deadlines:
            return None
        return max(d.at_ms for d in deadlines if d is not None)

    def silence(self, client: str, at_ms: int) -> Disagreement | None:
        """The broker had not answered ``client`` by ``at_ms``; keep the hypotheses that park."""
        self.advance(at_ms)
        request_id = self.in_flight[client]
        kept = [h for h in self.hypotheses if request_id not in h.replies]
        if not kept:
            timed = [d for h in self.hypotheses if (d := h.deadlines.get(request_id))]
            answered, cause = "answers at once", ""
            if timed and len(timed) == len(self.hypotheses):
                latest = max(timed, key=lambda d: d.at_ms)
                answered = f"answered at t={latest.at_ms:,} ms ({latest.cause})"
                cause = _timeless(latest.cause)
            return Disagreement(
                f"the broker has not answered by t={at_ms:,} ms; the reference {answered}",
                self._allowed(request_id),
                how="silent",
                cause=cause,
            )
        self.hypotheses = kept
        return None

    def _allowed(self, request_id: int | str) -> tuple[str, ...]:
        seen: dict[str, None] = {}
        for h in self.hypotheses:
            reply = h.replies.get(request_id)
            text = (
                "no reply yet (parked)"
                if reply is None
                else json.dumps(h.binding.show(json_values.encode(reply)), sort_keys=True)
            )
            if h.choices.made:
                text += f"   [after choosing {', '.join(h.choices.made)}]"
            seen[text] = None
        return tuple(seen)


def _merged(hypotheses: list[Hypothesis]) -> list[Hypothesis]:
    """``hypotheses`` without those whose future an earlier one has (see
    :meth:`Hypothesis.same_future`): whatever they would allow, it allows, and a report shows
    its choices as one explanation. Keeping the earliest keeps the first hypothesis to
    survive, whose coverage the trace check reports."""
    if len(hypotheses) < 2:
        return hypotheses
    kept: list[Hypothesis] = []
    seen: dict[tuple, list[Hypothesis]] = {}
    for hypothesis in hypotheses:
        fingerprint = hypothesis.fingerprint()
        alike = seen.get(fingerprint)
        if alike is None:  # most: nothing to compare with
            seen[fingerprint] = [hypothesis]
        elif not any(k.same_future(hypothesis) for k in alike):
            alike.append(hypothesis)
        else:
            continue
        kept.append(hypothesis)
    return kept


def _cause(coordinator: GroupCoordinator, event: Event) -> Why:
    """What the reference answers on when ``event`` makes it answer: the timers due by a
    Tick, as (kind, setting, deadline) (taken before they fire, while a join timer's group
    still says whether it ends the initial delay; told by :func:`_timers_cause`), or the
    event itself (told by :func:`_event_cause`). Told only when a report asks."""
    if not isinstance(event, Tick):
        return event
    timers = []
    for key, deadline in coordinator.timers.due(event.now_ms):
        setting = _TIMER_SETTINGS.get(key[0], "")
        if key[0] == "CompleteJoin":
            group = coordinator.groups.get(key[1])
            if group is not None and group.in_initial_delay:
                setting = "group.initial.rebalance.delay.ms"
        timers.append((key[0], setting, deadline))
    return tuple(timers) or f"a Tick at t={event.now_ms:,} ms"


def _told(why: Why) -> str:
    if isinstance(why, str):
        return why
    if isinstance(why, tuple):
        return " and ".join(
            f"{kind} at the end of {setting}, due at t={deadline:,} ms"
            for kind, setting, deadline in why
        )
    return _event_cause(why)


def _event_cause(event: Event) -> str:
    if isinstance(event, Request):
        return f"the {event.api} that arrived at t={event.now_ms:,} ms"
    return f"{type(event).__name__} at t={event.now_ms:,} ms"


_PARKED = "the reference has not answered yet (the request is parked)"
# How many of a waiting hypothesis's timers _answers_later fires, at most, looking for the
# broker's answer: a join waits on one or two (the initial delay, then its extensions).
_LOOKAHEAD_TIMERS = 8


def _same_outcome(allowed: Response, response: Response, hypothesis: Hypothesis) -> bool:
    if unify(allowed, response, hypothesis.binding.copy()) is None:
        return True
    succeeded = (getattr(r, "error_code", None) for r in (allowed, response))
    return all(code == ErrorCode.NONE for code in succeeded)


def _most_telling(problems: list[Mismatch | None]) -> Mismatch | None:
    """A field that differs says more than "not answered yet" (None)."""
    return next((p for p in problems if p is not None), None)


def _timeless(cause: str) -> str:
    """A cause without its times: the same timer in every run."""
    return re.sub(r",? (?:due |that arrived )?at t=[\d,]+ ms", "", cause)


quicken(globals())  # Deadline: one for each reply (reference/frozen.py)
