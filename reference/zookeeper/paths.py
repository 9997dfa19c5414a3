"""ZooKeeper's path rules (``org.apache.zookeeper.common.PathUtils``, ZooKeeper 3.8).

The server does not validate every path the same way, and the model follows it:

* ``SetData`` and ``Check`` reject an invalid path with BADARGUMENTS before anything else;
* ``Create`` rejects a path with no ``/`` or with a NUL, then looks up the parent (NONODE),
  and validates the full path (with the sequential suffix appended) only after that, so
  ``/a//b`` is NONODE and ``/a/`` is BADARGUMENTS once ``/a`` exists (and, sequential,
  creates ``/a/0000000003``);
* ``Delete`` rejects a path with no ``/``, a NUL or a reserved path, then only looks up;
* reads only look up (``Exists`` also rejects a NUL): an invalid path is NONODE.

Clients usually validate before sending (the Java client throws IllegalArgumentException;
kazoo normalises ``//`` and a trailing ``/`` away and refuses ``.``/``..`` segments), so
most of these answers are only seen by a client that sends the path as it is.
"""

from __future__ import annotations

from coordspec.reference.errors import UsageError

ROOT = "/"
SYSTEM_PATHS = ("/zookeeper", "/zookeeper/quota", "/zookeeper/config")


def is_valid_path(path: str) -> bool:
    """PathUtils.validatePath: absolute, no trailing ``/``, no empty, ``.`` or ``..``
    segment, no NUL, control or reserved character. Characters are UTF-16 units, as in
    Java: any code point above U+FFFF is a surrogate pair there, and invalid."""
    if not path or path[0] != "/":
        return False
    if len(path) == 1:
        return True
    if path[-1] == "/":
        return False
    last = "/"
    for i in range(1, len(path)):
        c = path[i]
        code = ord(c)
        if code == 0:
            return False
        if c == "/" and last == "/":
            return False
        if c == "." and last == ".":
            if path[i - 2] == "/" and (i + 1 == len(path) or path[i + 1] == "/"):
                return False
        elif c == ".":
            if path[i - 1] == "/" and (i + 1 == len(path) or path[i + 1] == "/"):
                return False
        elif 0 < code <= 0x1F or 0x7F <= code <= 0x9F or 0xD800 <= code <= 0xF8FF or code >= 0xFFF0:
            return False
        last = c
    return True


def split(path: str) -> tuple[str, str] | None:
    """(parent, name) as the server cuts a path at its last ``/``; the parent of ``/x``
    is ``""``, which the data tree resolves to the root. None if there is no ``/``."""
    cut = path.rfind("/")
    if cut == -1:
        return None
    return path[:cut], path[cut + 1 :]


def split_node(path: str) -> tuple[str, str]:
    """:func:`split` of the path of a node, which always holds a ``/``."""
    cut = split(path)
    if cut is None:
        raise UsageError(f"{path!r} names no node: it holds no '/'")
    return cut


def watch_path(parent: str) -> str:
    """The path a NodeChildrenChanged event names for a parent cut by :func:`split`."""
    return parent or ROOT
