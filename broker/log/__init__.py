"""On-disk partition logs of Kafka record batches (v2), the topic list, producer state, and the
``__consumer_offsets`` record encoding."""
