"""CF-1: a group's offsets partition is Kafka's ``Utils.abs(groupId.hashCode()) % partitions``.

The vectors below were produced on the real JVM (OpenJDK 17.0.15) by a single-file Java
program run as ``java Vectors.java``, printing for each id ``id.hashCode()`` and
``Utils.abs(h) % n`` for n = 50 and 7, with ``Utils.abs`` copied from Kafka
(``clients/src/main/java/org/apache/kafka/common/utils/Utils.java``:
``(n == Integer.MIN_VALUE) ? 0 : Math.abs(n)``). Non-ASCII ids are written with the same
escapes Java used.
"""

from __future__ import annotations

import pytest

from coordspec.reference.errors import UsageError
from coordspec.reference.failover.placement import java_string_hash, kafka_abs, partition_for

# (group id, String.hashCode, partition of 50, partition of 7), from the JVM.
JVM_VECTORS = [
    ("", 0, 0, 0),
    ("a", 97, 47, 6),
    ("group-id", 506313513, 13, 6),
    ("my-group", -1906497762, 12, 1),
    ("consumer-group-1", 147483020, 20, 6),
    ("polygenelubricants", -2147483648, 0, 0),  # hashCode == Integer.MIN_VALUE
    ("GydZG_", -2147483648, 0, 0),
    ("DESIGNING WORKHOUSES", -2147483648, 0, 0),
    ("Aa", 2112, 12, 5),
    ("BB", 2112, 12, 5),  # the classic collision with "Aa"
    ("caf\u00e9", 3045921, 21, 4),
    ("gr\u00fcppe", -1233264812, 12, 3),
    ("\u0433\u0440\u0443\u043f\u043f\u0430", 1749938458, 8, 2),
    ("\u7ec4-\u4e00", 31207735, 35, 6),
    ("\ud83d\ude00", 1772899, 49, 2),  # one emoji: two UTF-16 surrogates
    ("team-\ud83d\ude80-42", -1413476552, 2, 5),
    ("\ud834\udd1e clef", 1424431552, 2, 5),
    ("z" * 48, -1463210496, 46, 6),
    ("test-group-0", 2060176935, 35, 5),
    ("test-group-1", 2060176936, 36, 6),
    ("connect-cluster", 1440343063, 13, 5),
]


def _python_string(java_escaped: str) -> str:
    """Java's escapes are UTF-16 code units; join surrogate pairs into Python characters."""
    return java_escaped.encode("utf-16-be", "surrogatepass").decode("utf-16-be")


@pytest.mark.parametrize(("group_id", "hash_code", "of_50", "of_7"), JVM_VECTORS)
def test_partition_for_matches_the_jvm(group_id, hash_code, of_50, of_7):
    group_id = _python_string(group_id)
    assert java_string_hash(group_id) == hash_code
    assert partition_for(group_id, 50) == of_50
    assert partition_for(group_id, 7) == of_7
    assert partition_for(group_id, 1) == 0


def test_emoji_counts_as_two_code_units():
    assert len("\U0001f600") == 1
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00


def test_integer_min_value_maps_to_partition_zero_not_math_abs():
    assert java_string_hash("polygenelubricants") == -(2**31)
    assert kafka_abs(-(2**31)) == 0
    assert abs(-(2**31)) % 50 == 48  # what Python's abs (or a Long in Java) would give
    assert partition_for("polygenelubricants", 50) == 0


def test_default_partition_count_is_kafkas_fifty():
    assert partition_for("my-group") == 12


@pytest.mark.parametrize("partitions", [0, -1, True, 2.0])
def test_partition_count_must_be_positive(partitions):
    with pytest.raises(UsageError, match="at least one partition"):
        partition_for("g", partitions)


def test_group_id_must_be_a_string():
    with pytest.raises(UsageError, match="expected a str"):
        java_string_hash(None)
