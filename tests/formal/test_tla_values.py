"""The one printer and parser of TLA+ values (conformance/formal/tla_values.py) that the three
spec checks share."""

from __future__ import annotations

import pytest

from coordspec.conformance.formal.tla_values import Record, parse_value, tla_value

MODEL_VALUES = frozenset({"b1", "b2"})


def test_sets_sequences_records_and_functions_parse_as_tla_sees_them():
    assert parse_value("{b1, b2}") == frozenset({"b1", "b2"})
    assert parse_value("<<3, 4>>") == {1: 3, 2: 4}
    assert parse_value("<<>>") == {}
    assert parse_value('[leader |-> b1, epoch |-> 2, name |-> "g"]') == {
        "leader": "b1",
        "epoch": 2,
        "name": "g",
    }
    assert parse_value("(b1 :> TRUE @@ b2 :> FALSE)") == {"b1": True, "b2": False}


def test_a_set_of_records_or_of_sequences_is_a_set():
    records = parse_value("{[broker |-> b1, index |-> 1], [broker |-> b2, index |-> 2]}")
    assert {(r["broker"], r["index"]) for r in records} == {("b1", 1), ("b2", 2)}
    pairs = parse_value("{<<1, 0>>, <<2, 1>>}")
    assert {tuple(p[j] for j in sorted(p)) for p in pairs} == {(1, 0), (2, 1)}
    assert all(isinstance(p, Record) for p in pairs)


def test_printed_values_parse_back():
    value = {
        "isr": frozenset({"b1", "b2"}),
        "log": (1, 1, 2),
        "view": {"b1": {"leader": "b2", "epoch": 1}, "b2": {"leader": "none", "epoch": 0}},
    }
    parsed = parse_value(tla_value(value, MODEL_VALUES))
    assert parsed["isr"] == value["isr"]
    assert parsed["log"] == {1: 1, 2: 1, 3: 2}
    assert parsed["view"] == value["view"]


def test_text_that_is_no_value_is_refused():
    with pytest.raises(ValueError):
        parse_value("{b1, b2} junk ]")
