"""The error both brokers stop with when they cannot start."""


class BrokerError(Exception):
    """A reason the broker cannot start, in one line."""
