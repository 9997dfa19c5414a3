"""The conformance suite: scenario files, the oracle, targets, runner and reports.

``run`` is the entry point (see :mod:`coordspec.conformance.suite.suite`); ``coordspec conform``
(conformance/cli/conform.py) gives it its options. Importing the package is cheap: the suite
itself loads on first use.
"""

__all__ = ["Outcome", "SuiteError", "run"]


def __getattr__(name: str):
    if name in ("Outcome", "SuiteError", "run"):
        from coordspec.conformance.suite import suite

        return getattr(suite, name)
    raise AttributeError(f"module 'coordspec.conformance.suite' has no attribute {name!r}")
