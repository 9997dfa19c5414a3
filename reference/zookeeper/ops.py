"""ZooKeeper's operations, as the client sends them (paths exactly as sent, see
:mod:`coordspec.reference.zookeeper.paths`). ``version=-1`` matches any version, as in ZooKeeper.

Malformed field *types* raise :class:`UsageError`; invalid *values* a client can send (a
bad path, a stale version) are answered with ZooKeeper's codes.
"""

from __future__ import annotations

from dataclasses import dataclass

from coordspec.reference.errors import UsageError
from coordspec.reference.frozen import quicken

_INT32 = range(-(2**31), 2**31)

# The checks run for every operation built (a failover builds one per partition), so
# each message is formatted only when the check fails. The ops a failover builds first
# test their common case (exact types) in one expression, without a call; the checks
# proper then decide whatever else was given.


def _check_path(op: str, path: object) -> None:
    if not isinstance(path, str):
        raise UsageError(f"{op}: path must be a str, got {path!r}")


def _check_data(op: str, data: object) -> None:
    if not isinstance(data, bytes):
        raise UsageError(f"{op}: data must be bytes, got {type(data).__name__}")


def _check_version(op: str, version: object) -> None:
    if not (isinstance(version, int) and not isinstance(version, bool) and version in _INT32):
        raise UsageError(f"{op}: version must be a 32-bit int (-1: any), got {version!r}")


def _check_flag(op: str, name: str, value: object) -> None:
    if not isinstance(value, bool):
        raise UsageError(f"{op}: {name} must be a bool, got {value!r}")


@dataclass(frozen=True, slots=True)
class Create:
    """Create ``path``; ``sequential`` appends the parent's 10-digit child counter."""

    path: str
    data: bytes = b""
    ephemeral: bool = False
    sequential: bool = False

    def __post_init__(self) -> None:
        _check_path("Create", self.path)
        _check_data("Create", self.data)
        _check_flag("Create", "ephemeral", self.ephemeral)
        _check_flag("Create", "sequential", self.sequential)


@dataclass(frozen=True, slots=True)
class Delete:
    path: str
    version: int = -1

    def __post_init__(self) -> None:
        _check_path("Delete", self.path)
        _check_version("Delete", self.version)


@dataclass(frozen=True, slots=True)
class SetData:
    path: str
    data: bytes
    version: int = -1

    def __post_init__(self) -> None:
        if (
            type(self.path) is str
            and type(self.data) is bytes
            and type(self.version) is int
            and -(2**31) <= self.version < 2**31
        ):
            return
        _check_path("SetData", self.path)
        _check_data("SetData", self.data)
        _check_version("SetData", self.version)


@dataclass(frozen=True, slots=True)
class Check:
    """Succeeds iff ``path`` exists at ``version``. ZooKeeper 3.8 only accepts it in a Multi."""

    path: str
    version: int

    def __post_init__(self) -> None:
        if (
            type(self.path) is str
            and type(self.version) is int
            and -(2**31) <= self.version < 2**31
        ):
            return
        _check_path("Check", self.path)
        _check_version("Check", self.version)


@dataclass(frozen=True, slots=True)
class GetData:
    path: str
    watch: bool = False  # a data watch: NodeDataChanged or NodeDeleted

    def __post_init__(self) -> None:
        _check_path("GetData", self.path)
        _check_flag("GetData", "watch", self.watch)


@dataclass(frozen=True, slots=True)
class Exists:
    path: str
    watch: bool = False  # a data watch, set even when the node is absent: then NodeCreated

    def __post_init__(self) -> None:
        _check_path("Exists", self.path)
        _check_flag("Exists", "watch", self.watch)


@dataclass(frozen=True, slots=True)
class GetChildren:
    path: str
    watch: bool = False  # a child watch: NodeChildrenChanged or NodeDeleted

    def __post_init__(self) -> None:
        _check_path("GetChildren", self.path)
        _check_flag("GetChildren", "watch", self.watch)


WriteOp = Create | Delete | SetData | Check
ReadOp = GetData | Exists | GetChildren
WRITE_OPS = (Create, Delete, SetData, Check)
_WRITE_TYPES = frozenset(WRITE_OPS)


@dataclass(frozen=True, slots=True)
class Multi:
    """Write operations applied atomically: all of them or none."""

    ops: tuple[WriteOp, ...]

    def __post_init__(self) -> None:
        if isinstance(self.ops, list):
            object.__setattr__(self, "ops", tuple(self.ops))
        if not isinstance(self.ops, tuple):
            raise UsageError(f"Multi: ops must be a tuple, got {type(self.ops).__name__}")
        if _WRITE_TYPES.issuperset(map(type, self.ops)):
            return  # a failover's multi holds thousands of ops: their types tested in C
        for op in self.ops:
            if not isinstance(op, WRITE_OPS):
                raise UsageError(
                    f"Multi: {type(op).__name__} is not a write operation (Create, Delete, SetData, Check)"
                )


Op = WriteOp | ReadOp | Multi
OPS = (*WRITE_OPS, GetData, Exists, GetChildren, Multi)


quicken(globals())  # cheaper constructors (reference/frozen.py)
