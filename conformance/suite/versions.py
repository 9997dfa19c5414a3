"""API version ranges, and the version plans a scenario runs under.

A scenario applies to a range of versions per API (``JoinGroup: 4+``). It runs once per
*plan*. The plans line the ranges up at their newest versions: the last plan uses every
API's highest version, each plan before it one version older, and a shorter range stays at
its lowest. So every applicable version of every API is exercised, new versions with new
ones and old with old (as clients of one Kafka release send them), in as many runs as the
longest range has versions, not in the product of all ranges.
"""

from __future__ import annotations

import re

from coordspec.reference.group.requests import VERSIONS

APIS = tuple(VERSIONS)
_RANGE = re.compile(r"^(?:(?P<all>all)|(?P<lo>\d+)(?:(?P<plus>\+)|-(?P<hi>\d+))?)$")


class VersionError(ValueError):
    """A version range that cannot be read, or that the reference does not model."""


def parse_range(api: str, text: object) -> range:
    """``all``, ``4``, ``4+`` or ``2-5``, within the versions the reference models for ``api``."""
    if api not in VERSIONS:
        raise VersionError(f"unknown API {api!r} (known: {', '.join(APIS)})")
    known = VERSIONS[api]
    match = _RANGE.match(str(text).strip())
    if match is None:
        raise VersionError(f"{api}: version range {text!r} is not one of all, N, N+, N-M")
    if match["all"]:
        return known
    lo = int(match["lo"])
    hi = known.stop - 1 if match["plus"] else int(match["hi"]) if match["hi"] else lo
    if lo > hi:
        raise VersionError(f"{api}: version range {text} runs backwards (write {hi}-{lo})")
    if lo < known.start or hi >= known.stop:
        raise VersionError(
            f"{api}: versions {text} lie outside v{known.start}-v{known.stop - 1}, the versions the reference models"
        )
    return range(lo, hi + 1)


def label(api: str, versions: range) -> str:
    return (
        f"{api} v{versions.start}"
        if len(versions) == 1
        else f"{api} v{versions.start}-{versions.stop - 1}"
    )


def plans(ranges: dict[str, range]) -> list[dict[str, int]]:
    """One version per API for each run, lined up at the newest versions."""
    if not ranges:
        return [{}]
    longest = max(len(r) for r in ranges.values())
    return [
        {api: r[max(0, len(r) - longest + i)] for api, r in ranges.items()} for i in range(longest)
    ]


def narrow(ranges: dict[str, range], allowed: dict[str, range]) -> dict[str, range] | None:
    """The ranges within ``allowed`` (what the target and the command line allow); None if
    some API has no version left."""
    narrowed = {}
    for api, r in ranges.items():
        limit = allowed.get(api, r)
        lo, hi = max(r.start, limit.start), min(r.stop, limit.stop)
        if lo >= hi:
            return None
        narrowed[api] = range(lo, hi)
    return narrowed


def parse_selection(text: str) -> tuple[str, dict[str, range]]:
    """``--versions``: ``all`` (default), ``latest``, ``oldest``, or ``API=RANGE,...``.

    Returns a mode (``all``, ``latest``, ``oldest``) and per-API limits."""
    text = text.strip()
    if text in ("all", "latest", "oldest"):
        return text, {}
    limits = {}
    for part in text.split(","):
        api, sep, spec = part.partition("=")
        if not sep:
            raise VersionError(f"--versions: {part!r} is not API=RANGE (or all, latest, oldest)")
        limits[api.strip()] = parse_range(api.strip(), spec)
    return "all", limits


def select(all_plans: list[dict[str, int]], mode: str) -> list[dict[str, int]]:
    if mode == "latest":
        return all_plans[-1:]
    if mode == "oldest":
        return all_plans[:1]
    return all_plans
