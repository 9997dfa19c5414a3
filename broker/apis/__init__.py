"""One module per API (or family of APIs): each maps Kafka's request fields to the broker's
vocabulary, does the work, and maps the answer back to the response fields of the version."""
