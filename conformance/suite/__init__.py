"""The conformance suite: scenario files, the oracle, targets, runner and reports.

``run`` is the entry point (see :mod:`conformance.suite.suite`); ``add_arguments`` and
``run_command`` give ``coordspec conform`` its options and behaviour.
"""

from conformance.suite.cli import add_arguments, run_command
from conformance.suite.suite import Outcome, SuiteError, run

__all__ = ["Outcome", "SuiteError", "add_arguments", "run", "run_command"]
