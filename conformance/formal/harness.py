"""The shape the four spec checks share (group.py, isr.py, failover.py, consumer_group.py):
each drives the reference as a spec's actions, records its steps, and asks TLC two questions.

* :func:`check_trace_data`: is every recorded trace a behaviour of the spec?
  ``tla/Trace<Spec>.tla`` follows each trace through the spec's ``Next`` with deadlock
  checking on: a deadlock is a record that cannot be reached, and an accepted run finds
  exactly one distinct state per record.
* :func:`simulate_behaviours`: ``-simulate`` on ``tla/Sim<Spec>.tla``, a wrapper that runs
  ``count`` behaviours back to back and fails its invariant ``Done`` once all are done (TLC
  2.15 has no ``-simulate file=``), so the counterexample TLC prints is the whole run; each
  behaviour is then replayed on the reference (:func:`replay_all`).

Each spec's module keeps what is its own: the mapping to the reference, the TraceData
module's fields, and the shape of its states. tla/README.md has the mappings.
"""

from __future__ import annotations

import shutil
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from coordspec.conformance.formal.tla_values import parse_value
from coordspec.conformance.formal.tlc import TLA_DIR, TlcError, run_tlc


class TraceMismatch(AssertionError):
    """The reference and the spec disagree."""


@dataclass
class Step:
    """One spec step the reference took: the action, its parameters as the spec's trace
    records name them (each spec's ``ARGS``), and the spec state after it."""

    action: str
    args: tuple
    state: dict


@dataclass
class TraceCheck:
    accepted: bool
    traces: int
    states: int
    seconds: float
    violated: str | None = None
    failed_trace: int | None = (
        None  # 1-based trace number and index of the record TLC could not reach
    )
    failed_index: int | None = None
    distinct: int = 0


@dataclass
class RandomTraceSummary:
    traces: int
    draws: int  # random runs drawn (the ones that ended short dropped)
    steps: int  # spec steps, Init excluded
    actions: dict[str, int]
    check: TraceCheck
    seconds: float
    trace_list: list[list[Step]] = field(default_factory=list, repr=False)
    skipped: dict[str, int] = field(default_factory=dict)  # moves a driver chose not to take

    @property
    def accepted(self) -> bool:
        return self.check.accepted

    @property
    def short(self) -> int:
        """Runs dropped for ending (no move left within the bounds) before the steps asked."""
        return self.draws - self.traces


@dataclass
class ReplaySummary:
    behaviours: int
    steps: int
    actions: dict[str, int]
    mismatches: list[str]
    seconds: float
    longest: int = 0

    @property
    def ok(self) -> bool:
        return not self.mismatches


def state_diff(variables: tuple[str, ...], reference: dict, spec: dict) -> str:
    """The variables on which the reference's state and the spec's differ, with both values."""
    return "; ".join(
        f"{n}: reference {reference[n]!r}, spec {spec[n]!r}"
        for n in variables
        if reference[n] != spec[n]
    )


def _count(actions: dict[str, int], action: str) -> None:
    actions[action] = actions.get(action, 0) + 1


# -- reference -> spec: recorded traces checked by TLC ----------------------------------------------


def validate_random_traces(
    draw: Callable[[int], list[Step]],
    check_traces: Callable[[list[list[Step]]], TraceCheck],
    count: int,
    steps: int,
    seed: int,
    max_draws: int | None = None,
) -> RandomTraceSummary:
    """``count`` random runs (``draw(seed)``) of at least ``steps`` spec steps each, checked
    by TLC in one run. A run that ends shorter (no move left within the bounds) is drawn again,
    at most ``max_draws`` runs in all."""
    started = time.monotonic()
    traces: list[list[Step]] = []
    draws = 0
    while len(traces) < count:
        if max_draws is not None and draws >= max_draws:
            raise TraceMismatch(f"only {len(traces)} of {draws} random runs reached {steps} steps")
        trace = draw(seed * 100_003 + draws)
        draws += 1
        if len(trace) > steps:
            traces.append(trace)
    actions: dict[str, int] = {}
    for trace in traces:
        for s in trace[1:]:
            _count(actions, s.action)
    check = check_traces(traces)
    return RandomTraceSummary(
        count,
        draws,
        sum(len(t) - 1 for t in traces),
        actions,
        check,
        time.monotonic() - started,
        traces,
    )


def trace_rows(
    traces: list[list[Step]],
    variables: Sequence[str],
    value: Callable[[str, object], str],
    tla: Callable[[object], str],
) -> list[list[list[str]]]:
    """The traces as TraceData rows: each variable's value (``value(name, v)``), then the
    action and its parameters."""
    return [
        [
            [value(n, s.state[n]) for n in variables] + [f'"{s.action}"', *(tla(a) for a in s.args)]
            for s in trace
        ]
        for trace in traces
    ]


def trace_data_module(
    traces: Sequence[Sequence[Sequence[str]]],
    fields: Sequence[str],
    constants: Sequence[str],
    shared: Sequence[str],
) -> str:
    """The ``TraceData`` module: ``Traces``, a sequence of traces, each a sequence of records
    whose values (TLA+ texts, in the order of ``fields``) are built by ``R(...)``. Each
    distinct value of a field in ``shared`` is defined once, which keeps the module small
    enough for SANY to parse quickly."""
    names: dict[str, str] = {}

    def name_of(text: str) -> str:
        if text not in names:
            names[text] = f"V{len(names) + 1}"
        return names[text]

    def record(values: Sequence[str]) -> str:
        return (
            "R("
            + ",".join(
                name_of(v) if f in shared else v for f, v in zip(fields, values, strict=True)
            )
            + ")"
        )

    body = ",\n".join("<<" + ",\n".join(record(r) for r in trace) + ">>" for trace in traces)
    params = [f"x{k}" for k in range(len(fields))]
    maker = (
        f"R({', '.join(params)}) == ["
        + ", ".join(f"{f} |-> {x}" for f, x in zip(fields, params, strict=True))
        + "]"
    )
    definitions = "\n".join(f"{name} == {text}" for text, name in names.items())
    return (
        f"---- MODULE TraceData ----\nEXTENDS Integers, Sequences, TLC\nCONSTANTS {', '.join(constants)}\n"
        f"{maker}\n{definitions}\nTraces == <<\n{body}\n>>\n====\n"
    )


def _scratch(spec: str, *modules: tuple[str, str]) -> tempfile.TemporaryDirectory:
    """A scratch directory with the spec copied from tla/ and ``modules`` (file name, text) written."""
    scratch = tempfile.TemporaryDirectory(prefix=f"coordspec-{spec}-")
    shutil.copy(TLA_DIR / f"{spec}.tla", f"{scratch.name}/{spec}.tla")
    for name, text in modules:
        with open(f"{scratch.name}/{name}", "w") as f:
            f.write(text)
    return scratch


def check_trace_data(
    spec: str,
    trace_data: str,
    config: str,
    traces: Sequence[Sequence[object]],
    position: tuple[str, str] = ("t", "i"),
) -> TraceCheck:
    """One TLC run of ``tla/Trace<spec>.tla`` over ``trace_data`` (the ``TraceData`` module)
    with ``config``; ``position`` names the trace module's variables for the trace number
    and the record index, read from a counterexample."""
    trace_spec = f"Trace{spec}"
    with _scratch(
        spec,
        (f"{trace_spec}.tla", (TLA_DIR / f"{trace_spec}.tla").read_text()),
        ("TraceData.tla", trace_data),
        (f"{trace_spec}.cfg", config),
    ) as scratch:
        result = run_tlc(
            trace_spec,
            Path(scratch) / f"{trace_spec}.cfg",
            directory=Path(scratch),
            check_deadlock=True,
        )
    states = sum(len(t) for t in traces)
    check = TraceCheck(
        result.passed and result.distinct == states,
        len(traces),
        states,
        result.seconds,
        result.violated,
        distinct=result.distinct,
    )
    if result.trace:
        last = result.trace[-1].values
        check.failed_trace, check.failed_index = int(last[position[0]]), int(last[position[1]])
        if result.violated == "Deadlock":
            check.failed_index += 1  # the record after the last one matched
    return check


# -- spec -> reference: TLC simulation replayed -------------------------------------------------------

Behaviour = list[tuple[dict, dict]]  # (act, spec state) per state, Init first


def simulate_behaviours(
    spec: str,
    constants: str,
    count: int,
    depth: int,
    seed: int,
    variables: Sequence[str],
    spec_state: Callable[[dict], dict],
) -> list[Behaviour]:
    """The behaviours of one TLC simulation of ``tla/Sim<spec>.tla`` (its cfg is ``constants``
    plus Depth and Count), split at their Init states. Of each state TLC printed, ``act`` and
    the spec's ``variables`` are parsed; ``spec_state`` gives them the shapes the harness's
    states have."""
    sim = f"Sim{spec}"
    config = (
        constants
        + f"    Depth = {depth}\n    Count = {count}\nINIT SimInit\nNEXT SimNext\nINVARIANT Done\n"
    )
    with _scratch(
        spec, (f"{sim}.tla", (TLA_DIR / f"{sim}.tla").read_text()), (f"{sim}.cfg", config)
    ) as scratch:
        result = run_tlc(
            sim,
            Path(scratch) / f"{sim}.cfg",
            directory=Path(scratch),
            options=["-simulate", "-depth", str(count * (depth + 1) + 5), "-seed", str(seed)],
        )
    if result.violated != "Done":
        raise TlcError(f"simulation seed {seed}: expected Done to fail, got {result.violated}")
    behaviours: list[Behaviour] = []
    for trace_state in result.trace:
        values = {name: parse_value(trace_state.values[name]) for name in (*variables, "act")}
        act = values["act"]
        if act["action"] == "Init":
            behaviours.append([])
        behaviours[-1].append((act, spec_state(values)))
    return behaviours


def replay_all(
    behaviours: list[Behaviour],
    replay: Callable[[Behaviour, int], int],
    seed: int,
    started: float,
    mismatch: type[Exception] = TraceMismatch,
) -> ReplaySummary:
    """Replay every behaviour (``replay(behaviour, number)`` returns the steps taken and raises
    ``mismatch`` where the reference parts from the spec); count actions and steps, and the
    seconds since ``started``."""
    actions: dict[str, int] = {}
    mismatches, steps = [], 0
    for number, behaviour in enumerate(behaviours):
        for act, _ in behaviour[1:]:
            _count(actions, act["action"])
        try:
            steps += replay(behaviour, number)
        except mismatch as found:
            mismatches.append(f"behaviour {number + 1} (seed {seed}): {found}")
    return ReplaySummary(
        len(behaviours),
        steps,
        actions,
        mismatches,
        time.monotonic() - started,
        max((len(b) - 1 for b in behaviours), default=0),
    )
