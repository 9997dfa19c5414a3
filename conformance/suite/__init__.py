"""The conformance suite: scenario files, the oracle, targets, runner and reports.

``run`` is the entry point (see :mod:`coordspec.conformance.suite.suite`); ``add_arguments`` and
``run_command`` give ``coordspec conform`` its options and behaviour. Importing the
package is cheap: the suite itself loads on first use.
"""

from coordspec.conformance.suite.cli import add_arguments, run_command

__all__ = ["Outcome", "SuiteError", "add_arguments", "run", "run_command"]


def __getattr__(name: str):
    if name in ("Outcome", "SuiteError", "run"):
        from coordspec.conformance.suite import suite

        return getattr(suite, name)
    raise AttributeError(f"module 'coordspec.conformance.suite' has no attribute {name!r}")
