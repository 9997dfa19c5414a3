"""The producers of traces: seeded groups and whole clusters on the reference, with planted bugs."""
