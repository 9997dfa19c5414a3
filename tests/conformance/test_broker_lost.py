"""When the broker under test dies, the runs it cut short are the harness's errors, not
conformance failures: also those that ended around the death, in whatever order."""

import asyncio
import io
import time

import pytest

from coordspec.conformance.suite import outputs
from coordspec.conformance.suite.progress import Progress
from coordspec.conformance.suite.results import Failure, RunResult
from coordspec.conformance.suite.suite import LOST_AFTER, BrokerLost, _Runs


def _runs() -> _Runs:
    return _Runs(
        [], [], Progress(100, io.StringIO()), outputs.ReportWriter("kafka", None, None, ""), None
    )


def _result(n: int, status: str, duration_s: float = 0.01) -> RunResult:
    result = RunResult("s", "s.yaml", "", (), {"JoinGroup": 6}, f"g{n}", duration_s=duration_s)
    if status == "cannot reach":
        message = "JoinGroup v6: cannot reach 127.0.0.1:1: Connection refused"
        result.status, result.reason = "failed", message
        result.failure = Failure("connection", 1, 1, message, ())
    else:
        result.status = status
    return result


def _lose(runs: _Runs, first: int, more: int = LOST_AFTER) -> BrokerLost:
    """``more`` runs that cannot reach the broker, the last of which stops the run."""
    for n in range(first, first + more - 1):
        runs.done(_result(n, "cannot reach"))
    with pytest.raises(BrokerLost) as lost:
        runs.done(_result(first + more - 1, "cannot reach"))
    return lost.value


def test_a_run_that_passed_across_the_death_does_not_clear_the_cut_runs_before_it():
    asyncio.run(_in_a_task(_passed_across_the_death))


def test_a_run_that_began_after_a_cut_one_shows_the_broker_was_back():
    asyncio.run(_in_a_task(_began_after_a_cut_one))


def test_a_run_cut_short_after_the_run_stopped_is_an_error_too():
    asyncio.run(_in_a_task(_cut_short_after_the_stop))


async def _in_a_task(check) -> None:
    check()  # runs end in the run's tasks (done() asks whether its task is being cancelled)


def _passed_across_the_death():
    runs = _runs()
    cut = _result(0, "cannot reach")
    runs.done(cut)
    time.sleep(0.01)
    runs.done(_result(1, "passed", duration_s=60))  # began before the cut run ended
    assert f"{LOST_AFTER} runs could not connect" in str(_lose(runs, 2, LOST_AFTER - 1))
    assert cut.status == "error"


def _began_after_a_cut_one():
    runs = _runs()
    cut = _result(0, "cannot reach")
    runs.done(cut)
    time.sleep(0.05)
    runs.done(_result(1, "passed", duration_s=0.01))
    _lose(runs, 2)
    assert cut.status == "failed"  # a failure of a broker that was there before and after


def _cut_short_after_the_stop():
    runs = _runs()
    _lose(runs, 0)
    late = _result(99, "cannot reach")
    runs.done(late)  # still in flight when the others stopped the run
    assert late.status == "error"
    assert runs.ended["g99"] is late
