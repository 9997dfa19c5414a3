"""The trace check: a recorded trace (spec/trace-format.md) replayed through the oracle.

``check_key`` (:mod:`replay`) checks the events of one group of one run; the one-machine
checker (:mod:`check`) and the PySpark pipeline (:mod:`pipeline`) both call it, so they
report the same violations. The traces come from the conformance runner, the broker, the
recording proxy (conformance/trace/) and the simulator (conformance/simulate/); the
commands are in conformance/cli/trace.py.
"""
