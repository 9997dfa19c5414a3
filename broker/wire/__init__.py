"""Kafka's wire protocol for the broker: framing, headers, versions and dispatch (codec: kio)."""
