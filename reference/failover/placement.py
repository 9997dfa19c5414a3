"""Which ``__consumer_offsets`` partition holds a group (CF-1).

Kafka computes ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``
(``GroupCoordinatorService.partitionFor`` in Kafka 4.0, ``GroupMetadataManager.partitionFor``
in the ZooKeeper-era coordinator). Two Java details decide the answer:

* ``String.hashCode`` runs over UTF-16 code units, so a character outside the Basic
  Multilingual Plane (an emoji) counts as its two surrogates, and the sum wraps around as
  a signed 32-bit int;
* ``Utils.abs`` maps ``Integer.MIN_VALUE`` to 0, where ``Math.abs`` would return it
  unchanged (and the modulo would then be negative).
"""

from __future__ import annotations

from coordspec.reference.errors import UsageError

OFFSETS_TOPIC = "__consumer_offsets"
DEFAULT_OFFSETS_PARTITIONS = 50  # offsets.topic.num.partitions

_INT_MIN = -(2**31)


def _to_int32(n: int) -> int:
    n &= 0xFFFFFFFF
    return n - 2**32 if n >= 2**31 else n


def java_string_hash(s: str) -> int:
    """``java.lang.String.hashCode``: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 code units, as an int."""
    if not isinstance(s, str):
        raise UsageError(f"java_string_hash: expected a str, got {type(s).__name__}")
    units = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(units), 2):
        h = (31 * h + ((units[i] << 8) | units[i + 1])) & 0xFFFFFFFF
    return _to_int32(h)


def kafka_abs(n: int) -> int:
    """``org.apache.kafka.common.utils.Utils.abs``: like ``Math.abs`` but ``Integer.MIN_VALUE`` gives 0."""
    return 0 if n == _INT_MIN else abs(n)


def partition_for(group_id: str, partitions: int = DEFAULT_OFFSETS_PARTITIONS) -> int:
    """The offsets partition whose leader coordinates ``group_id``."""
    if not isinstance(partitions, int) or isinstance(partitions, bool) or partitions < 1:
        raise UsageError(
            f"partition_for: the offsets topic needs at least one partition, got {partitions!r}"
        )
    return kafka_abs(java_string_hash(group_id)) % partitions
