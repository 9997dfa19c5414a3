import sys

from conformance.tracecheck.cli import main

sys.exit(main())
