"""``python -m coordspec.conformance.tracecheck``, and the script spark-submit runs
(spec/trace-pipeline.md): the trace commands without the ``coordspec`` command."""

import sys

from coordspec.conformance.cli.trace import main

sys.exit(main())
