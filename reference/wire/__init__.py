"""Kafka's wire vocabulary of the reference's events: kio entities to and from the
reference's requests and responses, and the bytes of its ``__consumer_offsets`` records.

This is the one part of ``reference/`` that imports something outside the standard
library: kio, a codec with no IO, so the package stays pure. The broker, the conformance
client and the recording proxy all convert through here.
"""
