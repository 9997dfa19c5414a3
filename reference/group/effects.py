"""The outputs of the group coordinator. A driver executes them in order."""

from __future__ import annotations

from dataclasses import dataclass

from reference.group.records import Record
from reference.group.responses import Response


@dataclass(frozen=True, slots=True)
class Reply:
    """Send ``response`` to the client that sent request ``request_id``."""

    request_id: int | str
    api: str
    api_version: int
    response: Response


@dataclass(frozen=True, slots=True)
class AppendRecords:
    """Append ``records`` to the group's ``__consumer_offsets`` partition, then answer
    with :class:`~reference.group.requests.AppendCompleted` carrying ``append_id``
    (unless the coordinator completes its own appends, the default)."""

    append_id: int
    group_id: str
    records: tuple[Record, ...]


Effect = Reply | AppendRecords
