"""``python -m coordspec.conformance.suite``: the suite without the ``coordspec`` command."""

import argparse
import sys

from coordspec.conformance.cli.conform import add_arguments, run_command
from coordspec.conformance.extras import load_kio_without_hypothesis, naming_extras

parser = argparse.ArgumentParser(
    prog="python -m coordspec.conformance.suite",
    description="Check a broker against the reference.",
)
add_arguments(parser)
args = parser.parse_args()
load_kio_without_hypothesis()
sys.exit(naming_extras(parser.prog, lambda: run_command(args)))
