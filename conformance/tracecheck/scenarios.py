"""The broker settings each catalog scenario assumes (its ``broker:`` block): a trace of a
conformance run names its scenario, and the reference replays it with those settings."""

from __future__ import annotations

import functools

from coordspec.conformance.suite import loader


@functools.cache
def scenario_settings() -> dict[str, dict[str, int]]:
    settings = {}
    for path in loader.discover():
        try:
            scenario = loader.load(path)
        except loader.ScenarioError:
            continue  # a lookup table: a scenario that does not load has no settings to give
        if scenario.broker:
            settings[scenario.name] = dict(scenario.broker)
    return settings
