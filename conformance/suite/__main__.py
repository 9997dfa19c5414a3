"""``python -m coordspec.conformance.suite``: the suite without the ``coordspec`` command."""

import argparse
import sys

from coordspec.conformance.cli.conform import add_arguments, run_command

parser = argparse.ArgumentParser(
    prog="python -m coordspec.conformance.suite",
    description="Check a broker against the reference.",
)
add_arguments(parser)
sys.exit(run_command(parser.parse_args()))
