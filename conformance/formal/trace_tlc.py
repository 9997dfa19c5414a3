"""What trace validation asks of TLC, shared by the three specs' trace modules
(``conformance/formal/group.py``, ``traces_isr.py``, ``traces_failover.py``).

Two questions, each one TLC run in a scratch directory holding copies of the spec's modules:

* :func:`check_trace_data`: is every trace in a ``TraceData`` module a behaviour of the spec?
  ``tla/Trace<Spec>.tla`` follows each trace through the spec's ``Next`` with deadlock
  checking on: a deadlock is a record that cannot be reached, and an accepted run finds
  exactly one distinct state per record.
* :func:`simulate_behaviours`: ``-simulate`` on a wrapper module ``Sim<Spec>`` that runs
  ``count`` behaviours back to back and fails its invariant ``Done`` once all are done (TLC
  2.15 has no ``-simulate file=``), so the counterexample TLC prints is the whole run.

Each spec's module keeps what is its own: the mapping to the reference, the trace and
wrapper modules' text, and the parsing of TLC's values into its states.
"""

from __future__ import annotations

import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from coordspec.conformance.formal.tlc import (
    TLA_DIR,
    TlcError,
    TlcResult,
    absorb,
    find_jar,
    read_messages,
)


def run_tlc(directory, module: str, config: str, extra: list[str], deadlock: bool) -> TlcResult:
    """TLC with one worker on ``module`` in ``directory``; deadlock checking only if asked."""
    java = shutil.which("java")
    if java is None:
        raise TlcError("Java is missing: TLC needs a JDK")
    result = TlcResult(module, config)
    command = [
        java,
        "-XX:+UseParallelGC",
        "-Xmx1g",
        f"-Djava.io.tmpdir={directory}",
        "-cp",
        str(find_jar()),
        "tlc2.TLC",
        "-tool",
        "-workers",
        "1",
        "-metadir",
        f"{directory}/states-{config}",
        "-config",
        config,
        *extra,
        *([] if deadlock else ["-deadlock"]),
        module,
    ]
    started = time.monotonic()
    process = subprocess.Popen(
        command, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    )
    messages = read_messages(process.stdout, None)
    code = process.wait()
    result.seconds = time.monotonic() - started
    for number, text in messages:
        absorb(result, number, text)
    if code not in (0, 11, 12, 13) or (code != 0 and result.violated is None):
        errors = [text.strip() for number, text in messages if text.strip()]
        detail = "\n".join(errors[-6:]) if errors else "no output"
        raise TlcError(f"TLC failed on {module} (exit {code}): {detail}")
    return result


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
        result = run_tlc(scratch, trace_spec, f"{trace_spec}.cfg", [], deadlock=True)
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


def tla_value(
    value,
    model_values: frozenset[str],
    special: Callable[[object], str | None] = lambda value: None,
) -> str:
    """Python -> TLA+ text: strings in ``model_values`` are model values, other strings are
    strings; lists and tuples are sequences, sets are sets; a dict is a sequence when keyed by
    ints, a function (``:>``/``@@``) when keyed by model values, else a record. ``special``
    may print a value its own way (None: the usual way)."""
    custom = special(value)
    if custom is not None:
        return custom

    def text(v) -> str:
        return tla_value(v, model_values, special)

    if isinstance(value, bool):
        return "TRUE" if value else "FALSE"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, str):
        return value if value in model_values else f'"{value}"'
    if isinstance(value, list | tuple):
        return "<<" + ", ".join(text(v) for v in value) + ">>"
    if isinstance(value, frozenset | set):
        return "{" + ", ".join(sorted(text(v) for v in value)) + "}"
    if isinstance(value, dict):
        keys = list(value)
        if keys and all(isinstance(k, int) and not isinstance(k, bool) for k in keys):
            return "<<" + ", ".join(text(value[k]) for k in sorted(keys)) + ">>"
        if keys and all(k in model_values for k in keys):
            return "(" + " @@ ".join(f"{k} :> {text(value[k])}" for k in sorted(keys)) + ")"
        return "[" + ", ".join(f"{k} |-> {text(v)}" for k, v in value.items()) + "]"
    raise TypeError(f"no TLA+ form for {value!r}")


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


Behaviour = list[tuple[dict, dict]]  # (act, spec state) per state, Init first


def simulate_behaviours(
    spec: str,
    sim_module: str,
    constants: str,
    count: int,
    depth: int,
    seed: int,
    parse_state: Callable[[dict[str, str]], tuple[dict, dict]],
) -> list[Behaviour]:
    """The behaviours of one TLC simulation of ``Sim<spec>`` (``sim_module``, whose cfg is
    ``constants`` plus Depth and Count), split at their Init states; ``parse_state`` turns
    TLC's printed values of one state into (act, spec state)."""
    sim = f"Sim{spec}"
    config = (
        constants
        + f"    Depth = {depth}\n    Count = {count}\nINIT SimInit\nNEXT SimNext\nINVARIANT Done\n"
    )
    with _scratch(spec, (f"{sim}.tla", sim_module), (f"{sim}.cfg", config)) as scratch:
        result = run_tlc(
            scratch,
            sim,
            f"{sim}.cfg",
            ["-simulate", "-depth", str(count * (depth + 1) + 5), "-seed", str(seed)],
            deadlock=False,
        )
    if result.violated != "Done":
        raise TlcError(f"simulation seed {seed}: expected Done to fail, got {result.violated}")
    behaviours: list[Behaviour] = []
    for trace_state in result.trace:
        act, state = parse_state(trace_state.values)
        if act["action"] == "Init":
            behaviours.append([])
        behaviours[-1].append((act, state))
    return behaviours


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


def replay_all(
    behaviours: list[Behaviour],
    replay: Callable[[Behaviour, int], int],
    seed: int,
    started: float,
    mismatch: type[Exception],
) -> ReplaySummary:
    """Replay every behaviour (``replay(behaviour, number)`` returns the steps taken and raises
    ``mismatch`` where the reference parts from the spec); count actions and steps."""
    actions: dict[str, int] = {}
    mismatches, steps = [], 0
    for number, behaviour in enumerate(behaviours):
        for act, _ in behaviour[1:]:
            actions[act["action"]] = actions.get(act["action"], 0) + 1
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
