"""Names the command lines offer, kept apart so that building the parsers imports nothing
heavy (tests check they match :data:`planted.BUGS`, :data:`clusters.BUGS` and the
simulators' faults)."""

# crash and pause mean a client and the schedule for one coordinator, brokers with
# --cluster; restart (the coordinator) is for one coordinator, expire (a broker's ZooKeeper
# session) for --cluster.
FAULTS = ("crash", "pause", "restart", "expire")
BUG_NAMES = (
    "generation-not-bumped",
    "heartbeat-ignores-rebalance",
    "stale-commit",
)  # what clients hear
CLUSTER_BUG_NAMES = (
    "ack-before-isr",
    "isr-write-skips-version",
)  # the replication layer; need --cluster
