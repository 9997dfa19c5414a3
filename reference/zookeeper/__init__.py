"""ZooKeeper (3.8) as a sans-IO model: the data tree, sessions and watches, as the real
server answers them (checked against it by tests/test_zookeeper_agreement.py).

Inputs are in :mod:`reference.zookeeper.events` (with operations from
:mod:`reference.zookeeper.ops`), outputs in :mod:`reference.zookeeper.effects` and
:mod:`reference.zookeeper.results`; :class:`ZooKeeperServer` connects them.
"""

from reference.zookeeper.codes import Code
from reference.zookeeper.config import ZooKeeperConfig
from reference.zookeeper.effects import Effect, EventType, Reply, SessionClosed, SessionExpired, SessionOpened, WatchFired
from reference.zookeeper.events import CloseSession, Event, OpenSession, Ping, Request, Tick
from reference.zookeeper.ops import Check, Create, Delete, Exists, GetChildren, GetData, Multi, Op, SetData
from reference.zookeeper.paths import is_valid_path
from reference.zookeeper.results import (
    CheckResult,
    CreateResult,
    DeleteResult,
    ErrorResult,
    ExistsResult,
    GetChildrenResult,
    GetDataResult,
    MultiResult,
    Result,
    SetDataResult,
    Stat,
)
from reference.zookeeper.server import ZooKeeperServer
from reference.zookeeper.sessions import SessionState

__all__ = [
    "Check",
    "CheckResult",
    "CloseSession",
    "Code",
    "Create",
    "CreateResult",
    "Delete",
    "DeleteResult",
    "Effect",
    "ErrorResult",
    "Event",
    "EventType",
    "Exists",
    "ExistsResult",
    "GetChildren",
    "GetChildrenResult",
    "GetData",
    "GetDataResult",
    "Multi",
    "MultiResult",
    "Op",
    "OpenSession",
    "Ping",
    "Reply",
    "Request",
    "Result",
    "SessionClosed",
    "SessionExpired",
    "SessionOpened",
    "SessionState",
    "SetData",
    "SetDataResult",
    "Stat",
    "Tick",
    "WatchFired",
    "ZooKeeperConfig",
    "ZooKeeperServer",
    "is_valid_path",
]
