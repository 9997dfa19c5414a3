"""``conformance.json``: the run for dashboards and bots.

Its shape (``format`` is ``coordspec-conformance/1``; a key is only ever added)::

    {"format", "target", "wall_s",
     "counts": {"runs", "passed", "failed", "allowed", "error", "not_run", "divergences"},
     "severities": {class: meaning, ...}                  # most severe first
     "divergences": [{                                    # most severe first; number = position
        "number", "id",                                   # id: the same signature, the same id
        "severity", "why", "title", "allowed",            # allowed: every run of it tolerated
        "api", "versions": [int], "band": "v7-9", "kind", "field", "expected", "got",
        "runs", "stopped", "rules": [{"rule", "title"}], "scenarios": [str],
        "example": {"scenario", "plan", "step", "line", "kind", "message",
                    "request", "response", "allowed": [str],
                    "raw_response",                       # undecodable: a hex dump, or null
                    "answered_after_ms", "late_response"},  # an answer after the run failed
        "rerun",                                          # the command that reruns the example
        "failures": [{"scenario", "plan", "status", "step", "line"}]}],
     "rules": [{"rule", "title", "verdict", "passed", "failed", "allowed", "errors", "not_run",
                "divergences": [number]}],
     "apis": [{"api", "version", "verdict", "divergences": [number]}],   # every modelled version
     "allowed": [{"title", "api", "versions", "field", "expected", "got", "reason",
                  "times", "runs"}],                      # what --allow accepted as runs went on
     "not_run": [{"reason", "runs", "scenarios": [str]}],
     "flaky": [{"scenario", "plan", "passed", "failed"}],  # --loop
     "errors": [{"scenario", "plan", "reason", "text"}]}

Verdicts are ``passed``, ``failed``, ``allowed``, ``error`` and ``not_run``; a plan is
``{API: version}``.
"""

from __future__ import annotations

import json

from coordspec.conformance.suite.divergences import Divergence
from coordspec.conformance.suite.report_facts import Facts, divergence_id, title_of
from coordspec.conformance.suite.severity import SEVERITIES
from coordspec.reference.group.requests import VERSIONS

FORMAT = "coordspec-conformance/1"


def document(facts: Facts) -> dict:
    tally = facts.tally
    return {
        "format": FORMAT,
        "target": facts.target,
        "wall_s": round(facts.wall_s, 3),
        "counts": {"runs": len(facts.results), **tally, "divergences": len(facts.found)},
        "severities": SEVERITIES,
        "divergences": [_divergence(facts, n, d) for n, d in enumerate(facts.found, start=1)],
        "flaky": [
            {"scenario": f.scenario, "plan": f.plan, "passed": f.passed, "failed": f.failed}
            for f in facts.flaky
        ],
        "rules": [
            {
                "rule": v.rule,
                "title": title_of(v.rule),
                "verdict": v.verdict,
                "passed": v.passed,
                "failed": v.failed,
                "allowed": v.allowed,
                "errors": v.errors,
                "not_run": v.not_run,
                "divergences": facts.by_rule.get(v.rule, []),
            }
            for v in facts.rules
        ],
        "apis": [
            {
                "api": api,
                "version": n,
                "verdict": facts.grid.get(api, {}).get(n, "not_run"),
                "divergences": facts.by_cell.get((api, n), []),
            }
            for api, versions in VERSIONS.items()
            for n in versions
        ],
        "allowed": [
            {
                "title": t.title,
                "api": t.api,
                "versions": t.versions,
                "field": t.field,
                "expected": t.expected,
                "got": t.got,
                "reason": t.reason,
                "times": len(t.steps),
                "runs": t.runs,
            }
            for t in facts.tolerated
        ],
        "not_run": [
            {
                "reason": g.reason,
                "runs": len(g.runs),
                "scenarios": sorted({r.scenario for r in g.runs}),
            }
            for g in facts.not_run
        ],
        "errors": [
            {"scenario": r.scenario, "plan": r.plan, "reason": r.reason, "text": facts.text(r)}
            for g in facts.errors
            for r in g.runs
        ],
    }


def _divergence(facts: Facts, n: int, d: Divergence) -> dict:
    sig, example = d.signature, d.example
    f = example.failure
    return {
        "number": n,
        "id": divergence_id(d),
        "severity": d.severity,
        "why": d.why,
        "title": d.title,
        "allowed": d.allowed,
        "api": sig.api,
        "versions": d.versions,
        "band": d.band,
        "kind": sig.kind,
        "field": sig.field,
        "expected": sig.expected,
        "got": sig.got,
        "runs": len(d.runs),
        "stopped": d.stopped,
        "rules": [{"rule": r, "title": title_of(r)} for r in d.rules],
        "scenarios": d.scenarios,
        "example": {
            "scenario": example.scenario,
            "plan": example.plan,
            "step": f.step,
            "line": f.line,
            "kind": f.kind,
            "message": f.message,
            "request": f.request,
            "response": f.response,
            "allowed": list(f.allowed),
            "raw_response": f.raw_response,
            "answered_after_ms": f.answered_after_ms,
            "late_response": f.late_response,
        },
        "rerun": facts.rerun_of(example),
        "failures": [
            {
                "scenario": r.scenario,
                "plan": r.plan,
                "status": r.status,
                "step": r.failure.step,
                "line": r.failure.line,
            }
            for r in d.runs
        ],
    }


def text(facts: Facts) -> str:
    return json.dumps(document(facts), indent=1, ensure_ascii=False) + "\n"
