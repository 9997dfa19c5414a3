"""The model's ZooKeeper operations as kazoo calls, and kazoo's answers as the model's results:
shared by the agreement executor (``executor.py``) and the brokers' sessions (``broker/cluster``).

``send`` covers the single operations kazoo sends as given; a caller sends a ``Multi`` its own
way (the executor as a raw request, so paths reach the server unchanged; a broker through
kazoo's ``transaction()``, which applies a chroot). ``result`` reads any answer, a multi's
included; ``stat`` says how a kazoo stat becomes the model's (the executor renames session
owners).
"""

from __future__ import annotations

from collections.abc import Callable

from kazoo.client import KazooClient
from kazoo.exceptions import RolledBackError
from kazoo.protocol.states import ZnodeStat

from coordspec.reference.zookeeper import (
    Check,
    CheckResult,
    Code,
    Create,
    CreateResult,
    Delete,
    DeleteResult,
    ErrorResult,
    Exists,
    ExistsResult,
    GetChildrenResult,
    GetData,
    GetDataResult,
    Multi,
    MultiResult,
    Result,
    SetData,
    SetDataResult,
    Stat,
)


def send(client: KazooClient, op, watch: Callable | None):
    """Send one operation that is not a Multi; what to wait on for its answer."""
    if isinstance(op, Create):
        return client.create_async(op.path, op.data, ephemeral=op.ephemeral, sequence=op.sequential)
    if isinstance(op, Delete):
        return client.delete_async(op.path, op.version)
    if isinstance(op, SetData):
        return client.set_async(op.path, op.data, op.version)
    if isinstance(op, GetData):
        return client.get_async(op.path, watch)
    if isinstance(op, Exists):
        return client.exists_async(op.path, watch)
    return client.get_children_async(op.path, watch, include_data=True)


def plain_stat(stat: ZnodeStat) -> Stat:
    return Stat(
        version=stat.version,
        cversion=stat.cversion,
        ephemeral_owner=stat.ephemeralOwner,
        data_length=stat.dataLength,
        num_children=stat.numChildren,
    )


def result(op, value, stat: Callable[[ZnodeStat], Stat] = plain_stat) -> Result:
    """kazoo's successful answer ``value`` to ``op`` as the model reports it. A failed multi
    does not raise in kazoo: every op's answer is an exception, the rolled-back ones
    RolledBackError (ZooKeeper's code 0), and the model's result names the first failure."""
    if isinstance(op, Multi):
        if any(isinstance(v, Exception) for v in value):
            results = tuple(
                ErrorResult(Code.OK if isinstance(v, RolledBackError) else Code(v.code))
                for v in value
            )
            return MultiResult(next(r.code for r in results if r.code != Code.OK), results)
        return MultiResult(
            Code.OK, tuple(result(o, v, stat) for o, v in zip(op.ops, value, strict=True))
        )
    if isinstance(op, Create):
        return CreateResult(Code.OK, value)
    if isinstance(op, Delete):
        return DeleteResult(Code.OK)
    if isinstance(op, SetData):
        return SetDataResult(Code.OK, stat(value))
    if isinstance(op, Check):
        return CheckResult(Code.OK)
    if isinstance(op, GetData):
        data, node = value
        return GetDataResult(Code.OK, data, stat(node))
    if isinstance(op, Exists):
        return ExistsResult(Code.NONODE) if value is None else ExistsResult(Code.OK, stat(value))
    children, node = value
    return GetChildrenResult(Code.OK, tuple(sorted(children)), stat(node))
