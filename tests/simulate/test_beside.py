"""simulate/beside.py: a call run in a forked child answers as it would here; a child that fails says so."""

from __future__ import annotations

import gc
import os
import pickle
import threading

import pytest

from gpupolicy.errors import ToolError
from gpupolicy.simulate import beside


@pytest.fixture
def forks():
    """Asked when the test runs, not when it is collected: threads started by earlier tests stop forking."""
    if not beside._can_fork():
        pytest.skip("no fork, one core or other threads running: the call runs in place")


def _pid_and_sum(values: list[int]) -> tuple[int, int]:
    return os.getpid(), sum(values)


def _fails() -> None:
    raise ValueError("a cluster the replay refuses")


def _dies() -> None:
    os._exit(7)


def _unpicklable():
    return lambda: None


def test_the_answer_comes_from_a_child_and_is_the_same(forks):
    answer = beside.started(_pid_and_sum, list(range(100_000)))
    pid, total = answer()
    assert pid != os.getpid() and total == sum(range(100_000))


def _pairs(items: list[dict]) -> list[tuple[dict, dict]]:
    return [(item, {"copy of": item["n"]}) for item in items]


def test_shared_objects_come_back_as_the_very_objects_here(forks):
    """A replay's answer refers to the jobs both processes hold since the fork: those are not sent back."""
    items = [{"n": n} for n in range(1000)]
    pairs = beside.started(_pairs, items, shared=items)()
    assert all(ours is item for (ours, _), item in zip(pairs, items, strict=True))
    assert all(copy == {"copy of": n} for n, (_, copy) in enumerate(pairs))
    unshared = beside.started(_pairs, items)()
    assert unshared[0][0] == items[0] and unshared[0][0] is not items[0]


def test_an_error_in_the_child_is_raised_where_the_answer_is_read(forks):
    answer = beside.started(_fails)
    with pytest.raises(ValueError, match="refuses"):
        answer()


def test_a_child_that_dies_is_an_error_not_a_missing_replay(forks):
    answer = beside.started(_dies)
    with pytest.raises(ToolError, match="exit code 7"):
        answer()


def test_an_answer_that_cannot_come_back_is_an_error(forks):
    with pytest.raises(ToolError, match="could not send its answer"):
        beside.started(_unpicklable)()


def test_with_other_threads_running_the_call_runs_in_place():
    """A fork would copy the other threads' locks in whatever state they hold: no fork then."""
    stop = threading.Event()
    worker = threading.Thread(target=stop.wait)
    worker.start()
    try:
        pid, total = beside.started(_pid_and_sum, [1, 2, 3])()
    finally:
        stop.set()
        worker.join()
    assert pid == os.getpid() and total == 6


@pytest.mark.parametrize("enabled", [True, False])
def test_reading_an_answer_leaves_the_collector_as_it_found_it(enabled):
    """The collector is paused while an answer is unpickled (it would walk every object held for nothing),
    and set back as it was, also when the answer does not unpickle."""
    items = [{"n": n} for n in range(10)]
    data = beside._dumps((True, _pairs(items)), items)
    was = gc.isenabled()
    (gc.enable if enabled else gc.disable)()
    try:
        ok, pairs = beside._load(data, items)
        assert ok and pairs[3][0] is items[3] and gc.isenabled() is enabled
        with pytest.raises(pickle.UnpicklingError):
            beside._load(data[:-5], items)
        assert gc.isenabled() is enabled
    finally:
        (gc.enable if was else gc.disable)()
