"""The outputs of the group coordinator. A driver executes them in order."""

from __future__ import annotations

from dataclasses import dataclass, field

from coordspec.reference.frozen import quicken
from coordspec.reference.group.records import Record
from coordspec.reference.group.responses import Response


@dataclass(frozen=True, slots=True)
class Reply:
    """Send ``response`` to the client that sent request ``request_id``. ``after_append``: the
    append whose successful completion released it (Kafka answers only once that write is
    done), so a broker that gave this answer has that write, and every one before it, in its log."""

    request_id: int | str
    api: str
    api_version: int
    response: Response
    after_append: int | None = field(default=None, compare=False)


@dataclass(frozen=True, slots=True)
class AppendRecords:
    """Append ``records`` to the group's ``__consumer_offsets`` partition, then answer
    with :class:`~coordspec.reference.group.requests.AppendCompleted` carrying ``append_id``
    (unless the coordinator completes its own appends, the default)."""

    append_id: int
    group_id: str
    records: tuple[Record, ...]


Effect = Reply | AppendRecords


quicken(globals())  # cheaper constructors (reference/frozen.py)
