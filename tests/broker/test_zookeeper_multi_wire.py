"""multi_wire writes and reads a Multi exactly as kazoo's Transaction does."""

from __future__ import annotations

import struct

from kazoo.exceptions import BadVersionError, RolledBackError, RuntimeInconsistency
from kazoo.protocol.serialization import CheckVersion, Transaction
from kazoo.protocol.serialization import Create as KCreate
from kazoo.protocol.serialization import Delete as KDelete
from kazoo.protocol.serialization import SetData as KSetData
from kazoo.security import OPEN_ACL_UNSAFE

from coordspec.broker.zookeeper.multi_wire import MultiRequest, decode, encode
from coordspec.reference.zookeeper import Check, Create, Delete, SetData

OPS = (
    Check("/controller_epoch", 3),
    SetData("/brokers/topics/t/partitions/0/state", b'{"leader":1}', 7),
    SetData("/a", b"", -1),
    Create("/b", b"data"),
    Create("/b/e", ephemeral=True),
    Create("/b/s-", b"x", sequential=True),
    Create("/b/es-", ephemeral=True, sequential=True),
    Create("/ünï/cödé", "ö".encode()),
    Delete("/b/e", 2),
    Delete("/b", -1),
)
KAZOO = (
    CheckVersion("/chroot/controller_epoch", 3),
    KSetData("/chroot/brokers/topics/t/partitions/0/state", b'{"leader":1}', 7),
    KSetData("/chroot/a", b"", -1),
    KCreate("/chroot/b", b"data", OPEN_ACL_UNSAFE, 0),
    KCreate("/chroot/b/e", b"", OPEN_ACL_UNSAFE, 1),
    KCreate("/chroot/b/s-", b"x", OPEN_ACL_UNSAFE, 2),
    KCreate("/chroot/b/es-", b"", OPEN_ACL_UNSAFE, 3),
    KCreate("/chroot/ünï/cödé", "ö".encode(), OPEN_ACL_UNSAFE, 0),
    KDelete("/chroot/b/e", 2),
    KDelete("/chroot/b", -1),
)


def test_a_multi_is_sent_as_kazoos_transaction():
    paths = ["/chroot" + op.path for op in OPS]
    assert encode(OPS, paths) == bytes(Transaction(KAZOO).serialize())
    request = MultiRequest(OPS, paths)
    assert (request.type, request.serialize()) == (Transaction.type, encode(OPS, paths))


def _header(kind: int, done: bool = False, err: int = -1) -> bytes:
    return struct.pack("!iBi", kind, done, err)


def test_an_answer_reads_as_kazoos():
    stat = struct.pack("!qqqqiiiqiiq", 10, 11, 12, 13, 4, 5, 6, 0x1234, 62, 0, 14)
    path = b"/chroot/b/s-0000000001"
    answer = (
        b"\x00\x00\x00\x2a"  # what precedes the body in the buffer: read from the offset
        + _header(13)
        + _header(5)
        + stat
        + _header(1)
        + struct.pack("!i", len(path))
        + path
        + _header(2)
        + _header(-1, True, -1)
    )
    ours = decode(answer, 4)
    assert ours == Transaction.deserialize(answer, 4)
    assert ours[0] is True and ours[1].version == 4 and ours[2] == "/chroot/b/s-0000000001"


def test_a_failed_multi_reads_as_kazoos():
    answer = b"".join(
        _header(-1, False, -1) + struct.pack("!i", code) for code in (0, -103, -2)
    ) + _header(-1, True, -1)
    ours, theirs = decode(answer, 0), Transaction.deserialize(answer, 0)
    assert [type(e) for e in ours] == [type(e) for e in theirs]
    assert [type(e) for e in ours] == [RolledBackError, BadVersionError, RuntimeInconsistency]
