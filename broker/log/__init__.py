"""On-disk partition logs of Kafka record batches (v2), the topic list, producer state, and the
``__consumer_offsets`` batches (their records' encoding is the reference's wire vocabulary)."""
