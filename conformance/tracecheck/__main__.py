import sys

from coordspec.conformance.tracecheck.cli import main

sys.exit(main())
