"""What ZooKeeper answers to each operation: a :class:`Code` and, on success, the values.

``Stat`` carries the fields the model keeps: not zxids or times, which depend on the
server's history and clock. ``cversion`` is what ZooKeeper reports: the number of child
creations and deletions (it stores only creations, and reports ``2*created - children``).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from coordspec.reference.errors import UsageError
from coordspec.reference.frozen import quicken
from coordspec.reference.zookeeper.codes import Code
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


@dataclass(frozen=True, slots=True)
class Stat:
    version: int
    cversion: int
    ephemeral_owner: int  # the owning session's id; 0 for a persistent node
    data_length: int
    num_children: int


@dataclass(frozen=True, slots=True)
class CreateResult:
    code: Code
    path: str | None = None  # the created path, with the sequential suffix


@dataclass(frozen=True, slots=True)
class DeleteResult:
    code: Code


@dataclass(frozen=True, slots=True)
class SetDataResult:
    code: Code
    stat: Stat | None = None


@dataclass(frozen=True, slots=True)
class CheckResult:
    code: Code


@dataclass(frozen=True, slots=True)
class GetDataResult:
    code: Code
    data: bytes | None = None
    stat: Stat | None = None


@dataclass(frozen=True, slots=True)
class ExistsResult:
    code: Code  # NONODE when absent
    stat: Stat | None = None


@dataclass(frozen=True, slots=True)
class GetChildrenResult:
    code: Code
    children: tuple[str, ...] = ()  # sorted: ZooKeeper's order is a hash set's
    stat: Stat | None = None


@dataclass(frozen=True, slots=True)
class ErrorResult:
    """One operation of a failed Multi: OK if rolled back, the failing operation's code,
    RUNTIMEINCONSISTENCY for those after it (never tried)."""

    code: Code


@dataclass(frozen=True, slots=True)
class MultiResult:
    code: Code  # OK, or the code of the operation that failed
    results: tuple[
        CreateResult | DeleteResult | SetDataResult | CheckResult | ErrorResult, ...
    ] = ()


Result = (
    CreateResult
    | DeleteResult
    | SetDataResult
    | CheckResult
    | GetDataResult
    | ExistsResult
    | GetChildrenResult
    | MultiResult
)

_RESULT_OF: dict[type, Callable[[Code], Result]] = {
    Create: CreateResult,
    Delete: DeleteResult,
    SetData: SetDataResult,
    Check: CheckResult,
    GetData: GetDataResult,
    Exists: ExistsResult,
    GetChildren: GetChildrenResult,
    Multi: MultiResult,
}


def failure(op: Op, code: Code) -> Result:
    """The result of ``op`` when it fails as a whole with ``code``."""
    return _RESULT_OF[type(op)](code)


def failed_multi(size: int, index: int, code: Code) -> MultiResult:
    """ZooKeeper's answer when op ``index`` of a ``size``-op Multi failed with ``code``."""
    results = (
        [ErrorResult(Code.OK)] * index
        + [ErrorResult(code)]
        + [ErrorResult(Code.RUNTIMEINCONSISTENCY)] * (size - index - 1)
    )
    return MultiResult(code, tuple(results))


R = TypeVar("R", bound=Result | ErrorResult)


def expect(kind: type[R], result: Result | ErrorResult) -> R:
    """``result`` as the ``kind`` its operation is answered with. Every driver answers an
    operation with its own kind, failures too (:func:`failure`): another kind is a driver's
    mistake."""
    if not isinstance(result, kind):
        raise UsageError(f"expected a {kind.__name__}, got {result!r}")
    return result


def data_of(result: Result) -> bytes:
    """The data of a successful GetData."""
    data = expect(GetDataResult, result).data
    if data is None:
        raise UsageError(f"expected a GetDataResult with data, got {result!r}")
    return data


def stat_of(result: Result | ErrorResult) -> Stat:
    """The stat of a successful read or SetData (alone or in a Multi)."""
    if not isinstance(result, (SetDataResult, GetDataResult, ExistsResult, GetChildrenResult)):
        raise UsageError(f"expected a result with a stat, got {result!r}")
    if result.stat is None:
        raise UsageError(f"expected a {type(result).__name__} with a stat, got {result!r}")
    return result.stat


quicken(globals())  # cheaper constructors (reference/frozen.py)
