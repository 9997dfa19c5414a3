"""ZooKeeper's data tree, and transactions staged against it (ZooKeeper's outstanding
change records): a transaction sees its own changes, and applies all of them or none.

Each write follows the order of checks in ZooKeeper 3.8's ``PrepRequestProcessor``, which
decides which code a request with several faults gets.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field

from coordspec.reference.zookeeper import paths
from coordspec.reference.zookeeper.codes import Code, KeeperError
from coordspec.reference.zookeeper.effects import EventType
from coordspec.reference.zookeeper.ops import Check, Create, Delete, SetData, WriteOp
from coordspec.reference.zookeeper.results import (
    CheckResult,
    CreateResult,
    DeleteResult,
    SetDataResult,
    Stat,
)


@dataclass(slots=True)
class Node:
    data: bytes
    version: int = 0
    # What ZooKeeper stores as cversion: child creations only. It names sequential
    # children after it, and reports cversion as 2 * created - current children.
    children_created: int = 0
    ephemeral_owner: int = 0
    children: set[str] = field(default_factory=set)
    read_only: bool = False  # /zookeeper/config: its ACL grants READ only

    def stat(self) -> Stat:
        return Stat(
            version=self.version,
            cversion=2 * self.children_created - len(self.children),
            ephemeral_owner=self.ephemeral_owner,
            data_length=len(self.data),
            num_children=len(self.children),
        )

    def copy(self) -> Node:
        return dataclasses.replace(self, children=set(self.children))


class DataTree:
    """The nodes by path. ``system_nodes``: start as a fresh server does, with
    /zookeeper, /zookeeper/quota and /zookeeper/config; without them the root is empty,
    as a client below a chroot sees it."""

    def __init__(self, *, system_nodes: bool = True) -> None:
        self.nodes: dict[str, Node] = {paths.ROOT: Node(b"")}
        self.ephemerals: dict[int, set[str]] = {}
        self.special_paths = frozenset({paths.ROOT, *(paths.SYSTEM_PATHS if system_nodes else ())})
        if system_nodes:
            for path in paths.SYSTEM_PATHS:
                parent, name = paths.split_node(path)
                self.nodes[parent or paths.ROOT].children.add(name)
                self.nodes[path] = Node(b"", read_only=path == "/zookeeper/config")

    def node(self, path: str) -> Node | None:
        """ZooKeeper's lookup: the exact path, except that ``""`` is also the root."""
        return self.nodes.get(path or paths.ROOT)

    def snapshot(self) -> dict[str, tuple[bytes, Stat]]:
        return {path: (node.data, node.stat()) for path, node in self.nodes.items()}


def _check_version(node: Node, expected: int) -> None:
    if expected != -1 and expected != node.version:
        raise KeeperError(Code.BADVERSION)


class Txn:
    """Changes by ``session_id`` staged against ``tree``; :meth:`commit` applies them and
    returns the watch events they trigger, in order."""

    def __init__(self, tree: DataTree, session_id: int) -> None:
        self.tree = tree
        self.session_id = session_id
        self._staged: dict[str, Node | None] = {}  # None: deleted
        self._events: list[tuple[str, EventType]] = []

    def _get(self, path: str) -> Node | None:
        key = path or paths.ROOT
        if key in self._staged:
            return self._staged[key]
        return self.tree.nodes.get(key)

    def _existing(self, path: str) -> Node:
        node = self._get(path)
        if node is None:
            raise KeeperError(Code.NONODE)
        return node

    def _writable(self, path: str) -> Node:
        key = path or paths.ROOT
        node = self._staged.get(key)
        if node is None:
            node = self._existing(key).copy()
            self._staged[key] = node
        return node

    def apply(self, op: WriteOp) -> CreateResult | DeleteResult | SetDataResult | CheckResult:
        """Stage ``op``; raise :class:`KeeperError` (staging nothing) if it fails."""
        if isinstance(op, Create):
            return self._create(op)
        if isinstance(op, Delete):
            return self._delete(op)
        if isinstance(op, SetData):
            return self._set_data(op)
        return self._check(op)

    def _create(self, op: Create) -> CreateResult:
        cut = paths.split(op.path)
        if cut is None or "\0" in op.path:
            raise KeeperError(Code.BADARGUMENTS)
        parent_path, _ = cut
        parent = self._existing(parent_path)
        if parent.read_only:
            raise KeeperError(Code.NOAUTH)
        path = op.path + (f"{parent.children_created:010d}" if op.sequential else "")
        if not paths.is_valid_path(path):
            raise KeeperError(Code.BADARGUMENTS)
        if self._get(path) is not None:
            raise KeeperError(Code.NODEEXISTS)
        if parent.ephemeral_owner:
            raise KeeperError(Code.NOCHILDRENFOREPHEMERALS)
        parent = self._writable(parent_path)
        parent.children_created += 1
        parent.children.add(paths.split_node(path)[1])
        self._staged[path] = Node(op.data, ephemeral_owner=self.session_id if op.ephemeral else 0)
        self._events += [
            (path, EventType.NodeCreated),
            (paths.watch_path(parent_path), EventType.NodeChildrenChanged),
        ]
        return CreateResult(Code.OK, path)

    def _delete(self, op: Delete) -> DeleteResult:
        cut = paths.split(op.path)
        if cut is None or "\0" in op.path or op.path in self.tree.special_paths:
            raise KeeperError(Code.BADARGUMENTS)
        parent_path, _ = cut
        self._existing(parent_path)
        node = self._existing(op.path)
        _check_version(node, op.version)
        if node.children:
            raise KeeperError(Code.NOTEMPTY)
        self.remove(op.path)
        return DeleteResult(Code.OK)

    def remove(self, path: str) -> None:
        """Delete an existing, childless node without checks (a session's ephemerals)."""
        parent_path, name = paths.split_node(path)
        self._writable(parent_path).children.discard(name)
        self._staged[path] = None
        self._events += [
            (path, EventType.NodeDeleted),
            (paths.watch_path(parent_path), EventType.NodeChildrenChanged),
        ]

    def _set_data(self, op: SetData) -> SetDataResult:
        if not paths.is_valid_path(op.path):
            raise KeeperError(Code.BADARGUMENTS)
        node = self._existing(op.path)
        if node.read_only:
            raise KeeperError(Code.NOAUTH)
        _check_version(node, op.version)
        node = self._writable(op.path)
        node.data = op.data
        node.version += 1
        self._events.append((op.path, EventType.NodeDataChanged))
        return SetDataResult(Code.OK, node.stat())

    def _check(self, op: Check) -> CheckResult:
        if not paths.is_valid_path(op.path):
            raise KeeperError(Code.BADARGUMENTS)
        _check_version(self._existing(op.path), op.version)
        return CheckResult(Code.OK)

    def commit(self) -> list[tuple[str, EventType]]:
        tree = self.tree
        for path, node in self._staged.items():
            before = tree.nodes.get(path)
            if before is not None and before.ephemeral_owner:
                owned = tree.ephemerals[before.ephemeral_owner]
                owned.discard(path)
                if not owned:
                    del tree.ephemerals[before.ephemeral_owner]
            if node is None:
                tree.nodes.pop(path, None)  # it may have been created in this transaction
            else:
                tree.nodes[path] = node
                if node.ephemeral_owner:
                    tree.ephemerals.setdefault(node.ephemeral_owner, set()).add(path)
        events, self._staged, self._events = self._events, {}, []
        return events
