"""``python -m coordspec.conformance.cli``: the ``coordspec`` command."""

import sys

from coordspec.conformance.cli import main

sys.exit(main())
