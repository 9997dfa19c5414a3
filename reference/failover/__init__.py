"""Coordinator failover: a group's coordinator is the leader of its ``__consumer_offsets``
partition (spec/coordinator-failover.md).

:mod:`~reference.failover.placement` says which partition holds a group; the host, its
events and effects, and the invariants Monitor build on it.
"""
