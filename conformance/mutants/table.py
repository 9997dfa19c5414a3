"""spec/conformance-power.md, rendered from the catalog (``coordspec mutants --table``)."""

from __future__ import annotations

from coordspec.conformance.mutants import catalog

HEAD = """# Conformance power: the catalogued bugs the catalog catches

Each applicable bug of the bug catalog (78 bugs that Kafka-compatible brokers shipped, with
their threads: `../shared/research/conformance-anchors.md`, section b) has a mutant: a small
change of the project's own broker that makes it behave as the buggy broker did, installed in
the broker's process only (`conformance/mutants/`). `coordspec mutants` starts the broker
with each mutant and runs the conformance catalog against it as against any Kafka broker,
with the project's reference as the oracle; a mutant is *caught* when a scenario that passes
on the unmutated broker fails on it, and fails again when run alone. The mutant's probe
scenario runs first, the rest of the catalog only if the probe misses it, so the scenario
named is the first that caught it, not the only one. Bugs of transactional offsets (#46,
#47) have mutants of the reference target instead, measured in process the same way: the
project's broker serves no transactions, and only the reference target can act as the
transaction coordinator in a scenario (GM-57 … GM-59).
`tests/conformance/test_mutants.py` checks that each patch changes behaviour (its probe fails
on a mutated reference target), and CI runs a sample on the broker
(`tests/conformance/test_mutants_wire.py`). This page is generated from
`conformance/mutants/catalog.py` (`coordspec mutants --table`);
`tests/conformance/test_mutants.py` keeps them equal.

Five mutants were first missed by the catalog (their patches changed no answer any scenario
looked at): #8, #38, #39, #41 and #52. The scenarios that now catch them were written for
them: `joiner-needs-a-protocol-every-member-supports`,
`offsets-expire-only-after-retention-after-restart`, `offsets-kept-while-rebalancing`,
`reused-group-id-offsets-survive-restart` and `commit-after-restart-is-fetched`.

"""


def render() -> str:
    mutants = catalog.MUTANTS
    caught = [m for m in mutants if m.caught_by]
    share = 100 * len(caught) / len(mutants)
    lines = [
        HEAD,
        (
            f"Recorded {catalog.RECORDED}: **{len(caught)} of {len(mutants)} applicable bugs "
            f"caught ({share:.0f}%)**; {len(catalog.NOT_APPLICABLE)} bugs do not apply.\n"
        ),
        "\n## Applicable bugs\n\n",
        "| bug | behaviour | thread | the mutant | verdict |\n",
        "|---|---|---|---|---|\n",
    ]
    for m in mutants:
        verdict = f"caught by `{m.caught_by}`" if m.caught_by else f"**missed**: {m.missed}"
        lines.append(f"| {m.bug} | {m.title} | {m.thread} | {m.patch} | {verdict} |\n")
    lines += ["\n## Bugs that do not apply\n\n", "| bug | behaviour | why |\n", "|---|---|---|\n"]
    for n in catalog.NOT_APPLICABLE:
        lines.append(f"| {n.bug} | {n.title} | {n.reason} |\n")
    return "".join(lines)
