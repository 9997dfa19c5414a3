"""Unit tests of the ZooKeeper model (reference/zookeeper): ZooKeeper 3.8's answers, one
behaviour at a time. Each fact here was observed on Debian's ZooKeeper 3.8.0; the
agreement test (tests/broker/test_zookeeper_agreement.py) checks them on random executions."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from coordspec.reference.errors import UsageError
from coordspec.reference.zookeeper import (
    Check,
    CloseSession,
    Code,
    Create,
    CreateResult,
    Delete,
    ErrorResult,
    EventType,
    Exists,
    GetChildren,
    GetData,
    Multi,
    MultiResult,
    OpenSession,
    Ping,
    Reply,
    Request,
    SessionClosed,
    SessionExpired,
    SessionOpened,
    SessionState,
    SetData,
    Stat,
    Tick,
    WatchFired,
    ZooKeeperConfig,
    ZooKeeperServer,
    is_valid_path,
)

TICK = 500


class Client:
    """Drives one server with a fixed clock; ``op`` returns the reply's result."""

    def __init__(self, system_nodes: bool = False) -> None:
        self.server = ZooKeeperServer(ZooKeeperConfig(tick_time_ms=TICK), system_nodes=system_nodes)
        self.now_ms = 0
        self.effects: list = []
        self.open(1)

    def open(self, session_id: int, timeout_ms: int = 4000) -> int:
        (opened,) = self.server.handle(OpenSession(self.now_ms, session_id, timeout_ms))
        return opened.timeout_ms

    def op(self, op, session_id: int = 1):
        self.effects = self.server.handle(Request(self.now_ms, session_id, op))
        reply = self.effects[-1]
        assert isinstance(reply, Reply) and reply.op == op
        return reply.result

    def watches(self) -> list[WatchFired]:
        return [e for e in self.effects if isinstance(e, WatchFired)]

    def stat(self, path: str) -> Stat:
        return self.op(Exists(path)).stat

    def code(self, op, session_id: int = 1) -> Code:
        return self.op(op, session_id).code


@pytest.fixture
def zk() -> Client:
    return Client()


# -- paths ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "path",
    ["/", "/a", "/a/b", "/a/.b", "/a/..b", "/a/b.", "/a/\u00a0", "/a/\u00ff", "/a b", "/zookeeper"],
)
def test_valid_paths(path):
    assert is_valid_path(path)


@pytest.mark.parametrize(
    "path",
    [
        "",
        "a",
        "a/b",
        "/a/",
        "//",
        "/a//b",
        "/.",
        "/..",
        "/a/.",
        "/a/..",
        "/a/./b",
        "/a/../b",
        "/a\x00",
        "/a\x01",
        "/a\x1f",
        "/a\x7f",
        "/a\x80",
        "/a\x9f",
        "/a\ud800",
        "/a\uf8ff",
        "/a\ufff0",
        "/a\U0001f600",
    ],
)
def test_invalid_paths(path):
    assert not is_valid_path(path)


def test_create_looks_up_the_parent_before_validating_the_path(zk):
    assert zk.code(Create("/a//b")) == Code.NONODE  # parent "/a/" cannot exist
    assert zk.code(Create("/a/")) == Code.NONODE
    zk.op(Create("/a"))
    assert zk.code(Create("/a/")) == Code.BADARGUMENTS
    assert zk.code(Create("/a/.")) == Code.BADARGUMENTS
    assert zk.code(Create("a")) == Code.BADARGUMENTS  # no "/" at all
    assert zk.code(Create("/a/b\x00")) == Code.BADARGUMENTS


def test_a_sequential_suffix_can_make_a_path_valid(zk):
    zk.op(Create("/a"))
    assert zk.op(Create("/a/", sequential=True)) == CreateResult(Code.OK, "/a/0000000000")
    assert zk.op(Create("/a/.", sequential=True)) == CreateResult(Code.OK, "/a/.0000000001")
    assert zk.op(Create("/", sequential=True)) == CreateResult(Code.OK, "/0000000001")


def test_set_data_and_check_validate_first_delete_and_reads_only_look_up(zk):
    zk.op(Create("/a"))
    assert zk.code(SetData("/a/", b"")) == Code.BADARGUMENTS
    assert zk.op(Multi([Check("/a/", -1)])).code == Code.BADARGUMENTS
    assert zk.code(Delete("/a/")) == Code.NONODE
    assert zk.code(Delete("a")) == Code.BADARGUMENTS
    assert zk.code(Delete("/a\x00")) == Code.BADARGUMENTS
    assert zk.code(GetData("/a/")) == Code.NONODE
    assert zk.code(GetChildren("/a\x00")) == Code.NONODE
    assert zk.code(Exists("/a/")) == Code.NONODE
    assert zk.code(Exists("/a\x00")) == Code.BADARGUMENTS


# -- the tree --------------------------------------------------------------------------


def test_a_fresh_server_has_its_system_nodes():
    zk = Client(system_nodes=True)
    assert zk.op(GetChildren("/")).children == ("zookeeper",)
    assert zk.op(GetChildren("/zookeeper")).children == ("config", "quota")
    # ZooKeeper reports 2 * creations - children, and these were never "created".
    assert zk.stat("/") == Stat(
        version=0, cversion=-1, ephemeral_owner=0, data_length=0, num_children=1
    )
    assert zk.stat("/zookeeper").cversion == -2


def test_system_nodes_rules():
    zk = Client(system_nodes=True)
    for path in ("/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config"):
        assert zk.code(Delete(path)) == Code.BADARGUMENTS
    assert zk.code(SetData("/zookeeper/config", b"x")) == Code.NOAUTH
    assert zk.code(Create("/zookeeper/config/x")) == Code.NOAUTH
    assert zk.op(Multi([Check("/zookeeper/config", 0)])).code == Code.OK
    assert zk.code(Create("/zookeeper/x")) == Code.OK
    assert zk.code(Delete("/zookeeper/x")) == Code.OK
    assert zk.op(SetData("/zookeeper", b"x")).stat.version == 1
    assert zk.code(Create("/")) == Code.NODEEXISTS
    assert zk.code(GetData("")) == Code.OK  # the data tree also files the root under ""


def test_create_outcomes(zk):
    assert zk.op(Create("/a", b"x")) == CreateResult(Code.OK, "/a")
    assert zk.code(Create("/a")) == Code.NODEEXISTS
    assert zk.code(Create("/b/c")) == Code.NONODE
    zk.op(Create("/e", ephemeral=True))
    assert zk.code(Create("/e/c")) == Code.NOCHILDRENFOREPHEMERALS
    assert zk.code(Create("/e/c", sequential=True)) == Code.NOCHILDRENFOREPHEMERALS
    assert zk.stat("/e").ephemeral_owner == 1
    assert zk.stat("/a") == Stat(
        version=0, cversion=0, ephemeral_owner=0, data_length=1, num_children=0
    )


def test_sequential_names_count_creations_and_cversion_counts_creations_and_deletions(zk):
    zk.op(Create("/p"))
    assert zk.op(Create("/p/n-", sequential=True)).path == "/p/n-0000000000"
    zk.op(Delete("/p/n-0000000000"))
    assert zk.stat("/p").cversion == 2
    assert zk.op(Create("/p/n-", sequential=True)).path == "/p/n-0000000001"
    zk.op(Create("/p/x"))
    assert zk.op(Create("/p/n-", sequential=True, ephemeral=True)).path == "/p/n-0000000003"
    assert zk.stat("/p") == Stat(
        version=0, cversion=5, ephemeral_owner=0, data_length=0, num_children=3
    )


def test_failed_creates_do_not_count(zk):
    zk.op(Create("/p"))
    zk.op(Create("/p/x"))
    assert zk.code(Create("/p/x")) == Code.NODEEXISTS
    assert zk.op(Create("/p/", sequential=True)).path == "/p/0000000001"


def test_versions_are_conditions(zk):
    zk.op(Create("/a"))
    assert zk.code(SetData("/a", b"1", version=1)) == Code.BADVERSION
    assert zk.op(SetData("/a", b"1", version=0)).stat.version == 1
    assert zk.op(SetData("/a", b"22")).stat == Stat(
        version=2, cversion=0, ephemeral_owner=0, data_length=2, num_children=0
    )
    assert zk.code(SetData("/a", b"", version=-2)) == Code.BADVERSION
    assert zk.op(GetData("/a")).data == b"22"
    assert zk.code(SetData("/missing", b"")) == Code.NONODE


def test_delete_checks_the_version_before_the_children(zk):
    zk.op(Create("/a"))
    zk.op(Create("/a/b"))
    assert zk.code(Delete("/a", version=3)) == Code.BADVERSION
    assert zk.code(Delete("/a", version=0)) == Code.NOTEMPTY
    assert zk.code(Delete("/a/b", version=0)) == Code.OK
    assert zk.code(Delete("/a")) == Code.OK
    assert zk.code(Delete("/a")) == Code.NONODE


def test_children_are_sorted(zk):
    for name in ("c", "a", "b"):
        zk.op(Create(f"/{name}"))
    assert zk.op(GetChildren("/")).children == ("a", "b", "c")
    assert zk.code(GetChildren("/missing")) == Code.NONODE


# -- multi -------------------------------------------------------------------------------


def test_multi_applies_all_and_later_ops_see_earlier_ones(zk):
    result = zk.op(
        Multi(
            [
                Create("/a"),
                SetData("/a", b"x", 0),
                Create("/a/s", sequential=True),
                Create("/a/s", sequential=True),
                Check("/a", 1),
                Delete("/a/s0000000000"),
            ]
        )
    )
    assert result.code == Code.OK
    assert [type(r).__name__ for r in result.results] == [
        "CreateResult",
        "SetDataResult",
        "CreateResult",
        "CreateResult",
        "CheckResult",
        "DeleteResult",
    ]
    assert [r.path for r in result.results if isinstance(r, CreateResult)] == [
        "/a",
        "/a/s0000000000",
        "/a/s0000000001",
    ]
    assert result.results[1].stat.version == 1
    assert zk.op(GetChildren("/a")).children == ("s0000000001",)


def test_a_failed_multi_changes_nothing_and_reports_per_op(zk):
    zk.op(Create("/a"))
    before = zk.server.tree.snapshot()
    result = zk.op(
        Multi([Create("/b"), SetData("/a", b"x", 0), Check("/a", 5), Create("/c"), Delete("/a")])
    )
    assert result == MultiResult(
        Code.BADVERSION,
        (
            ErrorResult(Code.OK),
            ErrorResult(Code.OK),
            ErrorResult(Code.BADVERSION),
            ErrorResult(Code.RUNTIMEINCONSISTENCY),
            ErrorResult(Code.RUNTIMEINCONSISTENCY),
        ),
    )
    assert zk.server.tree.snapshot() == before
    # the rolled-back creation did not use up a sequence number either
    assert zk.op(Create("/", sequential=True)).path == "/0000000001"


def test_empty_multi(zk):
    assert zk.op(Multi([])) == MultiResult(Code.OK, ())


def test_check_outside_a_multi_is_a_usage_error(zk):
    with pytest.raises(UsageError, match="only inside a Multi"):
        zk.op(Check("/", -1))


def test_multi_takes_write_operations_only():
    with pytest.raises(UsageError, match="GetData is not a write operation"):
        Multi([GetData("/")])


# -- watches -------------------------------------------------------------------------------


def test_watches_are_one_shot(zk):
    zk.open(2)
    zk.op(Create("/a"))
    zk.op(GetData("/a", watch=True), session_id=2)
    zk.op(SetData("/a", b"1"))
    assert zk.watches() == [WatchFired(2, "/a", EventType.NodeDataChanged)]
    assert isinstance(zk.effects[-1], Reply)  # the event comes before the reply
    zk.op(SetData("/a", b"2"))
    assert zk.watches() == []


def test_exists_watches_an_absent_node_get_data_does_not(zk):
    zk.op(Exists("/a", watch=True))
    assert zk.code(GetData("/b", watch=True)) == Code.NONODE
    zk.op(Create("/a"))
    assert zk.watches() == [WatchFired(1, "/a", EventType.NodeCreated)]
    zk.op(Create("/b"))
    assert zk.watches() == []


def test_child_watches_fire_on_the_parent(zk):
    zk.op(GetChildren("/", watch=True))
    zk.op(Create("/a"))
    assert zk.watches() == [WatchFired(1, "/", EventType.NodeChildrenChanged)]
    zk.op(GetChildren("/a", watch=True))
    zk.op(SetData("/a", b"x"))  # data changes are not child changes
    assert zk.watches() == []
    zk.op(Create("/a/b"))
    assert zk.watches() == [WatchFired(1, "/a", EventType.NodeChildrenChanged)]


def test_a_deleted_node_notifies_each_session_once(zk):
    zk.open(2)
    zk.op(Create("/a"))
    zk.op(GetChildren("/", watch=True), session_id=2)
    zk.op(GetData("/a", watch=True), session_id=2)
    zk.op(Exists("/a", watch=True), session_id=2)
    zk.op(GetChildren("/a", watch=True), session_id=2)
    zk.op(GetChildren("/a", watch=True), session_id=1)
    zk.op(Delete("/a"))
    assert zk.watches() == [
        WatchFired(1, "/a", EventType.NodeDeleted),
        WatchFired(2, "/a", EventType.NodeDeleted),
        WatchFired(2, "/", EventType.NodeChildrenChanged),
    ]


def test_a_failed_multi_fires_nothing(zk):
    zk.op(Exists("/a", watch=True))
    zk.op(Multi([Create("/a"), Check("/a", 3)]))
    assert zk.watches() == []
    zk.op(Multi([Create("/a"), Check("/a", 0)]))
    assert zk.watches() == [WatchFired(1, "/a", EventType.NodeCreated)]


# -- sessions ------------------------------------------------------------------------------


def test_session_timeouts_are_negotiated_within_2_and_20_ticks(zk):
    assert zk.open(2, 10) == 2 * TICK
    assert zk.open(3, 4000) == 4000
    assert zk.open(4, 60000) == 20 * TICK
    custom = ZooKeeperServer(
        ZooKeeperConfig(tick_time_ms=TICK, min_session_timeout_ms=3000, max_session_timeout_ms=5000)
    )
    assert custom.handle(OpenSession(0, 1, 100)) == [SessionOpened(1, 3000)]


def test_a_session_expires_at_the_tick_after_its_timeout():
    server = ZooKeeperServer(ZooKeeperConfig(tick_time_ms=TICK))
    server.handle(OpenSession(100, 1, 4000))
    assert server.next_deadline_ms() == 4500  # 4100 rounded up to the next tick
    assert server.handle(Tick(4499)) == []
    server.handle(Ping(4499, 1))
    assert server.next_deadline_ms() == 8500
    assert server.handle(Tick(8499)) == []
    assert server.handle(Tick(8500)) == [SessionExpired(1)]
    assert server.session_state(1) == SessionState.EXPIRED
    assert server.next_deadline_ms() is None


def test_requests_keep_a_session_alive(zk):
    zk.now_ms = 4000
    zk.op(GetData("/"))
    assert zk.server.next_deadline_ms() == 8500


def test_expiry_removes_ephemerals_and_tells_watchers(zk):
    zk.open(2, 10000)
    zk.op(Create("/p"))
    zk.op(Create("/p/e", ephemeral=True))
    zk.op(Create("/p/f", ephemeral=True, sequential=True))
    zk.op(GetChildren("/p", watch=True), session_id=2)
    zk.op(Exists("/p/e", watch=True), session_id=2)
    zk.op(Exists("/p/e", watch=True), session_id=1)  # an expired session hears nothing
    effects = zk.server.handle(Tick(4500))
    assert effects == [
        SessionExpired(1),
        WatchFired(2, "/p/e", EventType.NodeDeleted),
        WatchFired(2, "/p", EventType.NodeChildrenChanged),
    ]
    assert zk.server.tree.ephemerals == {}
    assert zk.server.handle(Request(4500, 2, GetChildren("/p")))[-1].result.children == ()


def test_close_removes_ephemerals_and_replies_last(zk):
    zk.open(2)
    zk.op(Create("/e", ephemeral=True))
    zk.op(Exists("/e", watch=True), session_id=2)
    assert zk.server.handle(CloseSession(0, 1)) == [
        WatchFired(2, "/e", EventType.NodeDeleted),
        SessionClosed(1),
    ]
    assert zk.code(Exists("/e"), session_id=2) == Code.NONODE
    assert zk.op(Exists("/"), session_id=2).stat.num_children == 0


def test_a_dead_session_gets_sessionexpired(zk):
    zk.open(2)
    zk.server.handle(CloseSession(0, 2))
    assert zk.code(GetData("/"), session_id=2) == Code.SESSIONEXPIRED
    assert zk.code(Create("/x"), session_id=2) == Code.SESSIONEXPIRED
    assert zk.op(Multi([Create("/x")]), session_id=2) == MultiResult(Code.SESSIONEXPIRED, ())
    assert zk.server.handle(CloseSession(0, 2)) == []
    assert zk.server.handle(Ping(0, 2)) == []
    assert zk.code(Exists("/x")) == Code.NONODE


def test_expiry_is_due_before_the_event_that_passes_it(zk):
    zk.op(Create("/e", ephemeral=True))
    effects = zk.server.handle(Request(5000, 1, GetData("/e")))
    assert effects[0] == SessionExpired(1)
    assert effects[-1].result.code == Code.SESSIONEXPIRED
    assert zk.server.now_ms == 5000


# -- caller mistakes -----------------------------------------------------------------------


def test_usage_errors(zk):
    with pytest.raises(UsageError, match="never opened"):
        zk.server.handle(Request(0, 9, GetData("/")))
    with pytest.raises(UsageError, match="already used"):
        zk.server.handle(OpenSession(0, 1, 4000))
    zk.server.handle(Tick(100))
    with pytest.raises(UsageError, match="before the server's time"):
        zk.server.handle(Tick(99))
    with pytest.raises(UsageError, match="data must be bytes"):
        Create("/a", "text")
    with pytest.raises(UsageError, match="version must be a 32-bit int"):
        SetData("/a", b"", version=2**31)
    with pytest.raises(UsageError, match="session_id must be a positive int"):
        Request(0, 0, GetData("/"))
    with pytest.raises(UsageError, match="not a ZooKeeper event"):
        zk.server.handle(GetData("/"))


def test_the_model_is_pure():
    """reference/zookeeper imports the standard library's pure parts and reference only."""
    allowed = {"__future__", "dataclasses", "enum", "heapq", "typing", "collections.abc"}
    for module in Path(__file__).parents[2].joinpath("reference", "zookeeper").glob("*.py"):
        for node in ast.walk(ast.parse(module.read_text())):
            names = (
                [a.name for a in node.names]
                if isinstance(node, ast.Import)
                else [node.module]
                if isinstance(node, ast.ImportFrom)
                else []
            )
            for name in names:
                assert name in allowed or name.startswith("coordspec.reference."), (
                    f"{module.name} imports {name}"
                )
