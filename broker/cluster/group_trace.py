"""A cluster broker's JSONL trace of the group protocol (spec/trace-format.md), through
the single broker's writer (:mod:`coordspec.broker.trace`).

Every broker writes its own file, all under the cluster's run and clock, so the files
together are one run in which a group's coordinator may change. Only what a group's
coordinator decides is traced:

- a request is traced when this broker serves the group's offsets partition as it arrives
  (a request it answers NOT_COORDINATOR or COORDINATOR_LOAD_IN_PROGRESS never reached a
  coordinator), and its response when it comes;
- a response that says NOT_COORDINATOR, or that a resignation gave, is left out: the
  coordinator lost the group with the request in flight, as in a crash;
- when the broker has loaded a partition, a ``load_group`` fault, stamped at the load, is
  written for every group it loaded, and for any other group of the partition before that
  group's first traced request (a group the previous coordinator had in memory only). Its
  ``down_ms`` is a time by which the previous coordinator had surely not stopped, and a
  checker fires no timer of the old state after it: the later of the last write in the
  partition's log (the previous coordinator wrote it) and, when this broker has run for
  longer than 1.5 ZooKeeper session timeouts, becoming coordinator less that much (a
  crashed or paused coordinator's session expires one timeout after it stopped). A broker
  that has just started (the cluster starting again) cannot tell how long ago the previous
  coordinator stopped;
- the broker's topics as its coordinators know them (a ``metadata_image``): after a group's
  ``load_group`` fault, the image the partition was loaded with, and before a group's
  request after the image changed, the new one; and each regex resolution
  (``resolve_regular_expressions``), as the single broker writes them.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields, is_dataclass
from typing import Any

from coordspec.broker.group_image import Image, ImagesShown
from coordspec.broker.trace import Trace
from coordspec.reference.errors import ErrorCode
from coordspec.reference.failover.host import CoordinatorHost
from coordspec.reference.group.effects import Reply

LOAD_GROUP = "load_group"


@dataclass
class _Tenure:
    down_ms: int  # the previous coordinator had not stopped before this
    loaded_ms: int = -1  # -1: loading
    image: Image | None = None  # what the partition's coordinator was loaded with
    announced: set[str] = field(default_factory=set)  # groups with their load_group fault written


def says_not_coordinator(response: Any) -> bool:
    """Any error code in the response (top level or per group / partition) is NOT_COORDINATOR."""
    if is_dataclass(response):
        return any(says_not_coordinator(getattr(response, f.name)) for f in fields(response))
    if isinstance(response, (tuple, list)):
        return any(says_not_coordinator(v) for v in response)
    return isinstance(response, ErrorCode) and response == ErrorCode.NOT_COORDINATOR


class GroupTrace:
    def __init__(
        self,
        trace: Trace,
        host: CoordinatorHost,
        zookeeper_session_timeout_ms: int,
        started_ms: int,
        image: Callable[[], Image],
    ) -> None:
        self.trace = trace
        self.host = host
        self._image = image
        self._shown = ImagesShown(trace)
        self.stop_margin_ms = zookeeper_session_timeout_ms * 3 // 2
        self.started_ms = started_ms
        self._tenures: dict[int, _Tenure] = {}
        self._traced: dict[
            int | str, int
        ] = {}  # request id -> its group's offsets partition, until answered

    def became(self, partition: int, now_ms: int) -> None:
        if partition not in self._tenures:
            seen_long_enough = now_ms - self.started_ms >= self.stop_margin_ms
            self._tenures[partition] = _Tenure(
                now_ms - self.stop_margin_ms if seen_long_enough else 0
            )

    def loaded(self, partition: int, now_ms: int, last_write_ms: int) -> None:
        """``last_write_ms``: when the last batch in the partition's log was written (0: none)."""
        tenure = self._tenures.get(partition)
        coordinator = self.host.serving(partition)
        if tenure is None or coordinator is None:
            return
        tenure.loaded_ms = now_ms
        tenure.down_ms = max(tenure.down_ms, last_write_ms)
        tenure.image = self._image()
        for group_id in sorted(coordinator.groups):
            self._announce(partition, tenure, group_id)

    def resigned(self, partition: int) -> None:
        if self.host.state(partition) is not None:
            return  # still hosted: an older epoch, ignored
        self._tenures.pop(partition, None)
        for request_id in [r for r, p in self._traced.items() if p == partition]:
            del self._traced[request_id]
            self.trace.forget(request_id)

    def _announce(self, partition: int, tenure: _Tenure, group_id: str) -> None:
        if group_id not in tenure.announced:
            tenure.announced.add(group_id)
            self.trace.fault(tenure.loaded_ms, group_id, LOAD_GROUP, down_ms=tenure.down_ms)
            if tenure.image is not None:
                self._shown.show(tenure.loaded_ms, group_id, tenure.image, again=True)

    def _tenure(self, group_id: str) -> _Tenure | None:
        """The tenure of the group's partition, if this broker serves it."""
        partition = self.host.partition_for(group_id)
        tenure = self._tenures.get(partition)
        if tenure is None or tenure.loaded_ms < 0 or self.host.serving(partition) is None:
            return None
        return tenure

    def request(self, client: str, request: Any) -> None:
        if not self.trace.enabled:
            return
        group_id = request.trace_group
        if group_id:
            tenure = self._tenure(group_id)
            if tenure is None:
                return  # no coordinator here: the host refuses it
            self._announce(self.host.partition_for(group_id), tenure, group_id)
            # every coordinator here knows the topics (GM-56), classic ones too
            self._shown.show(request.now_ms, group_id, self._image())
        self._traced[request.request_id] = self.host.partition_for(group_id)
        self.trace.request(request.now_ms, client, request)

    def resolved(self, now_ms: int, group_id: str) -> None:
        """The group's coordinator here resolved its regexes (CG-68)."""
        if self.trace.enabled and self._tenure(group_id) is not None:
            self.trace.resolve_regular_expressions(now_ms, group_id)

    def reply(self, now_ms: int, reply: Reply, resigning: bool) -> None:
        if self._traced.pop(reply.request_id, None) is None:
            return
        if resigning or says_not_coordinator(reply.response):
            self.trace.forget(reply.request_id)
        else:
            self.trace.response(
                now_ms, reply.api, reply.api_version, reply.request_id, reply.response
            )

    def close(self) -> None:
        self.trace.close()
