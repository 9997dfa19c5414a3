"""Names the command lines offer, kept apart so that building the parsers imports nothing
heavy (tests check they match :data:`planted.BUGS` and the simulator's faults)."""

FAULTS = ("crash", "pause", "restart")
BUG_NAMES = ("generation-not-bumped", "heartbeat-ignores-rebalance", "stale-commit")
