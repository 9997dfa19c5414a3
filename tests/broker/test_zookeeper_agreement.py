"""The ZooKeeper model agrees with a real ZooKeeper (Debian's 3.8) on random executions.

One server for the module; each example runs below a chroot of its own, so examples are
independent. Every step goes to the model and, through ``KazooExecutor``, to the server,
and the two answers must be identical: codes per operation (per op inside a Multi),
created paths, data, stats (version, cversion, ephemeral owner, data length, children),
children lists, and the watch events each session receives (in order per session; a
closed or expired session's ephemerals go in an order ZooKeeper leaves to a hash set, so
there per session as a set). At the end of an example the whole trees must be equal.

A session is expired on the model by moving its time past the session's deadline, and on
the server by ZooKeeper's standard trick (a second client closes the session).

Examples: a third of ``--examples`` (default 300: 100 examples).
"""

from __future__ import annotations

import itertools
import os
from collections import defaultdict

import pytest
from hypothesis import settings
from hypothesis import strategies as st
from hypothesis.stateful import (
    RuleBasedStateMachine,
    initialize,
    invariant,
    precondition,
    rule,
    run_state_machine_as_test,
)
from kazoo.client import KazooClient

from coordspec.broker.zookeeper.executor import KazooExecutor
from coordspec.broker.zookeeper.process import ZooKeeperEnsemble, ZooKeeperUnavailable, zookeeper
from coordspec.reference.zookeeper import (
    Check,
    CloseSession,
    Create,
    Delete,
    Exists,
    GetChildren,
    GetData,
    Multi,
    OpenSession,
    Ping,
    Request,
    SessionState,
    SetData,
    Tick,
    WatchFired,
    ZooKeeperConfig,
    ZooKeeperServer,
)

pytestmark = pytest.mark.zookeeper

TICK_MS = 500  # the fixture server's tickTime: sessions negotiate within [1000, 10000] ms
TIMEOUTS_MS = (
    4000,
    6000,
    30000,
)  # the last is clamped to 10000; short enough ones would expire for real on a slow VM
MAX_SESSIONS = 8  # per example
MAX_LIVE_SESSIONS = 4
MAX_WATCHED = 8  # nodes per watch_everything step
NAMES = ("a", "b", "c")
DATA = (b"", b"x", b"yy", b"\x00\xff")
# Faults below a first-level node, where a chroot does not change what the server sees.
BAD_SUFFIXES = (
    "/",
    "//",
    "//x",
    "/.",
    "/..",
    "/./x",
    "/x/",
    "\x00",
    "/\x01",
    "/\u0085",
    "/\U0001f600",
)

VERSIONS = st.sampled_from([-1, -1, 0, 1, 2])

_chroots = itertools.count(1)


@pytest.fixture(scope="module")
def server():
    try:
        with zookeeper(1, tick_time_ms=TICK_MS) as zk:
            admin = KazooClient(zk.connect_string, timeout=10)
            admin.start(timeout=10)
            try:
                yield zk, admin
            finally:
                admin.stop()
                admin.close()
    except ZooKeeperUnavailable as e:
        pytest.fail(str(e), pytrace=False)


good_paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=3).map(
    lambda names: "/" + "/".join(names)
)
bad_paths = st.builds(
    lambda name, suffix: "/" + name + suffix, st.sampled_from(NAMES), st.sampled_from(BAD_SUFFIXES)
)


class ServerGone(Exception):
    """The module's ZooKeeper exited under us: every later example would only time out."""


class ZooKeeperAgreement(RuleBasedStateMachine):
    def __init__(self, zk: ZooKeeperEnsemble, admin: KazooClient) -> None:
        super().__init__()
        if crashes := zk.crashes():
            raise ServerGone("; ".join(crashes))
        chroot = f"/agreement-{os.getpid()}-{next(_chroots)}"
        admin.create_async(chroot).get(timeout=10)
        self.model = ZooKeeperServer(ZooKeeperConfig(tick_time_ms=TICK_MS), system_nodes=False)
        self.real = KazooExecutor(zk.connect_string, chroot=chroot)
        self.now_ms = 0
        self.opened = 0

    def teardown(self) -> None:
        try:
            assert self.real.snapshot() == self.model.tree.snapshot()
        finally:
            self.real.close()

    # -- comparing -----------------------------------------------------------------

    def both(self, event, *, watches_as_sets: bool = False):
        expected = self.model.handle(event)
        actual = self.real.handle(event)
        self.agree(event, expected, actual, watches_as_sets=watches_as_sets)
        return expected

    def agree(self, event, expected, actual, *, watches_as_sets: bool = False) -> None:
        def split(effects):
            others = [e for e in effects if not isinstance(e, WatchFired)]
            watches = defaultdict(list)
            for e in effects:
                if isinstance(e, WatchFired):
                    watches[e.session_id].append(e)
            if watches_as_sets:
                watches = {s: sorted(w, key=repr) for s, w in watches.items()}
            return others, dict(watches)

        assert split(actual) == split(expected), (
            f"after {event}:\n  model:     {expected}\n  ZooKeeper: {actual}"
        )

    # -- drawing arguments from the model's state ------------------------------------------

    def session(self, data) -> int:
        """Mostly a live session; sometimes any, to ask a closed or expired one."""
        live = self.model.live_sessions()
        anyone = list(range(1, self.opened + 1))
        return data.draw(
            st.sampled_from(live)
            if live and data.draw(st.integers(0, 9), label="0: any session, else a live one")
            else st.sampled_from(anyone),
            label="session",
        )

    def path(
        self, data, *, allow_root: bool = True, existing: int = 1, recent: tuple[str, ...] = ()
    ) -> str:
        """A path: made up, a child of a node, invalid, (``existing`` times as often) a
        node that exists, or one of ``recent`` (paths earlier operations of a Multi used)."""
        nodes = sorted(self.model.tree.nodes)
        children = st.builds(
            lambda parent, name: parent.rstrip("/") + "/" + name,
            st.sampled_from(nodes),
            st.sampled_from(NAMES),
        )
        choices = [good_paths, children, children, bad_paths]
        if not allow_root:
            nodes.remove("/")
        if nodes:
            choices += [st.sampled_from(nodes)] * existing * 2
        recent = tuple(p for p in recent if allow_root or p != "/")
        if recent and data.draw(st.booleans(), label="reuse a path of this Multi?"):
            return data.draw(st.sampled_from(recent), label="path")
        return data.draw(st.one_of(choices), label="path")

    def version(self, data, path: str) -> int:
        node = self.model.tree.node(path) if path.startswith("/") else None
        current = node.version if node is not None else 0
        stale = [v for v in (current - 1, current + 1) if v >= 0]
        return data.draw(st.sampled_from([-1, current, current, *stale]), label="version")

    def create_op(self, data, recent: tuple[str, ...] = ()) -> Create:
        return Create(
            self.path(data, recent=recent),
            data.draw(st.sampled_from(DATA)),
            data.draw(st.booleans(), label="ephemeral"),
            data.draw(st.booleans(), label="sequential"),
        )

    def write_op(self, data, recent: tuple[str, ...] = ()):
        kind = data.draw(
            st.sampled_from(["create", "create", "delete", "set", "check"]), label="kind"
        )
        if kind == "create":
            return self.create_op(data, recent)
        path = self.path(
            data, allow_root=kind != "delete", existing=2, recent=recent
        )  # below a chroot, "/" is the chroot's node
        if kind == "delete":
            return Delete(path, self.version(data, path))
        if kind == "set":
            return SetData(path, data.draw(st.sampled_from(DATA)), self.version(data, path))
        return Check(path, self.version(data, path))

    def request(self, data, op) -> None:
        self.both(Request(self.now_ms, self.session(data), op))

    # -- rules ---------------------------------------------------------------------

    @initialize(timeout_ms=st.sampled_from(TIMEOUTS_MS))
    def open_first_session(self, timeout_ms):
        self.open_session(timeout_ms)

    @precondition(
        lambda self: (
            self.opened < MAX_SESSIONS and len(self.model.live_sessions()) < MAX_LIVE_SESSIONS
        )
    )
    @rule(timeout_ms=st.sampled_from(TIMEOUTS_MS))
    def open_session(self, timeout_ms):
        self.opened += 1
        self.both(OpenSession(self.now_ms, self.opened, timeout_ms))

    @rule(data=st.data())
    def create(self, data):
        self.request(data, self.create_op(data))

    @rule(data=st.data())
    def create_more(self, data):  # creates are most of what makes a tree to test on
        self.request(data, self.create_op(data))

    @rule(data=st.data())
    def delete(self, data):
        path = self.path(data, allow_root=False, existing=3)
        self.request(data, Delete(path, self.version(data, path)))

    @rule(data=st.data())
    def set_data(self, data):
        path = self.path(data, existing=3)
        self.request(
            data, SetData(path, data.draw(st.sampled_from(DATA)), self.version(data, path))
        )

    @rule(data=st.data(), watch=st.booleans())
    def get_data(self, data, watch):
        self.request(data, GetData(self.path(data, existing=2), watch))

    @rule(data=st.data(), watch=st.booleans())
    def exists(self, data, watch):
        self.request(data, Exists(self.path(data, existing=2), watch))

    @rule(data=st.data(), watch=st.booleans())
    def get_children(self, data, watch):
        self.request(data, GetChildren(self.path(data, existing=2), watch))

    @rule(data=st.data(), size=st.integers(0, 4))
    def multi(self, data, size):
        ops = []
        for _ in range(size):
            ops.append(self.write_op(data, recent=tuple(op.path for op in ops)))
        self.request(data, Multi(tuple(ops)))

    @rule(data=st.data())
    def watch_everything(self, data):
        """One session watches every node (data and children): the next writes fire them."""
        session = self.session(data)
        for path in sorted(self.model.tree.nodes)[:MAX_WATCHED]:
            read = data.draw(st.sampled_from([GetData, Exists]), label="data watch")
            self.both(Request(self.now_ms, session, read(path, True)))
            self.both(Request(self.now_ms, session, GetChildren(path, True)))

    def victim(self, data) -> int:
        """A live session, most often one that owns ephemeral nodes."""
        live = self.model.live_sessions()
        owners = [s for s in live if self.model.tree.ephemerals.get(s)]
        pool = (
            owners
            if owners and data.draw(st.integers(0, 3), label="pick an owner of ephemerals?")
            else live
        )
        return data.draw(st.sampled_from(pool), label="victim")

    @rule(
        data=st.data(),
        create_first=st.booleans(),
        kinds=st.lists(st.sampled_from([Create, Delete, SetData, Check]), min_size=1, max_size=3),
    )
    def multi_on_one_node(self, data, create_first, kinds):
        """Operations that build on each other: create, change and delete one node in one Multi."""
        parents = sorted(p for p, node in self.model.tree.nodes.items() if not node.ephemeral_owner)
        new = st.builds(
            lambda parent, name: parent.rstrip("/") + "/" + name,
            st.sampled_from(parents),
            st.sampled_from(NAMES),
        )
        existing = st.sampled_from(
            sorted(self.model.tree.nodes)[1:]
        )  # not "/": below a chroot it is the chroot's node
        path = data.draw(
            new if create_first or len(self.model.tree.nodes) == 1 else existing, label="path"
        )
        ops = []
        for kind in [Create] * create_first + kinds:
            if kind is Create:
                ops.append(
                    Create(
                        path,
                        data.draw(st.sampled_from(DATA)),
                        data.draw(st.booleans(), label="ephemeral"),
                    )
                )
            elif kind is SetData:
                ops.append(
                    SetData(
                        path, data.draw(st.sampled_from(DATA)), data.draw(VERSIONS, label="version")
                    )
                )
            else:
                ops.append(kind(path, data.draw(VERSIONS, label="version")))
        self.request(data, Multi(tuple(ops)))

    @precondition(lambda self: len(self.model.live_sessions()) > 1)
    @rule(data=st.data())
    def close_session(self, data):
        session = (
            self.victim(data)
            if data.draw(st.integers(0, 9), label="close a live session?")
            else self.session(data)
        )
        self.both(CloseSession(self.now_ms, session), watches_as_sets=True)

    @precondition(lambda self: len(self.model.live_sessions()) > 1)
    @rule(data=st.data())
    def expire_session(self, data):
        victim = self.victim(data)
        deadline = self.push_others_past(victim)
        expected = self.model.handle(Tick(deadline))
        self.now_ms = deadline
        assert self.model.session_state(victim) == SessionState.EXPIRED
        self.agree(
            f"expiring session {victim}", expected, self.real.expire(victim), watches_as_sets=True
        )

    def push_others_past(self, victim: int) -> int:
        """Ping the other live sessions just before the earliest deadline until the
        victim's is the only one due first; its deadline."""
        sessions = self.model.sessions.sessions
        for _ in range(10):
            earliest = self.model.next_deadline_ms()
            others = [s for s in self.model.live_sessions() if s != victim]
            if all(sessions[s].deadline_ms > sessions[victim].deadline_ms for s in others):
                return sessions[victim].deadline_ms
            self.now_ms = max(self.now_ms, earliest - 1)
            for s in others:
                assert self.model.handle(Ping(self.now_ms, s)) == []
        raise AssertionError(f"could not make session {victim} the first to expire")

    @invariant()
    def same_live_sessions(self):
        assert sorted(self.real.live_sessions()) == sorted(self.model.live_sessions())


def test_model_agrees_with_real_zookeeper(server):
    zk, admin = server
    examples = max(1, settings.default.max_examples // 3)
    try:
        run_state_machine_as_test(
            lambda: ZooKeeperAgreement(zk, admin),
            settings=settings(settings.default, max_examples=examples, stateful_step_count=50),
        )
    except Exception:
        if not zk.crashes():
            raise
    else:
        return
    pytest.fail("; ".join(zk.crashes()), pytrace=False)  # not a disagreement: the server went away


FRESH_SERVER_SCRIPT = [
    OpenSession(0, 1, 4000),
    OpenSession(0, 2, 6000),
    Request(0, 1, GetData("/")),
    Request(0, 1, GetChildren("/zookeeper", True)),
    Request(0, 1, GetData("/zookeeper/config")),
    Request(0, 1, SetData("/zookeeper/config", b"x")),
    Request(0, 1, Create("/zookeeper/config/x")),
    Request(0, 1, Multi((Check("/zookeeper/config", 0), Check("/zookeeper/quota", -1)))),
    Request(0, 1, Create("/zookeeper/x", b"y")),
    Request(0, 1, Delete("/zookeeper/x")),
    Request(0, 1, SetData("/zookeeper", b"z", 0)),
    *(
        Request(0, 1, Delete(path))
        for path in ("/", "/zookeeper", "/zookeeper/quota", "/zookeeper/config")
    ),
    Request(0, 2, GetChildren("/", True)),
    Request(0, 1, Create("/")),
    Request(0, 1, Create("/", sequential=True, ephemeral=True)),
    Request(0, 1, Exists("/")),
    *(Request(0, 1, Create(path)) for path in ("a", "//", "/.", "/..", "//x", "/a/")),
    *(
        Request(0, 1, op(path))
        for path in ("a", "//", "/.")
        for op in (GetData, Exists, GetChildren)
    ),
    Request(0, 1, Delete("a")),
    Request(0, 1, SetData("//", b"")),
    Request(
        0, 1, Multi((Create("/p"), Create("/p/", sequential=True), Create("/", sequential=True)))
    ),
    CloseSession(0, 1),
    Request(0, 2, GetChildren("/")),
    Request(0, 2, Exists("/")),
]


def test_a_fresh_server_agrees_at_its_root():
    """What a chroot hides: the system nodes, the root's own rules, paths without a parent."""
    model = ZooKeeperServer(ZooKeeperConfig(tick_time_ms=TICK_MS))
    try:
        with zookeeper(1, tick_time_ms=TICK_MS) as zk, KazooExecutor(zk.connect_string) as real:
            for event in FRESH_SERVER_SCRIPT:
                expected, actual = model.handle(event), real.handle(event)
                assert actual == expected, (
                    f"after {event}:\n  model:     {expected}\n  ZooKeeper: {actual}"
                )
    except ZooKeeperUnavailable as e:
        pytest.fail(str(e), pytrace=False)
