"""ZooKeeper's result codes (``KeeperException.Code``), by the names ZooKeeper gives them.

A failed operation is a normal outcome: its result carries one of these. Inside a failed
``Multi`` the operations before the failing one report ``OK`` (ZooKeeper's wire value for
"rolled back"; kazoo raises ``RolledBackError`` for it).
"""

from __future__ import annotations

from enum import IntEnum


class Code(IntEnum):
    OK = 0
    SYSTEMERROR = -1
    RUNTIMEINCONSISTENCY = -2
    DATAINCONSISTENCY = -3
    CONNECTIONLOSS = -4
    MARSHALLINGERROR = -5
    UNIMPLEMENTED = -6
    OPERATIONTIMEOUT = -7
    BADARGUMENTS = -8
    UNKNOWNSESSION = -12
    APIERROR = -100
    NONODE = -101
    NOAUTH = -102
    BADVERSION = -103
    NOCHILDRENFOREPHEMERALS = -108
    NODEEXISTS = -110
    NOTEMPTY = -111
    SESSIONEXPIRED = -112
    INVALIDACL = -114
    AUTHFAILED = -115
    SESSIONMOVED = -118


class KeeperError(Exception):
    """Raised inside the model to abandon an operation with ZooKeeper's code; never escapes
    :meth:`ZooKeeperServer.handle`, which turns it into a result."""

    def __init__(self, code: Code) -> None:
        super().__init__(code.name)
        self.code = code
