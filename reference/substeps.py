"""Named sub-steps within one step of a model, for observers that must see between them.

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

A sub-step cut short by an exception is not reported as ended.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol


class SubStepObserver(Protocol):
    def started(self, action: str, subject: object) -> None: ...

    def ended(self, action: str, subject: object, effects: Sequence[object]) -> None: ...


class Unobserved:
    """The default: nobody looks inside a step."""

    def started(self, action: str, subject: object) -> None:
        pass

    def ended(self, action: str, subject: object, effects: Sequence[object]) -> None:
        pass


UNOBSERVED = Unobserved()
