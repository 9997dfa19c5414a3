"""The controller's decision rules for one partition (ZooKeeper-mode Kafka 2.6:
``kafka.controller.Election``, ``PartitionStateMachine``, ``ReplicaStateMachine``).
Pure functions: the assignment, the published state and the live brokers in, the next
state out (None: nothing to write)."""

from __future__ import annotations

from coordspec.reference.replication.znodes import NO_LEADER, PartitionState


def init_leader(
    replicas: tuple[int, ...], live: set[int], controller_epoch: int
) -> PartitionState | None:
    """InitLeaders (ISR-8): a new partition's leader is its first live replica in
    assignment order, its ISR the live replicas; with no live replica it stays new (no
    state is written) until one registers."""
    alive = tuple(r for r in replicas if r in live)
    if not alive:
        return None
    return PartitionState(alive[0], 0, alive, controller_epoch)


def elect_leader(
    replicas: tuple[int, ...],
    state: PartitionState,
    live: set[int],
    controller_epoch: int,
    *,
    unclean: bool,
) -> PartitionState | None:
    """ElectLeader (ISR-6, ISR-7): the state after brokers came or went.

    A live leader keeps leading and its dead ISR members leave the ISR. Otherwise the
    first replica in assignment order that is live and in the ISR leads, with the live
    ISR members as ISR. With none, an unclean election (if enabled) makes the first live
    replica leader with itself as ISR; else the partition goes offline: leader -1, and the
    ISR keeps its last member (Kafka never writes an empty ISR). Every change bumps the
    leader epoch."""
    # Runs once per partition in a failover: filter and loops, not comprehensions
    # (each a function call in CPython 3.11).
    isr, leader = state.isr, state.leader
    live_isr = tuple(filter(live.__contains__, isr))
    if leader in live and leader in isr:
        if live_isr == isr:
            return None
        return state.next(leader, live_isr, controller_epoch)
    for r in replicas:
        if r in live and r in isr:
            return state.next(r, live_isr, controller_epoch)
    alive = [r for r in replicas if r in live]
    if unclean and alive:
        return state.next(alive[0], (alive[0],), controller_epoch)
    if leader == NO_LEADER:
        return None  # offline already; its ISR holds no live member
    return state.next(NO_LEADER, (leader,) if leader in isr else isr, controller_epoch)


def elect_reassigned_leader(
    targets: tuple[int, ...], state: PartitionState, live: set[int], controller_epoch: int
) -> PartitionState | None:
    """A reassignment's end (ISR-10): the leader must be a target replica; the first target
    in order that is live and in the ISR leads; the ISR loses the replicas being removed."""
    isr = tuple(r for r in state.isr if r in targets)
    leader = state.leader
    if leader not in targets or leader not in live:
        candidates = [r for r in targets if r in live and r in state.isr]
        if not candidates:
            return None
        leader = candidates[0]
    if leader == state.leader and isr == state.isr:
        return None
    return state.next(leader, isr, controller_epoch)
