"""Mutants of the project's broker, one per applicable bug that Kafka-compatible brokers
shipped: does the conformance catalog catch them? ``catalog`` is the data, ``patches`` the
changes (imported only by a mutated broker's process, ``launch``), ``measure`` the run."""
