"""ZooKeeper (3.8) as a sans-IO model: the data tree, sessions and watches, as the real
server answers them (checked against it by tests/broker/test_zookeeper_agreement.py).

Inputs are in :mod:`coordspec.reference.zookeeper.events` (with operations from
:mod:`coordspec.reference.zookeeper.ops`), outputs in :mod:`coordspec.reference.zookeeper.effects` and
:mod:`coordspec.reference.zookeeper.results`; :class:`ZooKeeperServer` connects them.
"""

from coordspec.reference.zookeeper.codes import Code
from coordspec.reference.zookeeper.config import ZooKeeperConfig
from coordspec.reference.zookeeper.effects import (
    Effect,
    EventType,
    Reply,
    SessionClosed,
    SessionExpired,
    SessionOpened,
    WatchFired,
)
from coordspec.reference.zookeeper.events import (
    CloseSession,
    Event,
    OpenSession,
    Ping,
    Request,
    Tick,
)
from coordspec.reference.zookeeper.ops import (
    Check,
    Create,
    Delete,
    Exists,
    GetChildren,
    GetData,
    Multi,
    Op,
    SetData,
)
from coordspec.reference.zookeeper.paths import is_valid_path
from coordspec.reference.zookeeper.results import (
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
from coordspec.reference.zookeeper.server import ZooKeeperServer
from coordspec.reference.zookeeper.sessions import SessionState

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
