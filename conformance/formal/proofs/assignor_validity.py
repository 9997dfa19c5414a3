"""Assignor validity for every input up to a bound.

The properties, for one rebalance with no previous ownership (Kafka's contract for its
classic assignors):

- **ExactlyOneOwner** (a): every partition of a topic that some member subscribes to is
  assigned to exactly one member of the group; nothing else is assigned (no partition
  past a topic's count, none of a topic nobody subscribes to, no duplicates), and every
  member, and only members, are listed.
- **OwnerSubscribes** (b): a member is assigned only partitions of topics it subscribes to.
- **Balanced** (c): when every member subscribes to the same topics, the members' partition
  counts differ by at most one. Kafka promises this for roundrobin, sticky and
  cooperative-sticky (their javadocs; the sticky assignors' constrained algorithm deals
  exactly floor/ceil quotas).
- **BalancedPerTopic** (c, range): with the same premise, each topic's partitions are split
  so that the members' counts of that topic differ by at most one. This is all that range
  promises: it cuts each topic on its own, and the first member in order takes the extra
  partition of every topic, so range is *not* Balanced. Balanced is checked for range too,
  expecting the counterexample.

The inputs (``Bounds``): member ids m0..m{n-1}, topics t0..t{k-1}, every topic present in
``partitions_per_topic`` with 1..max_partitions partitions, each subscription any set of
topics (listed in name order, possibly empty), no group.instance.id, no user data or owned
partitions. Member and topic names sort in index order under Java's String order.

Two ways to cover them:

- Range and roundrobin: the assignor's rule is encoded as z3 terms over symbolic inputs (a
  Bool per member for "in the group", a Bool per member and topic for "subscribes", an Int
  per topic for its partition count), and z3 is asked for an input violating each property.
  unsat proves the property for every input: every non-empty subset of the members as the
  group, with every subscription and partition count. ``differential_check`` ties each
  encoding to the Python assignor: the encoding, evaluated by z3 on concrete inputs
  (substitution, then simplification to a constant), must give exactly the assignor's
  output, for every group and subscription at two partition counts per topic, and for
  every partition count when all members subscribe to everything.
- Sticky and cooperative-sticky: too large to encode, so every input is run through the
  Python assignor and the output checked directly (plain Python, no solver). The groups
  are m0..m{k-1} for k = 1..n. Two reductions, both sound for these assignors, and no
  other:

  * The group m0..m{k-1} stands for every k-member subset of the ids. The sticky
    algorithm observes member ids only through Java String order (sorting, tie-breaks)
    and Java HashMap iteration order (the subscriptions map), and the ids m0..m9 fall in
    distinct hash buckets in ascending order, so every subset is a renaming of the prefix
    that preserves both orders (``member_renaming_is_sound`` checks the hash-order half).
  * The partition counts of topics nobody subscribes to are not varied (see
    ``check_chunk``): the assignors drop those topics first, and each run spot-checks it.

  Topic renaming is *not* used: the sticky assignors observe topic names through Java
  String order and through Java hash order (the TopicPartition hash sets of the partition
  movements), and sort topics by their number of subscribers with the name as the
  tie-break, so a renamed input can get an assignment of a different shape (swapping t0
  and t1 in m0:[t0], m1:[t1], m2:[t0,t1] with 2, 2, 1 partitions gives m0 two partitions
  instead of one). Reducing by it would assume what is to be shown.

A broken variant of each assignor must come back violated with a concrete counterexample.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass
from typing import Any

import z3

from coordspec.conformance.formal.proofs.results import PROVED, VIOLATED, ProofResult
from coordspec.reference.assignors import ASSIGNORS, StickyAssignor
from coordspec.reference.assignors.base import Assignment, Assignor, TopicPartition
from coordspec.reference.assignors.range import java_string_key, member_order_key
from coordspec.reference.assignors.sticky import java_hash_map_order
from coordspec.reference.consumer_protocol import Subscription

EXACTLY_ONE_OWNER = "ExactlyOneOwner"
OWNER_SUBSCRIBES = "OwnerSubscribes"
BALANCED = "Balanced"
BALANCED_PER_TOPIC = "BalancedPerTopic"
MODEL_MATCHES_CODE = "ModelMatchesCode"

# What Kafka promises for each assignor.
GUARANTEES: dict[str, tuple[str, ...]] = {
    "range": (EXACTLY_ONE_OWNER, OWNER_SUBSCRIBES, BALANCED_PER_TOPIC),
    "roundrobin": (EXACTLY_ONE_OWNER, OWNER_SUBSCRIBES, BALANCED),
    "sticky": (EXACTLY_ONE_OWNER, OWNER_SUBSCRIBES, BALANCED),
    "cooperative-sticky": (EXACTLY_ONE_OWNER, OWNER_SUBSCRIBES, BALANCED),
}
# Checked as well, expecting a counterexample: Kafka does not promise these.
NOT_GUARANTEED: dict[str, tuple[str, ...]] = {"range": (BALANCED,)}


@dataclass(frozen=True)
class Bounds:
    members: int = 4
    topics: int = 3
    max_partitions: int = 6  # each topic has 1..max_partitions partitions
    empty_subscriptions: bool = True  # whether a member may subscribe to nothing

    def __post_init__(self) -> None:
        if not 1 <= self.members <= 10 or not 1 <= self.topics <= 10 or self.max_partitions < 1:
            raise ValueError(f"bounds out of range: {self}")

    @property
    def member_ids(self) -> tuple[str, ...]:
        return tuple(f"m{i}" for i in range(self.members))

    @property
    def topic_names(self) -> tuple[str, ...]:
        return tuple(f"t{i}" for i in range(self.topics))

    def subscription_choices(self) -> list[tuple[str, ...]]:
        """Every set of topics, as a tuple in name order; the empty one first if allowed."""
        topics = self.topic_names
        choices = [
            tuple(t for i, t in enumerate(topics) if mask >> i & 1)
            for mask in range(1 << len(topics))
        ]
        return choices if self.empty_subscriptions else choices[1:]

    def partition_counts(self) -> list[tuple[int, ...]]:
        return list(itertools.product(range(1, self.max_partitions + 1), repeat=self.topics))

    def enumerated_inputs(self) -> int:
        """Inputs the enumeration decides: groups m0..m{k-1}, k = 1..members (each of which
        stands for every group of k of the member ids, see the module docstring)."""
        c = len(self.subscription_choices())
        return sum(c**k for k in range(1, self.members + 1)) * self.max_partitions**self.topics

    def symbolic_inputs(self) -> int:
        """Inputs a symbolic proof covers: any non-empty subset of the members as the group."""
        c = len(self.subscription_choices())
        return ((c + 1) ** self.members - 1) * self.max_partitions**self.topics


# --- the properties on a concrete assignment ------------------------------------------


def violated_properties(
    partitions_per_topic: Mapping[str, int],
    subscriptions: Mapping[str, Subscription],
    assignment: Mapping[str, Sequence[TopicPartition]],
) -> set[str]:
    """The properties this assignment of this input breaks (checked directly)."""
    topics_of = {m: set(s.topics) for m, s in subscriptions.items()}
    subscribed = set().union(*topics_of.values()) if topics_of else set()
    expected = {(t, p) for t in subscribed for p in range(partitions_per_topic.get(t, 0))}
    bad: set[str] = set()
    seen: set[TopicPartition] = set()
    if set(assignment) != set(subscriptions):
        bad.add(EXACTLY_ONE_OWNER)
    for member, tps in assignment.items():
        for tp in tps:
            tp = (tp[0], tp[1])
            if tp in seen or tp not in expected:
                bad.add(EXACTLY_ONE_OWNER)
            seen.add(tp)
            if tp[0] not in topics_of.get(member, ()):
                bad.add(OWNER_SUBSCRIBES)
    if seen != expected:
        bad.add(EXACTLY_ONE_OWNER)
    subscription_sets = list(topics_of.values())
    if subscription_sets and all(s == subscription_sets[0] for s in subscription_sets):
        sizes = [len(assignment.get(m, ())) for m in subscriptions]
        if max(sizes) - min(sizes) > 1:
            bad.add(BALANCED)
        for t in subscription_sets[0]:
            per_topic = [
                sum(1 for tp in assignment.get(m, ()) if tp[0] == t) for m in subscriptions
            ]
            if max(per_topic) - min(per_topic) > 1:
                bad.add(BALANCED_PER_TOPIC)
    return bad


def make_input(
    members: Sequence[str],
    topics: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
) -> tuple[dict[str, int], dict[str, Subscription]]:
    """The assignor's arguments: subscriptions in member order, topics in name order."""
    return dict(partitions_per_topic), {m: Subscription(tuple(topics[m])) for m in members}


def counterexample(
    members: Sequence[str],
    topics: Mapping[str, Sequence[str]],
    partitions_per_topic: Mapping[str, int],
    assignment: Mapping[str, Sequence[TopicPartition]],
    violated: Sequence[str],
    **extra: Any,
) -> dict:
    return {
        "members": list(members),
        "subscriptions": {m: list(topics[m]) for m in members},
        "partitions_per_topic": dict(partitions_per_topic),
        "assignment": {m: sorted((t, p) for t, p in tps) for m, tps in assignment.items()},
        "violated": sorted(violated),
        **extra,
    }


def replay(assignor: Assignor, cex: Mapping[str, Any]) -> tuple[Assignment, set[str]]:
    """Run the assignor on a counterexample's input: its output and the properties it breaks."""
    ppt, subs = make_input(cex["members"], cex["subscriptions"], cex["partitions_per_topic"])
    out = assignor.assign(ppt, subs)
    return out, violated_properties(ppt, subs, out)


# --- broken assignors: each must be caught ----------------------------------------------


def _in_member_order(subscriptions: Mapping[str, Subscription]) -> list[str]:
    return sorted(
        subscriptions, key=lambda m: member_order_key(m, subscriptions[m].group_instance_id)
    )


class RangeDroppingRemainder:
    """Range that gives every member ``n // k`` partitions and forgets the ``n % k`` left over."""

    name = "broken-range"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignment:
        out: dict[str, list[TopicPartition]] = {m: [] for m in subscriptions}
        for topic in sorted(
            {t for s in subscriptions.values() for t in s.topics}, key=java_string_key
        ):
            members = [
                m for m in _in_member_order(subscriptions) if topic in subscriptions[m].topics
            ]
            quota = partitions_per_topic.get(topic, 0) // len(members)
            for i, m in enumerate(members):
                out[m].extend((topic, p) for p in range(i * quota, (i + 1) * quota))
        return {m: sorted(tps) for m, tps in out.items()}


class RoundRobinIgnoringSubscriptions:
    """Roundrobin that deals each partition to the next member, subscribed or not."""

    name = "broken-roundrobin"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignment:
        members = _in_member_order(subscriptions)
        out: dict[str, list[TopicPartition]] = {m: [] for m in members}
        topics = sorted({t for s in subscriptions.values() for t in s.topics}, key=java_string_key)
        for i, tp in enumerate(
            (t, p) for t in topics for p in range(partitions_per_topic.get(t, 0))
        ):
            out[members[i % len(members)]].append(tp)
        return {m: sorted(tps) for m, tps in out.items()}


class StickyWithGroupSubscription:
    """Sticky that hands the assignor the group's subscription (the union of all topics) for
    every member instead of the member's own."""

    name = "broken-sticky"

    def assign(
        self, partitions_per_topic: Mapping[str, int], subscriptions: Mapping[str, Subscription]
    ) -> Assignment:
        union = tuple(
            sorted({t for s in subscriptions.values() for t in s.topics}, key=java_string_key)
        )
        return StickyAssignor().assign(
            partitions_per_topic, {m: Subscription(union) for m in subscriptions}
        )


BROKEN: dict[str, tuple[Assignor, str]] = {
    # name: (the broken assignor, the property it breaks)
    "broken-range": (RangeDroppingRemainder(), EXACTLY_ONE_OWNER),
    "broken-roundrobin": (RoundRobinIgnoringSubscriptions(), OWNER_SUBSCRIBES),
    "broken-sticky": (StickyWithGroupSubscription(), OWNER_SUBSCRIBES),
}


# --- symbolic inputs and the two encoded assignors ---------------------------------------


def _cases(
    selector: z3.ArithRef, values: Sequence[int], term: Callable[[int], z3.ExprRef]
) -> z3.ExprRef:
    """term(selector) for a selector known to be one of ``values`` (the last is the default)."""
    out = term(values[-1])
    for v in reversed(values[:-1]):
        out = z3.If(selector == v, term(v), out)
    return out


def _count(bools: Sequence[z3.BoolRef]) -> z3.ArithRef:
    return z3.Sum([z3.If(b, 1, 0) for b in bools]) if bools else z3.IntVal(0)


class SymbolicGroup:
    """A group as z3 constants: who is in it, who subscribes to what, how many partitions."""

    def __init__(self, bounds: Bounds) -> None:
        self.bounds = bounds
        # Members in Kafka's MemberInfo order (dynamic members: by member id, Java order).
        self.members = sorted(bounds.member_ids, key=java_string_key)
        self.topics = sorted(bounds.topic_names, key=java_string_key)
        self.present = [z3.Bool(f"in_group_{m}") for m in self.members]
        self.subscribes = [
            [z3.Bool(f"{m}_subscribes_{t}") for t in self.topics] for m in self.members
        ]
        self.partitions = [z3.Int(f"partitions_{t}") for t in self.topics]
        self.slots = range(bounds.max_partitions)  # partition numbers a topic can have

    def domain(self) -> z3.BoolRef:
        cs = [z3.Or(self.present)]
        for i in range(len(self.members)):
            cs += [z3.Implies(s, self.present[i]) for s in self.subscribes[i]]
            if not self.bounds.empty_subscriptions:
                cs.append(z3.Implies(self.present[i], z3.Or(self.subscribes[i])))
        cs += [z3.And(n >= 1, n <= self.bounds.max_partitions) for n in self.partitions]
        return z3.And(cs)

    def anyone_subscribes(self, j: int) -> z3.BoolRef:
        return z3.Or([self.subscribes[i][j] for i in range(len(self.members))])

    def exists(self, j: int, p: int) -> z3.BoolRef:
        """Partition p of topic j is in the metadata and some member subscribes to the topic."""
        return z3.And(p < self.partitions[j], self.anyone_subscribes(j))

    def bindings(
        self,
        members: Sequence[str],
        topics: Mapping[str, Sequence[str]],
        partitions_per_topic: Mapping[str, int],
    ) -> list[tuple[z3.ExprRef, z3.ExprRef]]:
        pairs: list[tuple[z3.ExprRef, z3.ExprRef]] = []
        for i, m in enumerate(self.members):
            pairs.append((self.present[i], z3.BoolVal(m in members)))
            for j, t in enumerate(self.topics):
                pairs.append((self.subscribes[i][j], z3.BoolVal(m in members and t in topics[m])))
        pairs += [
            (n, z3.IntVal(partitions_per_topic[t]))
            for n, t in zip(self.partitions, self.topics, strict=True)
        ]
        return pairs

    def concrete_input(
        self, model: z3.ModelRef
    ) -> tuple[list[str], dict[str, list[str]], dict[str, int]]:
        def true(b: z3.BoolRef) -> bool:
            return z3.is_true(model.eval(b, model_completion=True))

        members = [m for i, m in enumerate(self.members) if true(self.present[i])]
        topics = {
            m: [t for j, t in enumerate(self.topics) if true(self.subscribes[i][j])]
            for i, m in enumerate(self.members)
            if m in members
        }
        counts = {
            t: model.eval(n, model_completion=True).as_long()
            for t, n in zip(self.topics, self.partitions, strict=True)
        }
        return members, topics, counts


# assigned[i][j][p]: member i is assigned partition p of topic j.
Encoding = list[list[list[z3.BoolRef]]]


def range_model(g: SymbolicGroup, drop_remainder: bool = False) -> Encoding:
    """Kafka's range rule: for each topic, its k subscribers in member order take contiguous
    slices, n // k each and one more for the first n % k."""
    members = range(len(g.members))
    quotas = range(1, len(g.members) + 1)
    out: Encoding = [[[z3.BoolVal(False)] * len(g.slots) for _ in g.topics] for _ in members]
    for j in range(len(g.topics)):
        n = g.partitions[j]
        subscribers = [g.subscribes[i][j] for i in members]
        k = _count(subscribers)
        quota = _cases(k, quotas, lambda c, n=n: n / c)
        extra = z3.IntVal(0) if drop_remainder else _cases(k, quotas, lambda c, n=n: n % c)
        for i in members:
            rank = _count(subscribers[:i])  # subscribers before member i
            start = _cases(
                rank, list(members), lambda r, q=quota, e=extra: r * q + z3.If(r < e, r, e)
            )
            length = quota + z3.If(rank < extra, 1, 0)
            for p in g.slots:
                out[i][j][p] = z3.And(subscribers[i], start <= p, p < start + length)
    return out


def round_robin_model(g: SymbolicGroup, skip_subscription_check: bool = False) -> Encoding:
    """Kafka's roundrobin rule: partitions in (topic, number) order, each dealt to the next
    member in cyclic member order that subscribes to its topic; the cycle resumes after
    that member. The cursor runs over all member ids: ids outside the group never take a
    partition, so skipping them is the same as cycling over the group alone."""
    size = len(g.members)
    out: Encoding = [[[z3.BoolVal(False)] * len(g.slots) for _ in g.topics] for _ in range(size)]
    cursor: z3.ArithRef = z3.IntVal(0)
    for j in range(len(g.topics)):
        takes = [
            g.present[i] if skip_subscription_check else g.subscribes[i][j] for i in range(size)
        ]

        def first_taker_from(c: int, takes: list[z3.BoolRef] = takes) -> z3.ArithRef:
            order = [(c + d) % size for d in range(size)]
            chosen: z3.ArithRef = z3.IntVal(order[-1])
            for i in reversed(order[:-1]):
                chosen = z3.If(takes[i], i, chosen)
            return chosen

        for p in g.slots:
            active = g.exists(j, p)
            owner = z3.simplify(_cases(cursor, list(range(size)), first_taker_from))
            for i in range(size):
                out[i][j][p] = z3.And(active, owner == i)
            cursor = z3.simplify(
                z3.If(active, _cases(owner, list(range(size)), lambda i: (i + 1) % size), cursor)
            )
    return out


def violation(g: SymbolicGroup, assigned: Encoding, prop: str) -> z3.BoolRef:
    """An input (with the encoding's output) breaking ``prop``."""
    members, topics = range(len(g.members)), range(len(g.topics))
    if prop == EXACTLY_ONE_OWNER:
        bad = []
        for j in topics:
            for p in g.slots:
                owners = _count([assigned[i][j][p] for i in members])
                bad.append(z3.If(g.exists(j, p), owners != 1, owners != 0))
        bad += [
            z3.And(assigned[i][j][p], z3.Not(g.present[i]))
            for i in members
            for j in topics
            for p in g.slots
        ]
        return z3.Or(bad)
    if prop == OWNER_SUBSCRIBES:
        return z3.Or(
            [
                z3.And(assigned[i][j][p], z3.Not(g.subscribes[i][j]))
                for i in members
                for j in topics
                for p in g.slots
            ]
        )
    identical = z3.And(
        [
            z3.Implies(z3.And(g.present[a], g.present[b]), g.subscribes[a][j] == g.subscribes[b][j])
            for a in members
            for b in members
            if a < b
            for j in topics
        ]
    )
    if prop == BALANCED:
        sizes = [_count([assigned[i][j][p] for j in topics for p in g.slots]) for i in members]
        return z3.And(
            identical,
            z3.Or(
                [
                    z3.And(g.present[a], g.present[b], sizes[a] - sizes[b] >= 2)
                    for a in members
                    for b in members
                    if a != b
                ]
            ),
        )
    if prop == BALANCED_PER_TOPIC:
        bad = []
        for j in topics:
            sizes = [_count([assigned[i][j][p] for p in g.slots]) for i in members]
            bad += [
                z3.And(g.present[a], g.present[b], sizes[a] - sizes[b] >= 2)
                for a in members
                for b in members
                if a != b
            ]
        return z3.And(identical, z3.Or(bad))
    raise ValueError(f"unknown property {prop}")


def _assignment_of(
    g: SymbolicGroup, assigned: Encoding, model: z3.ModelRef
) -> dict[str, list[TopicPartition]]:
    out: dict[str, list[TopicPartition]] = {}
    for i, m in enumerate(g.members):
        if z3.is_true(model.eval(g.present[i], model_completion=True)):
            out[m] = [
                (t, p)
                for j, t in enumerate(g.topics)
                for p in g.slots
                if z3.is_true(model.eval(assigned[i][j][p], model_completion=True))
            ]
    return out


ENCODED_ASSIGNORS: dict[str, Assignor] = {
    "range": ASSIGNORS["range"],
    "roundrobin": ASSIGNORS["roundrobin"],
    "broken-range": BROKEN["broken-range"][0],
    "broken-roundrobin": BROKEN["broken-roundrobin"][0],
}

MODELS: dict[str, Callable[[SymbolicGroup], Encoding]] = {
    "range": range_model,
    "roundrobin": round_robin_model,
    "broken-range": lambda g: range_model(g, drop_remainder=True),
    "broken-roundrobin": lambda g: round_robin_model(g, skip_subscription_check=True),
}


def _smallest_model(g: SymbolicGroup, constraints: list[z3.BoolRef]) -> z3.ModelRef:
    """A model with the fewest members, then the fewest partitions, then the fewest
    subscriptions: counterexamples people can read."""
    opt = z3.Optimize()
    opt.add(constraints)
    opt.minimize(_count(g.present))
    opt.minimize(z3.Sum(g.partitions))
    opt.minimize(_count([s for row in g.subscribes for s in row]))
    opt.minimize(
        z3.Sum([z3.If(present, i, 0) for i, present in enumerate(g.present)])
    )  # m0, m1 … first
    if opt.check() != z3.sat:
        raise RuntimeError("z3 found a counterexample, then could not minimise it")
    return opt.model()


def prove_symbolic(name: str, prop: str, bounds: Bounds, expected: str = PROVED) -> ProofResult:
    """Ask z3 for an input on which the encoding of ``name`` breaks ``prop``. A
    counterexample carries the encoding's assignment and the Python assignor's on that
    input ("code_assignment"), which must be the same."""
    start = time.process_time()
    g = SymbolicGroup(bounds)
    assigned = MODELS[name](g)
    solver = z3.Solver()
    solver.add(g.domain(), violation(g, assigned, prop))
    answer = solver.check()
    if answer == z3.unknown:
        raise RuntimeError(f"z3 gave up on {name} {prop}: {solver.reason_unknown()}")
    cex = None
    if answer == z3.sat:
        model = _smallest_model(g, [g.domain(), violation(g, assigned, prop)])
        members, topics, counts = g.concrete_input(model)
        assignment = _assignment_of(g, assigned, model)
        ppt, subs = make_input(members, topics, counts)
        code = ENCODED_ASSIGNORS[name].assign(ppt, subs)
        cex = counterexample(
            members,
            topics,
            counts,
            assignment,
            sorted(violated_properties(ppt, subs, assignment)),
            code_assignment={m: sorted(tps) for m, tps in code.items()},
        )
    return ProofResult(
        name,
        prop,
        VIOLATED if cex else PROVED,
        bounds.symbolic_inputs(),
        time.process_time() - start,
        cex,
        "z3 symbolic",
        expected,
    )


# --- differential check: the encoding is the code -----------------------------------------


def _differential_inputs(
    bounds: Bounds,
) -> Iterator[tuple[list[str], dict[str, tuple[str, ...]], dict[str, int]]]:
    """Every group (any non-empty subset of the members) and subscription at two partition
    counts per topic (one near the maximum, mixing remainders; one small, so that topics
    have fewer partitions than subscribers), then every partition count for the groups
    m0..m{k-1} whose members all subscribe to every topic."""
    ids, topics, top = bounds.member_ids, bounds.topic_names, bounds.max_partitions
    fixed = [
        {t: max(1, top - (1, 0, 2)[j % 3]) for j, t in enumerate(topics)},
        {t: min(top, (2, 1, 3)[j % 3]) for j, t in enumerate(topics)},
    ]
    choices: list[tuple[str, ...] | None] = [
        None,
        *bounds.subscription_choices(),
    ]  # None: not in the group
    for counts in fixed:
        for vector in itertools.product(choices, repeat=len(ids)):
            members = [m for m, c in zip(ids, vector, strict=True) if c is not None]
            if members:
                yield (
                    members,
                    {m: c for m, c in zip(ids, vector, strict=True) if c is not None},
                    counts,
                )
    for k in range(1, len(ids) + 1):
        for counts in bounds.partition_counts():
            yield (
                list(ids[:k]),
                {m: topics for m in ids[:k]},
                dict(zip(topics, counts, strict=True)),
            )


def differential_check(name: str, assignor: Assignor, bounds: Bounds) -> ProofResult:
    """The encoding of ``name``, evaluated by z3 on concrete inputs, against the assignor."""
    start = time.process_time()
    g = SymbolicGroup(bounds)
    assigned = MODELS[name](g)
    cells = [
        (i, j, p) for i in range(len(g.members)) for j in range(len(g.topics)) for p in g.slots
    ]
    packed = z3.Sum([z3.If(assigned[i][j][p], 2**bit, 0) for bit, (i, j, p) in enumerate(cells)])
    bit_of = {(g.members[i], g.topics[j], p): bit for bit, (i, j, p) in enumerate(cells)}
    checked = 0
    for members, topics, counts in _differential_inputs(bounds):
        value = z3.simplify(z3.substitute(packed, *g.bindings(members, topics, counts)))
        if not z3.is_int_value(value):
            raise RuntimeError(f"{name}: encoding did not evaluate to a constant: {value}")
        model_bits = value.as_long()
        ppt, subs = make_input(members, topics, counts)
        out = assignor.assign(ppt, subs)
        code_bits, outside = 0, False
        for m, tps in out.items():
            for t, p in tps:
                bit = bit_of.get((m, t, p))
                if bit is None:
                    outside = True
                else:
                    code_bits |= 1 << bit
        checked += 1
        if outside or code_bits != model_bits or set(out) != set(members):
            model_assignment = {
                m: [
                    (t, p)
                    for (mm, t, p), bit in bit_of.items()
                    if mm == m and model_bits >> bit & 1
                ]
                for m in members
            }
            cex = counterexample(
                members,
                topics,
                counts,
                out,
                sorted(violated_properties(ppt, subs, out)),
                model_assignment={m: sorted(v) for m, v in model_assignment.items()},
            )
            return ProofResult(
                name,
                MODEL_MATCHES_CODE,
                VIOLATED,
                checked,
                time.process_time() - start,
                cex,
                "differential",
            )
    return ProofResult(
        name, MODEL_MATCHES_CODE, PROVED, checked, time.process_time() - start, None, "differential"
    )


def symbolic_proofs(bounds: Bounds = Bounds()) -> list[ProofResult]:
    """Range and roundrobin: each property by z3; and each broken variant's counterexample."""
    results: list[ProofResult] = []
    for name in ("range", "roundrobin"):
        for prop in GUARANTEES[name]:
            results.append(prove_symbolic(name, prop, bounds))
        for prop in NOT_GUARANTEED.get(name, ()):
            results.append(prove_symbolic(name, prop, bounds, expected=VIOLATED))
    for name in ("broken-range", "broken-roundrobin"):
        results.append(prove_symbolic(name, BROKEN[name][1], bounds, expected=VIOLATED))
    return results


def start_differential_checks(
    bounds: Bounds = Bounds(), executor: Executor | None = None
) -> Callable[[], list[ProofResult]]:
    """The range and roundrobin encodings against their code (each rebuilt where it runs)."""
    names = ("range", "roundrobin")
    if executor is None:
        done = [differential_check(name, ASSIGNORS[name], bounds) for name in names]
        return lambda: done
    futures = [executor.submit(differential_check, name, ASSIGNORS[name], bounds) for name in names]
    return lambda: [f.result() for f in futures]


# --- enumeration: every input through the Python assignor ----------------------------------


def member_renaming_is_sound(bounds: Bounds) -> bool:
    """The hash-order half of the claim that groups m0..m{k-1} stand for every k-member
    subset: every subset's Java HashMap iteration order is its String order."""
    ids = bounds.member_ids
    return all(
        java_hash_map_order(list(reversed(s))) == sorted(s, key=java_string_key)
        for k in range(1, len(ids) + 1)
        for s in itertools.combinations(ids, k)
    )


def _size_key(k: int, counts: Sequence[int], vector: Sequence[int]) -> tuple:
    return (k, sum(counts), tuple(counts), tuple(vector))


def check_chunk(
    assignor: Assignor, bounds: Bounds, k: int, first: int, last: int, stop_at: str | None = None
) -> dict[str, Any]:
    """Run groups m0..m{k-1} with subscription vectors first..last-1 (in product order)
    at every partition count. For each property: how many inputs break it, and the
    smallest such input. With ``stop_at``, return at the first input breaking that one.

    The counts of topics nobody subscribes to are not varied: the sticky assignors first
    drop such topics from ``partitions_per_topic`` (``_subscribed_partition_counts``, as
    Kafka's leader passes only subscribed topics) and read it nowhere else, and the
    properties do not look at those counts, so one run (at count 1) decides them for every
    count. Each vector spot-checks this: the run at the largest counts is repeated with the
    unsubscribed topics at max_partitions, and must give the same assignment."""
    start = time.process_time()
    choices = bounds.subscription_choices()
    subs_of = [Subscription(c) for c in choices]
    sets_of = [frozenset(c) for c in choices]
    members = bounds.member_ids[:k]
    topics = bounds.topic_names
    sizes = range(1, bounds.max_partitions + 1)
    expected_of: dict = {}
    breaks: dict[str, int] = {}
    breaks_all_subscribed: dict[
        str, int
    ] = {}  # among inputs where every member subscribes to a topic
    smallest: dict[str, tuple[tuple, dict]] = {}
    runs = covered = 0

    def result() -> dict[str, Any]:
        return {
            "checked": covered,
            "runs": runs,
            "breaks": breaks,
            "breaks_all_subscribed": breaks_all_subscribed,
            "smallest": smallest,
            "seconds": time.process_time() - start,
        }

    for vector in itertools.islice(itertools.product(range(len(choices)), repeat=k), first, last):
        subscriptions = {m: subs_of[c] for m, c in zip(members, vector, strict=True)}
        topic_sets = [sets_of[c] for c in vector]
        subscribed = frozenset().union(*topic_sets)
        varied = [j for j, t in enumerate(topics) if t in subscribed]
        weight = bounds.max_partitions ** (len(topics) - len(varied))  # inputs each run decides
        identical = len(set(vector)) == 1
        counts = [1] * len(topics)
        for chosen in itertools.product(sizes, repeat=len(varied)):
            for j, c in zip(varied, chosen, strict=True):
                counts[j] = c
            ppt = dict(zip(topics, counts, strict=True))
            out = assignor.assign(ppt, subscriptions)
            runs += 1
            covered += weight
            bad = _fast_violations(
                members, topic_sets, subscribed, ppt, tuple(counts), identical, out, expected_of
            )
            if not bad:
                continue
            key = _size_key(k, counts, vector)
            everyone_subscribes = all(topic_sets)
            for prop in bad:
                breaks[prop] = breaks.get(prop, 0) + weight
                if everyone_subscribes:
                    breaks_all_subscribed[prop] = breaks_all_subscribed.get(prop, 0) + weight
                if prop not in smallest or key < smallest[prop][0]:
                    cex = counterexample(
                        members,
                        {m: choices[c] for m, c in zip(members, vector, strict=True)},
                        ppt,
                        out,
                        sorted(bad),
                    )
                    smallest[prop] = (key, cex)
            if stop_at in bad:
                return result()
        if weight > 1:
            other = {t: (n if t in subscribed else bounds.max_partitions) for t, n in ppt.items()}
            if assignor.assign(other, subscriptions) != out:
                raise RuntimeError(
                    f"{getattr(assignor, 'name', assignor)} reads the partition counts of topics nobody "
                    f"subscribes to ({ppt} vs {other}, {dict(zip(members, vector, strict=True))}): the enumeration's "
                    "reduction is unsound for it"
                )
    return result()


def _fast_violations(
    members, topic_sets, subscribed, ppt, counts, identical, out, expected_of
) -> set[str]:
    """``violated_properties`` for the enumeration's own inputs, without rebuilding sets."""
    key = (subscribed, counts)
    expected = expected_of.get(key)
    if expected is None:
        expected = expected_of[key] = frozenset((t, p) for t in subscribed for p in range(ppt[t]))
    bad: set[str] = set()
    if len(out) != len(members) or any(m not in out for m in members):
        return violated_properties(
            ppt,
            {m: Subscription(tuple(sorted(s))) for m, s in zip(members, topic_sets, strict=True)},
            out,
        )
    seen: set = set()
    total = 0
    for m, topics in zip(members, topic_sets, strict=True):
        tps = out[m]
        total += len(tps)
        for tp in tps:
            if tp[0] not in topics:
                bad.add(OWNER_SUBSCRIBES)
        seen.update(tps)
    if total != len(expected) or seen != expected:
        bad.add(EXACTLY_ONE_OWNER)
    if identical:
        sizes = [len(out[m]) for m in members]
        if max(sizes) - min(sizes) > 1:
            bad.add(BALANCED)
        for t in topic_sets[0]:
            per_topic = [sum(1 for tp in out[m] if tp[0] == t) for m in members]
            if max(per_topic) - min(per_topic) > 1:
                bad.add(BALANCED_PER_TOPIC)
    return bad


def _chunks(bounds: Bounds, inputs_per_chunk: int = 25_000) -> list[tuple[int, int, int]]:
    c = len(bounds.subscription_choices())
    per_vector = bounds.max_partitions**bounds.topics
    step = max(1, inputs_per_chunk // per_vector)
    return [
        (k, first, min(first + step, c**k))
        for k in range(1, bounds.members + 1)
        for first in range(0, c**k, step)
    ]


# Kafka's own behaviour, kept on purpose in reference/assignors/sticky.py: its
# allSubscriptionsEqual takes the first non-empty subscription as the reference, so members
# that subscribe to nothing (say, a pattern that matches no topic) and come first in HashMap
# order count as "equal" and are dealt partitions of topics they do not subscribe to.
KAFKA_BEHAVIOUR: dict[tuple[str, str], str] = {
    (
        name,
        OWNER_SUBSCRIBES,
    ): "Kafka's AbstractStickyAssignor deals partitions to members with empty "
    "subscriptions when every other member has the same subscription"
    for name in ("sticky", "cooperative-sticky")
}


def _combine(
    name: str, props: Sequence[str], parts: list[dict[str, Any]], empty_subscriptions: bool
) -> list[ProofResult]:
    checked = sum(p["checked"] for p in parts)
    runs = sum(p["runs"] for p in parts)
    seconds = sum(p["seconds"] for p in parts)
    results = []
    for prop in props:
        count = sum(p["breaks"].get(prop, 0) for p in parts)
        found = [p["smallest"][prop] for p in parts if prop in p["smallest"]]
        cex = min(found, key=lambda kc: kc[0])[1] if found else None
        known = KAFKA_BEHAVIOUR.get((name, prop)) if empty_subscriptions else None
        details = {"inputs_violating": count, "assignor_runs": runs}
        if known:
            # The property still has to hold wherever every member subscribes to a topic.
            details["kafka_behaviour"] = known
            details["inputs_violating_with_every_member_subscribed"] = sum(
                p["breaks_all_subscribed"].get(prop, 0) for p in parts
            )
            if count and details["inputs_violating_with_every_member_subscribed"] == 0:
                results.append(
                    ProofResult(
                        name, prop, VIOLATED, checked, seconds, cex, "enumerated", VIOLATED, details
                    )
                )
                continue
        results.append(
            ProofResult(
                name,
                prop,
                VIOLATED if count else PROVED,
                checked,
                seconds,
                cex,
                "enumerated",
                PROVED,
                details,
            )
        )
    return results


def start_enumerated(
    name: str,
    assignor: Assignor,
    bounds: Bounds,
    executor: Executor | None = None,
    props: Sequence[str] | None = None,
) -> Callable[[], list[ProofResult]]:
    """Check ``props`` (default: what Kafka promises for ``name``) on every input. With an
    executor the chunks run there; the returned function waits and combines them."""
    props = tuple(props or GUARANTEES[name])
    chunks = _chunks(bounds)
    if executor is None:
        parts = [check_chunk(assignor, bounds, *chunk) for chunk in chunks]
        return lambda: _combine(name, props, parts, bounds.empty_subscriptions)
    futures = [executor.submit(check_chunk, assignor, bounds, *chunk) for chunk in chunks]
    return lambda: _combine(name, props, [f.result() for f in futures], bounds.empty_subscriptions)


def find_counterexample(name: str, assignor: Assignor, prop: str, bounds: Bounds) -> ProofResult:
    """Enumerate in order of group size until an input breaks ``prop`` (for broken variants)."""
    start, checked = time.process_time(), 0
    if name == "broken-sticky":
        # Empty subscriptions already break OwnerSubscribes for the real sticky assignors
        # (see the module's docstring); look where only the mutation can be to blame.
        bounds = dataclasses.replace(bounds, empty_subscriptions=False)
    for chunk in _chunks(bounds, inputs_per_chunk=2_000):
        part = check_chunk(assignor, bounds, *chunk, stop_at=prop)
        checked += part["checked"]
        if prop in part["smallest"]:
            return ProofResult(
                name,
                prop,
                VIOLATED,
                checked,
                time.process_time() - start,
                part["smallest"][prop][1],
                "enumerated",
                VIOLATED,
            )
    return ProofResult(
        name, prop, PROVED, checked, time.process_time() - start, None, "enumerated", VIOLATED
    )


def start_enumerated_proofs(
    bounds: Bounds = Bounds(), executor: Executor | None = None
) -> Callable[[], list[ProofResult]]:
    """Sticky and cooperative-sticky on every input, and the broken sticky variant."""
    if not member_renaming_is_sound(bounds):
        raise ValueError("member ids whose Java hash order differs from their String order")
    waits = [
        start_enumerated(name, ASSIGNORS[name], bounds, executor)
        for name in ("sticky", "cooperative-sticky")
    ]
    assignor, prop = BROKEN["broken-sticky"]
    broken = (
        executor.submit(find_counterexample, "broken-sticky", assignor, prop, bounds)
        if executor
        else None
    )
    inline = None if executor else find_counterexample("broken-sticky", assignor, prop, bounds)

    def wait() -> list[ProofResult]:
        results = [r for w in waits for r in w()]
        return [*results, broken.result() if broken else inline]

    return wait
