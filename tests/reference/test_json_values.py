"""Decoding JSON values into the reference's types: what is refused, and with which words (the
trace checker prints them as ``file:line: fields.NAME: ...``)."""

from __future__ import annotations

import pytest

from coordspec.reference.errors import ErrorCode
from coordspec.reference.group import json_values
from coordspec.reference.group.requests import CommitPartition, Heartbeat, Protocol


@pytest.mark.parametrize(
    ("tp", "data", "error"),
    [
        (int, True, "expected int, got True"),  # JSON's true is no number
        (bool, 1, "expected bool, got 1"),
        (str, None, "expected str, got None"),
        (bytes, "AA!=", "Only base64 data is allowed"),
        (bytes, "AAA", "Incorrect padding"),
        (bytes, 5, "expected base64 text, got 5"),
        (str | None, 5, "5 is none of str | None"),
        (int | str, None, "None is none of int | str"),
        (str | int, 1.5, "1.5 is none of str | int"),  # equal unions keep their own order
        (tuple[int, ...], (1,), "expected a list, got (1,)"),
        (tuple[int, ...], [1, "2"], "expected int, got '2'"),
        (Protocol, [], "expected an object for Protocol, got []"),
        (ErrorCode, 12345, "12345 is not a valid ErrorCode"),
        (CommitPartition, {"partition_index": 0}, "missing 1 required positional argument"),
    ],
)
def test_a_value_of_another_type_is_refused_saying_what(tp, data, error):
    with pytest.raises((TypeError, ValueError)) as refused:
        json_values.decode(tp, data)
    assert error in str(refused.value)


def test_values_become_the_reference_types_and_unknown_fields_are_key_errors():
    assert json_values.decode(tuple[Protocol, ...], [{"name": "range", "metadata": "AAE="}]) == (
        Protocol("range", b"\x00\x01"),
    )
    assert json_values.decode(ErrorCode, 0) is ErrorCode.NONE
    assert (
        json_values.decode(int | str, "7") == "7" and json_values.decode(str | None, None) is None
    )
    fields = {"group_id": "g", "generation_id": 1, "member_id": "m", "group_instance_id": None}
    assert json_values.decode_request("Heartbeat", 3, 9, 5, fields) == Heartbeat(9, 3, 5, **fields)
    with pytest.raises(KeyError, match="generation"):
        json_values.decode_request("Heartbeat", 3, 9, 5, {"generation": 1})
    with pytest.raises(TypeError, match="multiple values for argument 'request_id'"):
        json_values.decode_request("Heartbeat", 3, 9, 5, {"request_id": 1})
