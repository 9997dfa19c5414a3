"""The project's broker with one mutant installed, in its own process:

    python -m coordspec.conformance.mutants.launch BUG [-m coordspec.broker.server] ARGS...

(``BrokerProcess(..., launcher=("-m", __name__, BUG))`` puts the broker's module and
arguments after it). The patch is installed after the broker's modules are imported, so it
reaches every name they bound, and stays on for the life of the process.
"""

from __future__ import annotations

import sys

from coordspec.broker import server
from coordspec.conformance.mutants import patches

SERVER = ["-m", "coordspec.broker.server"]


def main(argv: list[str]) -> int:
    bug, *rest = argv
    if rest[: len(SERVER)] == SERVER:
        rest = rest[len(SERVER) :]
    patches.install(int(bug))
    patches.ACTIVE = True
    return server.main(rest, prog=f"coordspec broker (mutant of bug #{bug})")


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
