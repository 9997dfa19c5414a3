"""The mutant catalog: one mutant of the project's broker per applicable bug of the bug
catalog (../shared/research/conformance-anchors.md, section b), and why the others do not apply.

Each ``Mutant`` names the bug, the thread it comes from and what its patch (patches.py, by the
same number) changes. ``probe`` is a scenario that shows the patch changes behaviour (run on
a mutated reference target by tests/conformance/test_mutants.py). ``caught_by`` is the
result recorded by the last full ``coordspec mutants`` run: the first scenario that caught
it on the project's broker, or "" for a miss, which ``missed`` then explains.
spec/conformance-power.md is generated from this module (``coordspec mutants --table``).
"""

from __future__ import annotations

from dataclasses import dataclass

# When and at which commit the caught_by values were recorded (a full ``coordspec mutants`` run).
RECORDED = (
    "2026-11-27 at commit 9de752b, each scenario at its latest version plan "
    "(#46 and #47 on 2026-11-28, on the reference target)"
)


@dataclass(frozen=True)
class Mutant:
    bug: int
    title: str
    thread: str
    patch: str
    probe: str
    caught_by: str = ""
    missed: str = ""
    # "broker": a mutant of the project's broker; "reference": of the reference target, for
    # an API the broker does not serve (measure.py)
    on: str = "broker"


@dataclass(frozen=True)
class NotApplicable:
    bug: int
    title: str
    reason: str


CLIENT = "a client-side bug: the broker's part is its answers, which other mutants cover"
SEVERAL_BROKERS = (
    "needs the coordinator to move between brokers; the mutant runner serves one broker"
)
REPLICATION = (
    "replication, not group coordination: the group catalog cannot observe it "
    "(the replication model has its own mutants, tests/reference/test_replication_mutants.py)"
)
TRANSACTIONS = "transaction data (fetches, log offsets), not the group coordinator's offsets"

MUTANTS = (
    Mutant(
        1,
        "v0 join completes the join phase at once",
        "kafka4beam/brod#465",
        "the join phase waits the shortest member rebalance timeout, not the largest",
        "rebalance-timeout-is-the-largest-members",
        caught_by="rebalance-timeout-is-the-largest-members",
    ),
    Mutant(
        2,
        "v0 rebalance timeout defaults to -1",
        "KAFKA-8653 (apache/kafka#7072)",
        "JoinGroup v0's rebalance timeout is 0 instead of its session timeout",
        "join-v0-rebalance-timeout-is-session-timeout",
        caught_by="join-v0-rebalance-timeout-is-session-timeout",
    ),
    Mutant(
        3,
        "follower SyncGroup answered after a fixed wait",
        "nisshi-io/nisshi#679 (Tansu)",
        "a parked follower SyncGroup is answered after 3 s with its current assignment",
        "follower-sync-waits-for-a-slow-leader",
        caught_by="follower-sync-waits-for-a-slow-leader",
    ),
    Mutant(
        4,
        "members told apart by client.id",
        "seaweedfs/seaweedfs#9143",
        "a new member with the client.id of a member joins as that member",
        "same-client-id-two-members",
        caught_by="same-client-id-two-members",
    ),
    Mutant(
        5,
        "late joiner during CompletingRebalance served the stale assignment",
        "seaweedfs/seaweedfs#9162",
        "a join during CompletingRebalance is answered with the current generation, no rebalance",
        "stale-leader-sync-after-late-join",
        caught_by="stale-leader-sync-after-late-join",
    ),
    Mutant(
        6,
        "no join barrier",
        "514-labs/moosestack#4006",
        "the join phase completes without waiting for the known members to rejoin",
        "leader-rejoin-triggers-rebalance",
        caught_by="leader-rejoin-triggers-rebalance",
    ),
    Mutant(
        7,
        "follower rejoining with new metadata is not rebalanced",
        "twmb/franz-go d4d15137 (kfake)",
        "a follower rejoining a Stable group with changed metadata gets the current generation",
        "changed-metadata-triggers-rebalance",
        caught_by="changed-metadata-triggers-rebalance",
    ),
    Mutant(
        8,
        "joiner admitted on any shared protocol",
        "twmb/franz-go 7825098b (kfake)",
        "a joiner is admitted if any member supports one of its protocols, not all",
        "joiner-needs-a-protocol-every-member-supports",
        caught_by="joiner-needs-a-protocol-every-member-supports",
    ),
    Mutant(
        9,
        "follower's SyncGroup assignment applied",
        "tisonkun/kafka-api#8",
        "a follower's SyncGroup assignments are written as the leader's",
        "follower-assignment-ignored-in-completing-rebalance",
        caught_by="follower-assignment-ignored-in-completing-rebalance",
    ),
    Mutant(
        11,
        "one error for rebalancing and old generation",
        "KAFKA-2557 (apache/kafka#222)",
        "a heartbeat of an old generation during a rebalance hears REBALANCE_IN_PROGRESS",
        "old-generation-heartbeat-during-rebalance",
        caught_by="old-generation-heartbeat-during-rebalance",
    ),
    Mutant(
        13,
        "old-generation commits accepted",
        "KAFKA-2555 (apache/kafka#221)",
        "an OffsetCommit of an old generation is accepted",
        "stale-generation-commit",
        caught_by="stale-generation-commit",
    ),
    Mutant(
        14,
        "commit during CompletingRebalance answered ILLEGAL_GENERATION",
        "KAFKA-8421 (apache/kafka#7312)",
        "a current-generation commit during CompletingRebalance hears ILLEGAL_GENERATION",
        "commit-during-completing-rebalance",
        caught_by="commit-during-completing-rebalance",
    ),
    Mutant(
        16,
        "commits of a fenced member accepted",
        "franz-go CHANGELOG v1.21.3",
        "a commit from a member no longer in the group is accepted",
        "expired-member-commit-is-fenced",
        caught_by="expired-member-commit-is-fenced",
    ),
    Mutant(
        20,
        "no MEMBER_ID_REQUIRED",
        "KAFKA-7610 (apache/kafka#5962)",
        "a v4+ dynamic member with no member id joins at once",
        "member-id-required",
        caught_by="member-id-required",
    ),
    Mutant(
        21,
        "a new member parked in JoinGroup never expires",
        "KAFKA-9752 (apache/kafka#8339)",
        "a new member waiting in JoinGroup counts as heartbeating",
        "new-member-join-timeout",
        caught_by="new-member-join-timeout",
    ),
    Mutant(
        22,
        "parked members expired while they wait",
        "redpanda-data/redpanda#22749",
        "members waiting in JoinGroup or SyncGroup expire as if silent",
        "parked-join-outlives-its-session",
        caught_by="parked-join-outlives-its-session",
    ),
    Mutant(
        23,
        "members never expire while PreparingRebalance",
        "redpanda-data/redpanda#3300",
        "a session that runs out during PreparingRebalance removes nobody",
        "join-phase-completes-when-last-laggard-expires",
        caught_by="join-phase-completes-when-last-laggard-expires",
    ),
    Mutant(
        25,
        "last laggard leaving does not complete the join",
        "streamnative/kop#380",
        "a LeaveGroup does not re-check whether the join phase can complete",
        "last-laggard-leaves-completes-join",
        caught_by="last-laggard-leaves-completes-join",
    ),
    Mutant(
        26,
        "expired members not evicted",
        "seaweedfs/seaweedfs#9243",
        "a member of a Stable group whose session runs out stays",
        "session-expiry",
        caught_by="session-expiry",
    ),
    Mutant(
        27,
        "abandoned pending member id holds the group",
        "confluentinc/librdkafka#5570",
        "a member id handed out with MEMBER_ID_REQUIRED never expires",
        "pending-member-expires",
        caught_by="pending-member-expires",
    ),
    Mutant(
        28,
        "JoinGroup v0 refused",
        "Azure/azure-event-hubs-for-kafka#22",
        "JoinGroup v0 is answered INVALID_SESSION_TIMEOUT",
        "join-v0-rebalance-timeout-is-session-timeout",
        caught_by="join-v0-rebalance-timeout-is-session-timeout",
    ),
    Mutant(
        29,
        "two processes with one instance id both admitted",
        "KAFKA-8500 (apache/kafka#6899)",
        "during PreparingRebalance a known instance id joining again is another member",
        "concurrent-static-joins-same-instance",
        caught_by="concurrent-static-joins-same-instance",
    ),
    Mutant(
        30,
        "static rejoin during CompletingRebalance without a rebalance",
        "KAFKA-9801 (apache/kafka#8405)",
        "a static member rejoining in CompletingRebalance gets its new id and the current generation",
        "static-takeover-in-completing-rebalance",
        caught_by="static-takeover-in-completing-rebalance",
    ),
    Mutant(
        31,
        "static member's new id not persisted",
        "KAFKA-10284 (apache/kafka#9270)",
        "the record written for a static takeover keeps the old member id",
        "static-takeover-survives-failover",
        caught_by="static-takeover-survives-failover",
    ),
    Mutant(
        33,
        "static rejoin keeps the old rebalance timeout",
        "KAFKA-14009 (apache/kafka#12308)",
        "a static member's rejoin does not update its rebalance timeout",
        "static-rejoin-updates-rebalance-timeout",
        caught_by="static-rejoin-updates-rebalance-timeout",
    ),
    Mutant(
        35,
        "static membership advertised, not supported",
        "redpanda-data/redpanda#4189",
        "a JoinGroup with a group.instance.id is answered UNSUPPORTED_VERSION",
        "static-member-joins-without-member-id-required",
        caught_by="static-member-joins-without-member-id-required",
    ),
    Mutant(
        38,
        "offsets reloaded as expiring",
        "KAFKA-8069 (apache/kafka#6401)",
        "offsets without an expire timestamp are loaded as expiring at their commit time",
        "offsets-expire-only-after-retention-after-restart",
        caught_by="offsets-expire-only-after-retention-after-restart",
    ),
    Mutant(
        39,
        "offsets expire while the group rebalances",
        "KAFKA-13636 (apache/kafka#11742)",
        "during a rebalance offsets expire counted from their commit",
        "offsets-kept-while-rebalancing",
        caught_by="offsets-kept-while-rebalancing",
    ),
    Mutant(
        41,
        "a deleted group id reused for plain commits does not load",
        "KAFKA-4704 (apache/kafka#2455)",
        "offsets committed after the group's tombstone are dropped on load",
        "reused-group-id-offsets-survive-restart",
        caught_by="reused-group-id-offsets-survive-restart",
    ),
    Mutant(
        44,
        "a group without members lost on load",
        "redpanda-data/redpanda#10363",
        "loading drops groups that have no members",
        "failover-empty-group-keeps-generation",
        caught_by="failover-empty-group-keeps-generation",
    ),
    Mutant(
        45,
        "group deletion not persisted",
        "redpanda-data/redpanda#4900",
        "tombstones are ignored on load",
        "failover-deleted-group-stays-deleted",
        caught_by="failover-deleted-group-stays-deleted",
    ),
    Mutant(
        46,
        "transactional offset commits and expiry disagree on replay",
        "redpanda-data/redpanda#31483",
        "the expiry sweep tombstones offsets an open transaction holds (on the reference target)",
        "txn-pending-offset-does-not-expire",
        caught_by="txn-pending-offset-does-not-expire",
        on="reference",
    ),
    Mutant(
        47,
        "transaction committed during a rebalance never cleared",
        "redpanda-data/redpanda#5543",
        "a marker leaves a rebalancing group's offsets pending (on the reference target)",
        "txn-marker-during-rebalance-ends-the-transaction",
        caught_by="txn-marker-during-rebalance-ends-the-transaction",
        on="reference",
    ),
    Mutant(
        48,
        "departed member kept after a restart mid-rebalance",
        "twmb/franz-go 12889e13 (kfake)",
        "members loaded from the log get no session timer",
        "failover-forgets-a-leave-in-progress",
        caught_by="failover-forgets-a-leave-in-progress",
    ),
    Mutant(
        52,
        "committed offsets stop advancing after a leadership change",
        "redpanda-data/redpanda#10195",
        "commits to a group loaded from the log are acknowledged but not applied",
        "commit-after-restart-is-fetched",
        caught_by="commit-after-restart-is-fetched",
    ),
    Mutant(
        53,
        "NOT_COORDINATOR after a restart",
        "AutoMQ/automq#308",
        "JoinGroup to a group loaded from the log answers NOT_COORDINATOR",
        "failover-keeps-latest-generation",
        caught_by="failover-keeps-latest-generation",
    ),
    Mutant(
        54,
        "commits fail with COORDINATOR_LOAD_IN_PROGRESS after a move",
        "streamnative/kop#1550",
        "OffsetCommit to a group loaded from the log answers COORDINATOR_LOAD_IN_PROGRESS",
        "failover-simple-group-offsets-survive",
        caught_by="failover-simple-group-offsets-survive",
    ),
    Mutant(
        55,
        "new member's JoinGroup answered NOT_COORDINATOR",
        "redpanda-data/redpanda#3655",
        "a JoinGroup without member id into a Stable group answers NOT_COORDINATOR",
        "new-member-rebalances-only-when-it-rejoins",
        caught_by="new-member-rebalances-only-when-it-rejoins",
    ),
)

NOT_APPLICABLE = (
    NotApplicable(
        10,
        "rejoin response not parseable (Event Hubs)",
        "an encoder defect; the broker encodes with kio, generated from Kafka's schemas, "
        "which a patch of the coordinator cannot change",
    ),
    NotApplicable(12, "cooperative member left with stale owned partitions", CLIENT),
    NotApplicable(15, "FindCoordinator names the old coordinator", SEVERAL_BROKERS),
    NotApplicable(17, "stale member's claims crash the leader", CLIENT),
    NotApplicable(18, "auto-commit on lost partitions", CLIENT),
    NotApplicable(19, "records marked for commit after revoke", CLIENT),
    NotApplicable(
        24,
        "7k members stuck in CompletingRebalance",
        "load at scale (thousands of members), not a scripted sequence",
    ),
    NotApplicable(
        32,
        "static member with a leader below JoinGroup v5",
        "an encoder failure writing a field the version lacks; kio leaves such fields out",
    ),
    NotApplicable(
        34,
        "KIP-848 static member fenced by its own instance id",
        "the KIP-848 consumer protocol, which the project does not model",
    ),
    NotApplicable(36, "old coordinator completes writes truncated away", SEVERAL_BROKERS),
    NotApplicable(37, "old leader keeps acting as coordinator after reassignment", SEVERAL_BROKERS),
    NotApplicable(
        40,
        "loading a partition of empty segments loops",
        "needs a log of empty segments, which no scenario step can make",
    ),
    NotApplicable(
        42,
        "COORDINATOR_LOAD_IN_PROGRESS never returned",
        "the single broker loads its log before it listens: no request meets a load",
    ),
    NotApplicable(
        43,
        "new coordinator load and unload edge cases",
        "the KIP-848 coordinator runtime, and leadership loss during a load",
    ),
    NotApplicable(
        49,
        "commit acknowledged though the write failed",
        "needs a failing log write, which no scenario step can cause on the broker",
    ),
    NotApplicable(
        50,
        "offsets topic partition count changed",
        "needs the broker's offsets.topic.num.partitions changed between restarts",
    ),
    NotApplicable(
        51,
        "offsets partition of another storage layer not loadable",
        "a storage-layer record format of another broker",
    ),
    NotApplicable(
        56, "FindCoordinator keeps naming a broker that is not coordinator", SEVERAL_BROKERS
    ),
    NotApplicable(57, "COORDINATOR_LOAD_IN_PROGRESS not retried", CLIENT),
    *(
        NotApplicable(n, "replication, ISR or controller fencing", REPLICATION)
        for n in range(58, 75)
    ),
    NotApplicable(
        75,
        "topic-id versions advertised without Metadata v10",
        "OffsetFetch and OffsetCommit by topic id (v10+), which the project does not serve",
    ),
    NotApplicable(
        76,
        "leader epochs of -1, ApiVersions resets, acks=0",
        "produce, fetch and ApiVersions negotiation, outside the group catalog",
    ),
    NotApplicable(77, "aborted transactions in read_uncommitted fetches", TRANSACTIONS),
    NotApplicable(78, "offsets after a rolled-back transaction", TRANSACTIONS),
)

BY_BUG = {m.bug: m for m in MUTANTS}
