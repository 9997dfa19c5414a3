"""Named sub-steps and state changes within one step of a model, for observers that must
see between them.

One input to a reference model can be several actions of its TLA+ spec: a JoinGroup
that completes the join phase on the way is JoinGroup, then CompleteJoin. The core
reports such sub-steps, under the spec's action names, to a :class:`SubStepObserver`
when each starts and when it has ended, as etcd raft reports its transitions to a trace
logger (``traceBecomeLeader``). Nothing listens by default. The spec-check harnesses
(conformance/formal/) subscribe to cut their traces at these points.

The reported sub-steps:

``CompleteJoin``
    a group's join phase completes (subject: the ``Group``);
``ChangeLeaders``
    a controller's round of leader decisions (subject: the ``Controller``);
``AdvanceHighWatermark``
    a leader recomputes its high watermark (subject: the ``Partition``; ``ended`` gets
    the effects, empty when the high watermark stayed).

A sub-step cut short by an exception is not reported as ended. A group's change of state
is reported as ``moved``, with the cause the transition table names (raft traces its
``becomeLeader`` and kin the same way).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class SubStepObserver(Protocol):
    def started(self, action: str, subject: object) -> None: ...

    def ended(self, action: str, subject: object, effects: Sequence[object]) -> None: ...

    def moved(self, subject: object, source: str, target: str, cause: str) -> None: ...


class Unobserved:
    """Ignores every report: the default, and a base for observers that want only some."""

    def started(self, action: str, subject: object) -> None:
        pass

    def ended(self, action: str, subject: object, effects: Sequence[object]) -> None:
        pass

    def moved(self, subject: object, source: str, target: str, cause: str) -> None:
        pass


UNOBSERVED = Unobserved()
