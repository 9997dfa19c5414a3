"""The fencing argument of ISR versioned writes, for any number of writers and writes, by
k-induction in z3.

The model. A versioned store (ZooKeeper's partition-state znode) holds ``value``, its
``zk_version`` and the ``controller_epoch`` of the writer that last wrote it. The
``/controller`` election bumps ``max_epoch`` (the controller-epoch znode). Writers are
unboundedly many: each one's local state is an entry of a z3 array indexed by an
unbounded Int writer id, ``read_version[w]``, ``epoch[w]`` (the controller epoch it acts
under) and ``is_controller[w]``. One step is one arbitrary writer doing one of:

- ``Read``: ``read_version[w] := zk_version``; a partition leader also learns the stored
  ``controller_epoch`` (it reads the znode, or gets both in a LeaderAndIsr request);
- ``LeaderWrite`` (an ISR change): a conditional write that succeeds only if
  ``read_version[w] == zk_version``; it sets ``zk_version += 1`` and stores the leader's
  controller epoch;
- ``ElectController``: ``max_epoch += 1`` and the new controller gets that epoch;
- ``ControllerWrite``: a write carrying the controller's epoch, in one multi-op with a
  check of the controller-epoch znode, so it fails if a newer controller exists
  (``epoch[w] != max_epoch``); it is also conditional on the version the controller read.

A failed write changes nothing, so it is not a step. Ghost variables record what the
invariants talk about: ``last_write_read_version`` (the ``read_version`` the last
successful write was conditional on), ``wrote`` and ``previous_controller_epoch`` (the
stored epoch before the last step).

The invariants:

- **NoWriteWithStaleVersion**: the last successful write was conditional on the version
  current when it was made (``wrote ⇒ last_write_read_version == zk_version - 1``, as
  every write bumps the version by one) and no writer holds a version from the future
  (``∀w. read_version[w] <= zk_version``). Since it holds after every step, every
  successful write was conditional on the then-current version.
- **ControllerEpochMonotonic**: the stored controller epoch never decreases
  (``previous_controller_epoch <= controller_epoch``, a two-state property made a state
  invariant by the history variable).

NoWriteWithStaleVersion is inductive on its own (the version check is exactly what it
needs). ControllerEpochMonotonic is not, at any k: a leader that read the current version
but holds a controller epoch older than the stored one is unreachable, yet such a state
satisfies both invariants for as many steps as you like (other writers' reads change
nothing that matters) before the leader's write lowers the stored epoch. Two supporting
lemmas rule such states out, and all four are proved together by k-induction (each
assumed in the k states of the inductive step):

- **StoredEpochNotAhead**: ``controller_epoch <= max_epoch`` and no writer's epoch is
  ahead of ``max_epoch``;
- **LeaderEpochCurrent**: a leader whose ``read_version`` is the current version holds
  the stored controller epoch.

k-induction: base case, no state reachable from Init in fewer than k steps breaks an
invariant; inductive step, any k consecutive states (linked by steps) satisfying all of
them are followed by a state that satisfies them. Both are unsat queries. Writers and
values are unbounded Ints, so the proof covers any number of writers, and induction any
number of steps.

Broken stores, which must fail with a trace from Init (bounded model checking, then
replayed on ``ConcreteStore``): ``unconditional-write`` (a leader's write ignores the
version) and ``no-epoch-check`` (a controller write ignores newer controllers).
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import z3

from coordspec.conformance.formal.proofs.results import PROVED, VIOLATED, ProofResult

NO_WRITE_WITH_STALE_VERSION = "NoWriteWithStaleVersion"
CONTROLLER_EPOCH_MONOTONIC = "ControllerEpochMonotonic"
STORED_EPOCH_NOT_AHEAD = "StoredEpochNotAhead"
LEADER_EPOCH_CURRENT = "LeaderEpochCurrent"
INVARIANTS = (NO_WRITE_WITH_STALE_VERSION, CONTROLLER_EPOCH_MONOTONIC)
LEMMAS = (STORED_EPOCH_NOT_AHEAD, LEADER_EPOCH_CURRENT)

READ, LEADER_WRITE, ELECT_CONTROLLER, CONTROLLER_WRITE = (
    "Read",
    "LeaderWrite",
    "ElectController",
    "ControllerWrite",
)
ACTIONS = (READ, LEADER_WRITE, ELECT_CONTROLLER, CONTROLLER_WRITE)

CORRECT = "store"
UNCONDITIONAL_WRITE = "unconditional-write"  # LeaderWrite ignores the version
NO_EPOCH_CHECK = "no-epoch-check"  # ControllerWrite ignores newer controllers
VARIANTS = (CORRECT, UNCONDITIONAL_WRITE, NO_EPOCH_CHECK)

# What each broken store should do to the invariants.
EXPECTED = {
    CORRECT: {NO_WRITE_WITH_STALE_VERSION: PROVED, CONTROLLER_EPOCH_MONOTONIC: PROVED},
    # A zombie leader's write lands whatever it read, and with it its old controller epoch.
    UNCONDITIONAL_WRITE: {
        NO_WRITE_WITH_STALE_VERSION: VIOLATED,
        CONTROLLER_EPOCH_MONOTONIC: VIOLATED,
    },
    # Versions alone still order the writes, but a stale controller can lower the epoch.
    NO_EPOCH_CHECK: {NO_WRITE_WITH_STALE_VERSION: PROVED, CONTROLLER_EPOCH_MONOTONIC: VIOLATED},
}


# --- the symbolic model -------------------------------------------------------------------


class State:
    """One state of the model as z3 constants (suffix i: the i-th state of a path)."""

    def __init__(self, i: int) -> None:
        self.value = z3.Int(f"value_{i}")
        self.zk_version = z3.Int(f"zk_version_{i}")
        self.controller_epoch = z3.Int(f"controller_epoch_{i}")
        self.max_epoch = z3.Int(f"max_epoch_{i}")
        self.read_version = z3.Array(f"read_version_{i}", z3.IntSort(), z3.IntSort())
        self.epoch = z3.Array(f"epoch_{i}", z3.IntSort(), z3.IntSort())
        self.is_controller = z3.Array(f"is_controller_{i}", z3.IntSort(), z3.BoolSort())
        self.wrote = z3.Bool(f"wrote_{i}")
        self.last_write_read_version = z3.Int(f"last_write_read_version_{i}")
        self.previous_controller_epoch = z3.Int(f"previous_controller_epoch_{i}")

    def same_except(self, nxt: State, *changed: str) -> list[z3.BoolRef]:
        names = (
            "value",
            "zk_version",
            "controller_epoch",
            "max_epoch",
            "read_version",
            "epoch",
            "is_controller",
            "wrote",
            "last_write_read_version",
        )
        return [getattr(nxt, n) == getattr(self, n) for n in names if n not in changed]


@dataclass
class Step:
    """The choices of the i-th step: which action, by which writer, writing which value."""

    action: z3.ArithRef
    writer: z3.ArithRef
    value: z3.ArithRef

    @staticmethod
    def make(i: int) -> Step:
        return Step(z3.Int(f"action_{i}"), z3.Int(f"writer_{i}"), z3.Int(f"new_value_{i}"))


def init(s: State) -> z3.BoolRef:
    return z3.And(
        s.value == 0,
        s.zk_version == 0,
        s.controller_epoch == 0,
        s.max_epoch == 0,
        s.read_version == z3.K(z3.IntSort(), z3.IntVal(0)),
        s.epoch == z3.K(z3.IntSort(), z3.IntVal(0)),
        s.is_controller == z3.K(z3.IntSort(), z3.BoolVal(False)),
        z3.Not(s.wrote),
        s.last_write_read_version == -1,
        s.previous_controller_epoch == 0,
    )


def transition(s: State, n: State, step: Step, variant: str = CORRECT) -> z3.BoolRef:
    w, v = step.writer, step.value
    read_ok = s.read_version[w] == s.zk_version
    leader = z3.Not(s.is_controller[w])

    def write(guard: z3.BoolRef) -> list[z3.BoolRef]:
        return [
            guard,
            n.value == v,
            n.zk_version == s.zk_version + 1,
            n.controller_epoch == s.epoch[w],
            n.wrote,
            n.last_write_read_version == s.read_version[w],
            *s.same_except(
                n, "value", "zk_version", "controller_epoch", "wrote", "last_write_read_version"
            ),
        ]

    read = z3.And(
        n.read_version == z3.Store(s.read_version, w, s.zk_version),
        n.epoch == z3.If(leader, z3.Store(s.epoch, w, s.controller_epoch), s.epoch),
        *s.same_except(n, "read_version", "epoch"),
    )
    leader_guard = leader if variant == UNCONDITIONAL_WRITE else z3.And(leader, read_ok)
    leader_write = z3.And(write(leader_guard))
    elect = z3.And(
        n.max_epoch == s.max_epoch + 1,
        n.epoch == z3.Store(s.epoch, w, s.max_epoch + 1),
        n.is_controller == z3.Store(s.is_controller, w, True),
        *s.same_except(n, "max_epoch", "epoch", "is_controller"),
    )
    fenced = z3.BoolVal(True) if variant == NO_EPOCH_CHECK else s.epoch[w] == s.max_epoch
    controller_write = z3.And(write(z3.And(s.is_controller[w], fenced, read_ok)))
    return z3.And(
        n.previous_controller_epoch == s.controller_epoch,
        z3.Or(
            [
                z3.And(step.action == ACTIONS.index(name), effect)
                for name, effect in (
                    (READ, read),
                    (LEADER_WRITE, leader_write),
                    (ELECT_CONTROLLER, elect),
                    (CONTROLLER_WRITE, controller_write),
                )
            ]
        ),
    )


def invariant(name: str, s: State) -> z3.BoolRef:
    w = z3.Int("w")
    if name == NO_WRITE_WITH_STALE_VERSION:
        return z3.And(
            z3.Implies(s.wrote, s.last_write_read_version == s.zk_version - 1),
            z3.ForAll([w], s.read_version[w] <= s.zk_version),
        )
    if name == CONTROLLER_EPOCH_MONOTONIC:
        return s.previous_controller_epoch <= s.controller_epoch
    if name == STORED_EPOCH_NOT_AHEAD:
        return z3.And(s.controller_epoch <= s.max_epoch, z3.ForAll([w], s.epoch[w] <= s.max_epoch))
    if name == LEADER_EPOCH_CURRENT:
        return z3.ForAll(
            [w],
            z3.Implies(
                z3.And(z3.Not(s.is_controller[w]), s.read_version[w] == s.zk_version),
                s.epoch[w] == s.controller_epoch,
            ),
        )
    raise ValueError(f"unknown invariant {name}")


def _path(k: int, variant: str) -> tuple[list[State], list[Step], list[z3.BoolRef]]:
    states = [State(i) for i in range(k + 1)]
    steps = [Step.make(i) for i in range(k)]
    links = [transition(states[i], states[i + 1], steps[i], variant) for i in range(k)]
    return states, steps, links


SOLVER_TIMEOUT_MS = 60_000


class Unknown(RuntimeError):
    """z3 could not decide a query in time."""


def _solve(constraints: Sequence[z3.BoolRef]) -> tuple[z3.CheckSatResult, z3.ModelRef | None]:
    solver = z3.Solver()
    solver.set(timeout=SOLVER_TIMEOUT_MS)
    solver.add(*constraints)
    answer = solver.check()
    if answer == z3.unknown:
        raise Unknown(solver.reason_unknown())
    return answer, solver.model() if answer == z3.sat else None


def base_case(name: str, depth: int, variant: str = CORRECT) -> list[dict[str, Any]] | None:
    """The shortest trace from Init, of at most ``depth`` steps, ending in a state that
    breaks ``name``; None if there is none."""
    for i in range(depth + 1):
        states, steps, links = _path(i, variant)
        answer, model = _solve([init(states[0]), *links, z3.Not(invariant(name, states[i]))])
        if answer == z3.sat:
            return _trace(model, states, steps)
    return None


def inductive_step(
    name: str, k: int, assumed: Sequence[str], variant: str = CORRECT
) -> dict[str, Any] | None:
    """k consecutive states satisfying ``assumed``, linked by steps, then a state breaking
    ``name``: the counterexample to induction, or None if there is none (unsat)."""
    states, steps, links = _path(k, variant)
    hypotheses = [invariant(a, states[i]) for i in range(k) for a in assumed]
    answer, model = _solve([*hypotheses, *links, z3.Not(invariant(name, states[k]))])
    if answer == z3.unsat:
        return None
    return {"k": k, "trace_from_unreachable_state": _trace(model, states, steps)}


def _trace(
    model: z3.ModelRef, states: Sequence[State], steps: Sequence[Step]
) -> list[dict[str, Any]]:
    """The steps of a path with the state after each (and the acting writer's local state)."""

    def num(e: z3.ExprRef) -> Any:
        v = model.eval(e, model_completion=True)
        return z3.is_true(v) if z3.is_bool(v) else v.as_long()

    def store(s: State) -> dict[str, Any]:
        return {
            "value": num(s.value),
            "zk_version": num(s.zk_version),
            "controller_epoch": num(s.controller_epoch),
            "max_epoch": num(s.max_epoch),
            "wrote": num(s.wrote),
            "last_write_read_version": num(s.last_write_read_version),
            "previous_controller_epoch": num(s.previous_controller_epoch),
        }

    def local(s: State, w: z3.ExprRef) -> dict[str, Any]:
        return {
            "read_version": num(s.read_version[w]),
            "epoch": num(s.epoch[w]),
            "is_controller": num(s.is_controller[w]),
        }

    out = [{"step": 0, "action": "Init", "state": store(states[0])}]
    for i, step in enumerate(steps):
        writer = num(step.writer)
        out.append(
            {
                "step": i + 1,
                "action": ACTIONS[num(step.action)],
                "writer": writer,
                "new_value": num(step.value),
                "writer_before": local(states[i], step.writer),
                "writer_after": local(states[i + 1], step.writer),
                "state": store(states[i + 1]),
            }
        )
    return out


def prove_one(
    name: str, variant: str = CORRECT, k: int = 3, depth: int | None = None
) -> tuple[str, dict | None]:
    """k-induction of one invariant or lemma, assuming all of them in the step. The base
    case looks ``depth`` (default k) steps deep. Returns the verdict and the trace from
    Init (violated) or the counterexample to induction (unproved)."""
    trace = base_case(name, k if depth is None else depth, variant)
    if trace:
        return VIOLATED, {"variant": variant, "trace": trace}
    cti = inductive_step(name, k, INVARIANTS + LEMMAS, variant)
    if cti:
        return "unproved", {"variant": variant, **cti}
    return PROVED, None


def prove(variant: str = CORRECT, k: int = 3, bmc_depth: int = 8) -> list[ProofResult]:
    """Both invariants of one store, by k-induction. The inductive step assumes the
    lemmas, so an invariant is reported proved only if every lemma is proved for the same
    store too (listed in details; for the correct store they are reported as results of
    their own). For a broken store the base case looks ``bmc_depth`` steps deep, so a
    violation shows up as a trace from Init."""
    label = "fencing" if variant == CORRECT else f"broken-{variant}"
    results: list[ProofResult] = []
    lemma_verdicts: dict[str, str] | None = None
    for name in INVARIANTS + (LEMMAS if variant == CORRECT else ()):
        start = time.process_time()
        depth = k if variant == CORRECT else max(k, bmc_depth)
        details: dict[str, Any] = {
            "base_case_depth": depth,
            "role": "supporting lemma" if name in LEMMAS else "invariant",
        }
        try:
            verdict, cex = prove_one(name, variant, k, depth)
        except Unknown as exc:
            verdict, cex = "unknown", {"variant": variant, "reason": str(exc)}
        if verdict == PROVED and name in INVARIANTS:
            if lemma_verdicts is None:
                lemma_verdicts = {lemma: _verdict_or_unknown(lemma, variant, k) for lemma in LEMMAS}
            details["lemmas"] = lemma_verdicts
            if any(v != PROVED for v in lemma_verdicts.values()):
                verdict = "unproved"
        if name in INVARIANTS and variant == CORRECT:
            details["inductive_alone"] = _inductive_alone(name, k)
        expected = EXPECTED[variant].get(name, PROVED)
        results.append(
            ProofResult(
                label,
                name,
                verdict,
                k,
                time.process_time() - start,
                cex,
                "k-induction",
                expected,
                details,
            )
        )
    return results


def _verdict_or_unknown(name: str, variant: str, k: int) -> str:
    try:
        return prove_one(name, variant, k)[0]
    except Unknown:
        return "unknown"


def _inductive_alone(name: str, max_k: int) -> dict[int, bool]:
    """Whether ``name`` is k-inductive on its own (without the lemmas), k = 1..max_k."""
    out = {}
    for k in range(1, max_k + 1):
        states, _, links = _path(k, CORRECT)
        hypotheses = [invariant(name, states[i]) for i in range(k)]
        answer, _ = _solve([*hypotheses, *links, z3.Not(invariant(name, states[k]))])
        out[k] = answer == z3.unsat
    return out


def prove_all(k: int = 3, bmc_depth: int = 8) -> list[ProofResult]:
    """The correct store (expect proved) and the two broken ones (expect violated)."""
    results = prove(CORRECT, k)
    for variant in (UNCONDITIONAL_WRITE, NO_EPOCH_CHECK):
        results += prove(variant, k, bmc_depth)
    return results


# --- replaying a trace on a concrete store ------------------------------------------------


@dataclass
class ConcreteStore:
    """The same store in plain Python, to replay a z3 trace step by step."""

    variant: str = CORRECT
    value: int = 0
    zk_version: int = 0
    controller_epoch: int = 0
    max_epoch: int = 0
    read_version: dict[int, int] = field(default_factory=dict)
    epoch: dict[int, int] = field(default_factory=dict)
    is_controller: dict[int, bool] = field(default_factory=dict)
    wrote: bool = False
    last_write_read_version: int = -1
    previous_controller_epoch: int = 0

    def step(self, action: str, writer: int, new_value: int = 0) -> bool:
        """Apply one action; False (and no change) if its guard does not hold."""
        rv = self.read_version.get(writer, 0)
        ep = self.epoch.get(writer, 0)
        controller = self.is_controller.get(writer, False)
        before = self.controller_epoch
        if action == READ:
            self.read_version[writer] = self.zk_version
            if not controller:
                self.epoch[writer] = self.controller_epoch
        elif action == LEADER_WRITE:
            if controller or (self.variant != UNCONDITIONAL_WRITE and rv != self.zk_version):
                return False
            self._write(new_value, rv, ep)
        elif action == ELECT_CONTROLLER:
            self.max_epoch += 1
            self.epoch[writer] = self.max_epoch
            self.is_controller[writer] = True
        elif action == CONTROLLER_WRITE:
            fenced = self.variant == NO_EPOCH_CHECK or ep == self.max_epoch
            if not (controller and fenced and rv == self.zk_version):
                return False
            self._write(new_value, rv, ep)
        else:
            raise ValueError(f"unknown action {action}")
        self.previous_controller_epoch = before
        return True

    def _write(self, new_value: int, read_version: int, epoch: int) -> None:
        self.value = new_value
        self.zk_version += 1
        self.controller_epoch = epoch
        self.wrote = True
        self.last_write_read_version = read_version

    def violated(self) -> set[str]:
        bad = set()
        stale = self.wrote and self.last_write_read_version != self.zk_version - 1
        if stale or any(v > self.zk_version for v in self.read_version.values()):
            bad.add(NO_WRITE_WITH_STALE_VERSION)
        if self.previous_controller_epoch > self.controller_epoch:
            bad.add(CONTROLLER_EPOCH_MONOTONIC)
        return bad


def replay(trace: Sequence[Mapping[str, Any]], variant: str) -> tuple[bool, set[str]]:
    """Replay a trace's steps on a ConcreteStore of ``variant``: whether every step was
    enabled and every state matched the trace's, and the invariants the end state breaks."""
    store = ConcreteStore(variant)
    faithful = True
    for entry in trace[1:]:
        faithful &= store.step(entry["action"], entry["writer"], entry["new_value"])
        state = entry["state"]
        faithful &= all(getattr(store, key) == state[key] for key in state)
    return faithful, store.violated()
