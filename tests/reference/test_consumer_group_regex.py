"""Regular expression subscriptions of a consumer group (CG-66..CG-70), written from Kafka's
``GroupMetadataManager`` (``maybeUpdateRegularExpressions``, ``handleRegularExpressionsResult``,
``maybeDeleteResolvedRegularExpressions``; apache/kafka trunk 0013464cf112, after 4.0) and
``GroupCoordinatorService.throwIfConsumerGroupHeartbeatRequestIsInvalid``. Kafka's executor
runs the resolution when a heartbeat asks for it; here the test sends
``ResolveRegularExpressions`` where Kafka's tests run ``executor.poll()``.
"""

from __future__ import annotations

import dataclasses

import pytest
from consumer_group_context import (
    GROUP_ID,
    Context,
    assignment,
    current_record,
    epoch_record,
    group_records,
    member,
    subscription_record,
    target_epoch_record,
)

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group.consumer.regex import refusal, resolve
from coordspec.reference.group.consumer.replay import replay_consumer_groups
from coordspec.reference.group.records import (
    ConsumerGroupRegularExpressionKey,
    ConsumerGroupRegularExpressionValue,
    Record,
)
from coordspec.reference.group.requests import ConsumerGroupDescribe

JOIN = {"member_epoch": 0, "rebalance_timeout_ms": 5000, "topic_partitions": ()}
TOPICS = {"foo": 3, "bar": 2, "baz": 1}


def regex_record(regex: str, topics: tuple[str, ...], version: int = 0, at: int = 0) -> Record:
    return Record(
        ConsumerGroupRegularExpressionKey(GROUP_ID, regex),
        ConsumerGroupRegularExpressionValue(topics, version, at),
    )


def regex_tombstone(regex: str) -> Record:
    return Record(ConsumerGroupRegularExpressionKey(GROUP_ID, regex), None)


def stable_group(*, resolved: dict[str, tuple[str, ...]] | None = None) -> Context:
    """m1 stable at epoch 10 with foo by name."""
    m1 = member("m1", member_epoch=10, previous_member_epoch=9, subscribed_topic_names=("foo",))
    m1 = dataclasses.replace(m1, assigned=assignment(foo=(0, 1, 2)))
    records = group_records(GROUP_ID, 10, [m1], {"m1": m1.assigned})
    records += [regex_record(r, t) for r, t in (resolved or {}).items()]
    return Context(TOPICS, records)


@pytest.mark.parametrize(
    "pattern",
    [
        "(?=foo)foo",  # lookahead
        "(?!bar)ba.",  # negative lookahead
        "(?<=f)oo",  # lookbehind
        "(?<!f)oo",  # negative lookbehind
        "(?>fo)o",  # atomic group (Python 3.11)
        "(f)?(?(1)oo|bar)",  # conditional
        "foo(?#comment)",  # comment group
        "(f)o\\1",  # backreference
        "foo\\Z",  # RE2 has \z, not \Z
        "fo*+",  # possessive (Python 3.11)
        "fo{1,2}+",  # possessive after a counted repetition
        "(?x)f o o",  # verbose flag
        "(?a)foo",  # ASCII flag
        "[foo",  # a syntax error for both
        "*foo",
        # RE2 syntax not modelled (Kafka accepts it): refused rather than read otherwise
        "[[:alpha:]]+",
        "fo{,2}",
        "foo\\z",
        "(?U)fo+",
    ],
)
def test_invalid_regular_expression(pattern):
    """CG-67: a regex RE2J refuses is answered INVALID_REGULAR_EXPRESSION, nothing written;
    so is RE2 syntax the reference does not model."""
    context = stable_group()
    response, records = context.heartbeat(
        member_id="m2", subscribed_topic_regex=pattern, subscribed_topic_names=None, **JOIN
    )
    assert (response.error_code, records) == (ErrorCode.INVALID_REGULAR_EXPRESSION, [])
    assert "m2" not in context.group().members


@pytest.mark.parametrize(
    "pattern", ["foo.*", "(?i)FOO", "(?P<n>ba)[rz]", "[\\]]x", "ba(?:r|z)", "b.{1,2}?"]
)
def test_valid_regular_expressions(pattern):
    """CG-67: RE2 syntax Python reads the same way is accepted."""
    assert refusal(pattern) is None


def test_regex_matches_whole_topic_names():
    """CG-68: Matcher.matches: the whole name, not a part of it."""
    assert resolve("ba.", ["bar", "baz", "barn", "foo"]) == {"bar", "baz"}
    assert resolve("a", ["bar"]) == frozenset()


def test_join_requires_names_or_regex():
    """CG-1: a join carries subscribed topic names or a regex (either may be empty)."""
    response, _ = Context(TOPICS).heartbeat(
        member_id="m", subscribed_topic_names=None, subscribed_topic_regex=None, **JOIN
    )
    assert response.error_code == ErrorCode.INVALID_REQUEST
    response, _ = Context(TOPICS).heartbeat(
        member_id="m", subscribed_topic_names=None, subscribed_topic_regex="", **JOIN
    )
    assert response.error_code == ErrorCode.NONE


def test_new_regex_waits_for_its_resolution():
    """CG-66, CG-68: a member bringing a regex no member has is written without bumping the
    group epoch; it reconciles to the current target (nothing for it) until the regex is
    resolved, which writes the resolution and bumps the epoch; its next heartbeat gets the
    new target."""
    context = stable_group()
    response, records = context.heartbeat(
        member_id="m2", subscribed_topic_regex="ba.", subscribed_topic_names=None, **JOIN
    )
    m2 = member("m2", subscribed_topic_regex="ba.")
    joined = dataclasses.replace(m2, member_epoch=10, previous_member_epoch=0)
    assert (response.error_code, response.member_epoch, response.assignment) == (
        ErrorCode.NONE,
        10,
        (),
    )
    assert records == [subscription_record(GROUP_ID, m2), current_record(GROUP_ID, joined)]

    context.now_ms += 100
    records = context.resolve_regular_expressions()
    assert records == [regex_record("ba.", ("bar", "baz"), 0, 100), epoch_record(GROUP_ID, 11)]
    assert context.group().resolved_regexes == {"ba.": frozenset({"bar", "baz"})}

    response, records = context.heartbeat(member_id="m2", member_epoch=10)
    assert response.member_epoch == 11
    assert context.group().target["m2"] == assignment(bar=(0, 1), baz=(0,))
    assert target_epoch_record(GROUP_ID, 11) in records


def test_regex_already_resolved_bumps_at_once():
    """CG-66: a member subscribing to a regex the group has resolved bumps the group epoch at
    once (REGEX_UPDATED_AND_RESOLVED), and no refresh is needed."""
    context = stable_group()
    context.heartbeat(
        member_id="m2", subscribed_topic_regex="ba.", subscribed_topic_names=None, **JOIN
    )
    context.resolve_regular_expressions()
    response, records = context.heartbeat(
        member_id="m3", subscribed_topic_regex="ba.", subscribed_topic_names=None, **JOIN
    )
    m3 = member("m3", subscribed_topic_regex="ba.")
    assert records[:2] == [subscription_record(GROUP_ID, m3), epoch_record(GROUP_ID, 12)]
    assert response.member_epoch == 12


def test_names_and_regex_together():
    """CG-66: Kafka does not refuse both; the member subscribes to the names and to the
    topics its regex resolves to."""
    context = stable_group(resolved={"ba.": ("bar", "baz")})
    context.heartbeat(
        member_id="m2",
        subscribed_topic_regex="ba.",
        subscribed_topic_names=("foo",),
        server_assignor="range",
        **JOIN,
    )
    group = context.group()
    assert group.subscription(group.members["m2"]) == {"foo", "bar", "baz"}
    assert group.target["m2"] >= assignment(bar=(0, 1), baz=(0,))


def test_resolution_unchanged_does_not_bump():
    """CG-68: a refresh that finds the same topics writes the resolution again, no epoch."""
    context = stable_group()
    context.heartbeat(
        member_id="m2", subscribed_topic_regex="ba.", subscribed_topic_names=None, **JOIN
    )
    context.resolve_regular_expressions()
    context.now_ms += 5
    assert context.resolve_regular_expressions() == [regex_record("ba.", ("bar", "baz"), 0, 5)]


def test_regex_resolving_to_nothing_does_not_bump():
    """CG-68: an unresolved regex counts as resolved to no topic."""
    context = stable_group()
    context.heartbeat(
        member_id="m2", subscribed_topic_regex="qux.*", subscribed_topic_names=None, **JOIN
    )
    assert context.resolve_regular_expressions() == [regex_record("qux.*", ())]


def test_new_topic_matching_a_regex_bumps_the_epoch():
    """CG-68, CG-70: after a metadata image with a new topic, the next resolution finds it;
    the group epoch moves and the member's target takes the topic."""
    context = stable_group()
    context.heartbeat(
        member_id="m2", subscribed_topic_regex="ba.", subscribed_topic_names=None, **JOIN
    )
    context.resolve_regular_expressions()
    context.heartbeat(member_id="m2", member_epoch=10)
    context.new_metadata_image({**TOPICS, "bat": 2})
    records = context.resolve_regular_expressions()
    assert records == [regex_record("ba.", ("bar", "bat", "baz"), 1), epoch_record(GROUP_ID, 12)]
    context.heartbeat(member_id="m2", member_epoch=11)
    assert context.group().target["m2"] == assignment(bar=(0, 1), bat=(0, 1), baz=(0,))


def test_last_member_leaving_a_regex_tombstones_it():
    """CG-69: the last member to leave a regex (by a new regex, or by leaving the group)
    takes its resolution with it; another subscriber keeps it."""
    context = stable_group()
    for m in ("m2", "m3"):
        context.heartbeat(
            member_id=m, subscribed_topic_regex="ba.", subscribed_topic_names=None, **JOIN
        )
        context.resolve_regular_expressions()  # bumps to 11 for m2; m3 bumps to 12 on joining
    _, records = context.heartbeat(member_id="m2", member_epoch=-1)
    assert regex_tombstone("ba.") not in records
    _, records = context.heartbeat(member_id="m3", member_epoch=-1)
    assert records[-2:] == [regex_tombstone("ba."), epoch_record(GROUP_ID, 14)]
    assert context.group().resolved_regexes == {}


def test_changing_the_regex():
    """CG-66, CG-69: a member moving from the regex it alone had to a new one tombstones
    the old resolution and waits for the new; moving to the empty regex bumps at once."""
    context = stable_group()
    context.heartbeat(
        member_id="m2", subscribed_topic_regex="ba.", subscribed_topic_names=None, **JOIN
    )
    context.resolve_regular_expressions()
    context.heartbeat(member_id="m2", member_epoch=10)
    _, records = context.heartbeat(member_id="m2", member_epoch=11, subscribed_topic_regex="fo+")
    m2 = member("m2", subscribed_topic_regex="fo+")
    assert records[:2] == [subscription_record(GROUP_ID, m2), regex_tombstone("ba.")]
    assert epoch_record(GROUP_ID, 12) not in records
    context.resolve_regular_expressions()
    _, records = context.heartbeat(member_id="m2", member_epoch=11, subscribed_topic_regex="")
    assert records[1:3] == [regex_tombstone("fo+"), epoch_record(GROUP_ID, 13)]


def test_a_regex_left_for_one_matching_nothing_gives_up_its_topics():
    """CG-68, CG-69: m2 alone subscribed to "ba." moves to a regex matching no topic. Its
    move tombstones "ba."'s resolution without moving the epoch; the resolution of the new
    regex finds nothing, as before, but the group's subscribed topics have lost bar and baz,
    so the epoch moves (Kafka recomputes the subscription metadata on every resolution) and
    m2's target gives them up."""
    context = stable_group()
    context.heartbeat(
        member_id="m2", subscribed_topic_regex="ba.", subscribed_topic_names=None, **JOIN
    )
    context.resolve_regular_expressions()
    context.heartbeat(member_id="m2", member_epoch=10)
    assert context.group().target["m2"] == assignment(bar=(0, 1), baz=(0,))
    _, records = context.heartbeat(member_id="m2", member_epoch=11, subscribed_topic_regex="qu+x")
    assert regex_tombstone("ba.") in records and epoch_record(GROUP_ID, 12) not in records
    records = context.resolve_regular_expressions()
    assert records == [regex_record("qu+x", ()), epoch_record(GROUP_ID, 12)]
    context.heartbeat(member_id="m2", member_epoch=11)
    assert context.group().target["m2"] == frozenset()


def test_resolution_survives_failover():
    """CG-41, CG-68: the loader rebuilds each resolution from its record; a tombstone removes
    it."""
    context = stable_group()
    context.heartbeat(
        member_id="m2", subscribed_topic_regex="ba.", subscribed_topic_names=None, **JOIN
    )
    context.resolve_regular_expressions()
    log = context.log
    loaded = Context(TOPICS, group_records(GROUP_ID, 10, [], {}) + log)
    assert loaded.group().resolved_regexes == {"ba.": frozenset({"bar", "baz"})}
    assert replay_consumer_groups([*log, regex_tombstone("ba.")])[GROUP_ID].resolved_regexes == {}


def test_describe_shows_the_regex():
    """CG-50: ConsumerGroupDescribe shows each member's regex."""
    context = stable_group()
    context.heartbeat(
        member_id="m2", subscribed_topic_regex="ba.", subscribed_topic_names=None, **JOIN
    )
    effects = context.coordinator.handle(
        ConsumerGroupDescribe(request_id="d", api_version=0, now_ms=0, group_ids=(GROUP_ID,))
    )
    (described,) = effects[0].response.groups
    by_id = {m.member_id: m for m in described.members}
    assert by_id["m2"].subscribed_topic_regex == "ba."


def test_resolutions_load_into_their_own_group():
    """CG-41: resolutions of two groups load into their own group."""
    other = Record(
        ConsumerGroupRegularExpressionKey("other", "x"),
        ConsumerGroupRegularExpressionValue(("foo",), 0, 0),
    )
    groups = replay_consumer_groups([regex_record("ba.", ("bar",)), other])
    assert groups[GROUP_ID].resolved_regexes == {"ba.": frozenset({"bar"})}
    assert groups["other"].resolved_regexes == {"x": frozenset({"foo"})}
