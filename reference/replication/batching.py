"""How many writes fit in one ZooKeeper multi: a byte budget under ZooKeeper's request
limit (``jute.maxbuffer``, 1,048,575 bytes by default; a larger request makes the server
drop the connection and apply nothing).

The size of a multi request is computed as ZooKeeper's jute serialisation lays it out:
each op is a ``MultiHeader`` (type, done, err: 9 bytes) and its request record (strings
and buffers carry a 4-byte length). Measured on ZooKeeper 3.8 with kazoo: a SetData of a
62-byte state on ``/brokers/topics/t/partitions/N/state`` costs ~124 bytes.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TypeVar

from coordspec.reference.errors import UsageError
from coordspec.reference.zookeeper import Check, Create, Delete, SetData
from coordspec.reference.zookeeper.ops import WriteOp

JUTE_MAXBUFFER = 0xFFFFF
DEFAULT_MULTI_BYTE_BUDGET = 512 * 1024  # half the limit: room for the headers we do not count
_HEADER = 9  # MultiHeader: int type, bool done, int err
_REQUEST_OVERHEAD = 4 + 4 + 4 + _HEADER  # length prefix, xid, type; the closing MultiHeader
K = TypeVar("K")
_OPEN_ACL = 4 + 4 + (4 + len("world")) + (4 + len("anyone"))  # one ACL: perms, scheme, id


def op_bytes(op: WriteOp) -> int:
    path = 4 + len(op.path.encode())
    if isinstance(op, SetData):
        return _HEADER + path + 4 + len(op.data) + 4
    if isinstance(op, Create):
        return _HEADER + path + 4 + len(op.data) + 4 + _OPEN_ACL + 4
    if isinstance(op, (Delete, Check)):
        return _HEADER + path + 4
    raise UsageError(f"op_bytes: {type(op).__name__} is not a write operation")


def multi_bytes(ops: Iterable[WriteOp]) -> int:
    return _REQUEST_OVERHEAD + sum(op_bytes(op) for op in ops)


def pack(
    head: tuple[WriteOp, ...], groups: Iterable[tuple[K, tuple[WriteOp, ...]]], budget: int
) -> Iterator[tuple[list[K], tuple[WriteOp, ...]]]:
    """Pack keyed ``groups`` of ops (a group stays whole, in order) into multis that each
    start with ``head`` and stay within ``budget`` bytes; yield each multi's keys and ops."""
    fixed = multi_bytes(head)
    keys: list[K] = []
    ops: list[WriteOp] = []
    size = fixed
    for key, group in groups:
        # most groups are one state write: spare them sum() and map()
        cost = op_bytes(group[0]) if len(group) == 1 else sum(map(op_bytes, group))
        if fixed + cost > budget:
            raise UsageError(
                f"pack: a group of {len(group)} ops ({cost} bytes) does not fit a budget of {budget} bytes"
            )
        if ops and size + cost > budget:
            yield keys, head + tuple(ops)
            keys, ops, size = [], [], fixed
        keys.append(key)
        ops += group
        size += cost
    if ops:
        yield keys, head + tuple(ops)


def max_ops_per_multi(
    budget: int = DEFAULT_MULTI_BYTE_BUDGET, path_bytes: int = 40, data_bytes: int = 80
) -> int:
    """How many partition-state writes fit in one multi after the epoch check, for states
    of ``data_bytes`` on paths of ``path_bytes`` (Kafka's state JSON is ~70 bytes)."""
    head = _REQUEST_OVERHEAD + _HEADER + 4 + len("/controller_epoch") + 4
    return (budget - head) // (_HEADER + 4 + path_bytes + 4 + data_bytes + 4)
