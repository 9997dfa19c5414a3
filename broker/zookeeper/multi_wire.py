"""A Multi as the executor sends it: the request's bytes built at once, and its answer
read straight into the model's result (:func:`read`) or, for a failed multi, into kazoo's
values (:func:`decode`, what ``kazoo_calls.result`` reads).

kazoo's ``Transaction`` builds a namedtuple and a bytearray per operation in its
connection thread, and a ``MultiHeader`` per answer: for a failover's 10,000
partition-state writes that cost more than ZooKeeper's own work on them
(benchmarks/failover_10k.py). The bytes are jute's layout, the same as ``Transaction``
sends and reads (tests/broker/test_zookeeper_multi_wire.py compares them).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence

from kazoo.exceptions import EXCEPTIONS
from kazoo.protocol.serialization import Transaction, read_string
from kazoo.protocol.states import ZnodeStat
from kazoo.security import OPEN_ACL_UNSAFE

from coordspec.reference.errors import UsageError
from coordspec.reference.zookeeper import (
    Check,
    CheckResult,
    Code,
    Create,
    CreateResult,
    Delete,
    DeleteResult,
    MultiResult,
    SetData,
    SetDataResult,
    Stat,
)
from coordspec.reference.zookeeper.ops import WriteOp

_SEQUENTIAL, _EPHEMERAL = 2, 1  # CreateMode flags
_INT = struct.Struct("!i")
_HEADER = struct.Struct("!iBi")  # MultiHeader: type, done, err
_STAT = struct.Struct("!qqqqiiiqiiq")
# A stat's fields the model keeps: version, cversion, ephemeralOwner, dataLength, numChildren.
_STAT_FIELDS = struct.Struct("!32xii4xqii8x")
StatFields = tuple[int, int, int, int, int]
_CREATE, _DELETE, _SET_DATA, _CHECK, _ERROR = 1, 2, 5, 13, -1
_END = _HEADER.pack(-1, True, -1)


def _string(value: str) -> bytes:
    data = value.encode()
    return _INT.pack(len(data)) + data


_OPEN_ACL = _INT.pack(len(OPEN_ACL_UNSAFE)) + b"".join(
    _INT.pack(acl.perms) + _string(acl.id.scheme) + _string(acl.id.id) for acl in OPEN_ACL_UNSAFE
)
_HEADS = {kind: _HEADER.pack(kind, False, -1) for kind in (_CREATE, _DELETE, _SET_DATA, _CHECK)}


def create_flags(op: Create) -> int:
    return (_EPHEMERAL if op.ephemeral else 0) | (_SEQUENTIAL if op.sequential else 0)


def encode(ops: Sequence[WriteOp], paths: Sequence[str]) -> bytes:
    """The body of a multi request of ``ops``, each sent with the path in ``paths``."""
    parts: list[bytes] = []
    add = parts.extend
    pack = _INT.pack
    for op, path in zip(ops, paths, strict=True):
        name = path.encode()
        if isinstance(op, SetData):
            add((_HEADS[_SET_DATA], pack(len(name)), name, pack(len(op.data)), op.data))
            parts.append(pack(op.version))
        elif isinstance(op, Create):
            add((_HEADS[_CREATE], pack(len(name)), name, pack(len(op.data)), op.data))
            add((_OPEN_ACL, pack(create_flags(op))))
        elif isinstance(op, Delete):
            add((_HEADS[_DELETE], pack(len(name)), name, pack(op.version)))
        elif isinstance(op, Check):
            add((_HEADS[_CHECK], pack(len(name)), name, pack(op.version)))
        else:
            raise UsageError(f"multi_wire: {type(op).__name__} is not a write operation")
    parts.append(_END)
    return b"".join(parts)


def decode(buffer: bytes, offset: int) -> list:
    """The answer to a multi, as kazoo's ``Transaction.deserialize`` gives it: per
    operation its path (Create), True (Delete, Check), a ZnodeStat (SetData), or the
    exception of its error code (every operation of a failed multi)."""
    results: list = []
    header, stat, number = _HEADER.unpack_from, _STAT.unpack_from, _INT.unpack_from
    make_stat = ZnodeStat._make
    while True:
        kind, done, _ = header(buffer, offset)
        offset += _HEADER.size
        if done == 1:
            return results
        if kind == _SET_DATA:
            results.append(make_stat(stat(buffer, offset)))
            offset += _STAT.size
        elif kind == _CREATE:
            path, offset = read_string(buffer, offset)
            results.append(path)
        elif kind in (_DELETE, _CHECK):
            results.append(True)
        elif kind == _ERROR:
            results.append(EXCEPTIONS[number(buffer, offset)[0]]())
            offset += _INT.size
        else:
            raise ValueError(f"multi_wire: an answer of type {kind} in a multi's response")


_CHECKED, _DELETED = CheckResult(Code.OK), DeleteResult(Code.OK)


def read(
    answer: bytes, stat: Callable[[StatFields], Stat], unchroot: Callable[[str], str]
) -> MultiResult | None:
    """The answer to a successful multi as the model's result, without kazoo's values;
    None for a failed multi (:func:`decode` reads those). ``stat`` gives the model's stat
    of a stat's fields, ``unchroot`` the path a Create answer names. Equal answers share
    one result object: a failover's thousands of SetData answers hold a handful of
    distinct stats."""
    results: list[CreateResult | DeleteResult | SetDataResult | CheckResult] = []
    shared: dict[StatFields, SetDataResult] = {}
    header, fields = _HEADER.unpack_from, _STAT_FIELDS.unpack_from
    offset = 0
    while True:
        kind, done, _ = header(answer, offset)
        offset += _HEADER.size
        if done == 1:
            return MultiResult(Code.OK, tuple(results))
        if kind == _SET_DATA:
            key = fields(answer, offset)
            offset += _STAT.size
            result = shared.get(key)
            if result is None:
                result = shared[key] = SetDataResult(Code.OK, stat(key))
            results.append(result)
        elif kind == _CHECK:
            results.append(_CHECKED)
        elif kind == _CREATE:
            path, offset = read_string(answer, offset)
            results.append(CreateResult(Code.OK, unchroot(path)))
        elif kind == _DELETE:
            results.append(_DELETED)
        elif kind == _ERROR:
            return None  # a failed multi answers every op with an error
        else:
            raise ValueError(f"multi_wire: an answer of type {kind} in a multi's response")


class MultiRequest:
    """A multi for kazoo's connection (``client._call``): what it needs of a request."""

    __slots__ = ("body",)
    type = Transaction.type

    def __init__(self, ops: Sequence[WriteOp], paths: Sequence[str]) -> None:
        self.body = encode(ops, paths)

    def serialize(self) -> bytes:
        return self.body

    @staticmethod
    def deserialize(buffer: bytes, offset: int) -> list[bytes]:
        """The answer's bytes, for :func:`read` or :func:`decode` on the thread that waits
        for them. kazoo's connection copies a multi's answer item by item
        (``Transaction.unchroot``): as one item, a copy of thousands is spared."""
        return [buffer[offset:]]
