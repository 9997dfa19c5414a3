"""A reference target whose coordinator carries the installed mutant: for bugs of APIs the
project's broker does not serve (transactions), and for tests that check each patch changes
behaviour. The patch acts only inside this target's steps (``patches.active``), so the
oracle, in the same process, stays Kafka."""

from __future__ import annotations

import io

from coordspec.conformance.mutants import patches
from coordspec.conformance.suite import suite
from coordspec.conformance.suite.reference_target import ReferenceSession, ReferenceTarget
from coordspec.conformance.suite.results import RunResult
from coordspec.conformance.suite.scenario import Scenario


class _MutatedSession(ReferenceSession):
    def _handle(self, event) -> None:
        with patches.active():
            super()._handle(event)


class MutatedTarget(ReferenceTarget):
    async def open(self, group_id, config, *, faults=False):
        plain = await super().open(group_id, config, faults=faults)
        return _MutatedSession(config, plain.choices, plain.topics)


def run_catalog(
    bug: int | None, scenarios: list[Scenario], *, versions: str = "latest"
) -> list[RunResult]:
    """Every run of ``scenarios`` on the reference target with mutant ``bug`` (None: none)."""
    if bug is not None:
        patches.install(bug)
    try:
        outcome = suite.run(
            MutatedTarget(),
            scenarios=[s.path for s in scenarios],
            version_selection=versions,
            out=io.StringIO(),
        )
    finally:
        if bug is not None:
            patches.uninstall()
    return outcome.results
