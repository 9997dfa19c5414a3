"""reference/frozen.py: a quickened class builds the same values and stays frozen."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from coordspec.reference.frozen import quicken
from coordspec.reference.group.effects import Reply
from coordspec.reference.group.records import OffsetCommitValue


@dataclasses.dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int = 7


@dataclasses.dataclass(frozen=True, slots=True)
class Checked:
    x: int

    def __post_init__(self) -> None:
        if self.x < 0:
            raise ValueError("negative")


@dataclasses.dataclass(frozen=True, slots=True)
class Listed:
    items: list = dataclasses.field(default_factory=list)


quicken(globals())


def test_a_quickened_class_keeps_its_signature_defaults_and_values():
    assert Point.__init__.__qualname__ == "Point.__init__"
    assert "__setattr__" not in Point.__init__.__code__.co_names
    assert list(inspect.signature(Point).parameters) == ["x", "y"]
    assert Point(1) == Point(x=1, y=7) and Point(1, 2) != Point(1)
    assert hash(Point(1, 2)) == hash(Point(1, 2))
    with pytest.raises(TypeError):
        Point()  # type: ignore[call-arg]
    with pytest.raises(dataclasses.FrozenInstanceError):
        Point(1).x = 2  # type: ignore[misc]


def test_a_quickened_class_still_checks_itself_after_init():
    assert "__setattr__" not in Checked.__init__.__code__.co_names
    with pytest.raises(ValueError, match="negative"):
        Checked(-1)
    assert Checked(1).x == 1


def test_a_class_with_a_default_factory_keeps_its_own_constructor():
    assert "__setattr__" in Listed.__init__.__code__.co_names  # dataclasses' own
    assert Listed().items == [] and Listed().items is not Listed().items


def test_the_reference_values_are_quickened_and_frozen():
    assert Reply.__init__.__module__ == Reply.__module__
    value = OffsetCommitValue(5, -1, "", 0, -1)
    assert dataclasses.astuple(value) == (5, -1, "", 0, -1)
    with pytest.raises(dataclasses.FrozenInstanceError):
        value.offset = 6  # type: ignore[misc]
    assert Reply(1, "Heartbeat", 4, None) == Reply(1, "Heartbeat", 4, None, after_append=3)  # type: ignore[arg-type]
