"""KazooExecutor.pipeline: requests sent back to back on one session get the same results,
in order, as the model gives them one at a time (failed multis included)."""

from __future__ import annotations

import os

import pytest

from coordspec.broker.zookeeper.executor import KazooExecutor
from coordspec.broker.zookeeper.process import ZooKeeperUnavailable, zookeeper
from coordspec.reference.errors import UsageError
from coordspec.reference.zookeeper import (
    Check,
    Code,
    Create,
    Delete,
    Exists,
    GetChildren,
    GetData,
    Multi,
    OpenSession,
    Reply,
    Request,
    SetData,
    ZooKeeperConfig,
    ZooKeeperServer,
)

pytestmark = pytest.mark.zookeeper

OPS = [
    Create("/p", b"x"),
    Create("/p/a", b"1"),
    Create("/p/s-", b"", sequential=True),
    Multi((Check("/p", 0), SetData("/p/a", b"2", 0), Create("/p/b"))),
    Multi((Check("/p", 0), SetData("/p/a", b"3", 0))),  # stale: /p/a is at version 1 now
    SetData("/p/a", b"4", 1),
    Delete("/p/b", 7),
    GetData("/p/a"),
    GetChildren("/p"),
    Exists("/p/none"),
    Create("/p/a/"),  # a trailing slash goes out as given: BADARGUMENTS
]


def test_pipelined_results_equal_the_models():
    model = ZooKeeperServer(ZooKeeperConfig(tick_time_ms=500), system_nodes=False)
    model.handle(OpenSession(0, 1, 4000))
    expected = [
        next(e.result for e in model.handle(Request(0, 1, op)) if isinstance(e, Reply))
        for op in OPS
    ]
    assert [r.code for r in expected][3:5] == [Code.OK, Code.BADVERSION]
    try:
        with zookeeper(1) as zk:
            chroot = f"/pipeline-{os.getpid()}"
            with KazooExecutor(zk.connect_string) as root:
                root.handle(OpenSession(0, 1, 4000))
                root.handle(Request(0, 1, Create(chroot)))
            with KazooExecutor(zk.connect_string, chroot=chroot) as executor:
                executor.handle(OpenSession(0, 1, 4000))
                real = executor.pipeline(1, OPS)
                with pytest.raises(UsageError, match="Check only inside a Multi"):
                    executor.pipeline(1, [Check("/p", 0)])
    except ZooKeeperUnavailable as e:
        pytest.fail(str(e), pytrace=False)
    assert real == expected
