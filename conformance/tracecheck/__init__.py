"""Trace validation: a recorded trace (spec/trace-format.md) replayed through the oracle.

``check_key`` (:mod:`replay`) checks the events of one group of one run; the one-machine
checker (:mod:`check`) and the PySpark pipeline (:mod:`pipeline`) both call it, so they
report the same violations. :mod:`simulate` writes traces of seeded groups, with bugs to
plant; :mod:`cli` holds the command lines.
"""
