"""coordspec's reference: sans-IO state machines of Kafka's coordination protocols.

Nothing in this package performs IO, reads a clock or draws ambient randomness.
Every input is an event that carries ``now_ms``; every output is an effect (data) that
a driver executes. See ``coordspec.reference.group`` for the classic group coordinator.
"""
