"""batching.Batcher: callers' requests run in batches by one of them, each
caller with its own outcome."""

from __future__ import annotations

import threading

import pytest
from helpers import refusal_leaves_no_cycle, wait_until
from p4vtep.state.batching import Batcher, Request


class Recorder:
    """A batch function: records each batch's work, answers twice the
    number, refuses negative ones alone; blocks while ``gate`` is held."""

    def __init__(self) -> None:
        self.batches: list[list[int]] = []
        self.threads: list[str] = []
        self.gate = threading.Lock()

    def __call__(self, batch: list[Request[int, int]]) -> None:
        with self.gate:
            self.batches.append([r.work for r in batch])
            self.threads.append(threading.current_thread().name)
            for request in batch:
                if request.work < 0:
                    request.fail(ValueError(f"{request.work} refused"))
                else:
                    request.done(2 * request.work)


def queue_behind_a_running_batch(
    batcher: Batcher[int, int], recorder: Recorder, works: list[int]
) -> tuple[dict[int, object], list[threading.Thread]]:
    """A first request (0) runs while ``recorder.gate`` is held; ``works``
    are handed in one after another behind it (each queued before the next
    starts). Returns each work's outcome (value or error) once all ran."""
    outcomes: dict[int, object] = {}

    def call(work: int) -> None:
        try:
            outcomes[work] = batcher.submit(work)
        except Exception as exc:  # noqa: BLE001 -- the outcome under test
            outcomes[work] = exc

    threads = []
    with recorder.gate:
        first = threading.Thread(target=call, args=(0,), name="first")
        first.start()
        threads.append(first)
        assert wait_until(lambda: batcher.leading and batcher.pending == 0, 5)
        for i, work in enumerate(works, start=1):
            thread = threading.Thread(target=call, args=(work,), name=f"caller{work}")
            thread.start()
            threads.append(thread)
            assert wait_until(lambda i=i: batcher.pending == i, 5)  # type: ignore[misc]
    for thread in threads:
        thread.join(10)
        assert not thread.is_alive()
    return outcomes, threads


def test_a_lone_request_runs_at_once_in_its_callers_thread() -> None:
    recorder = Recorder()
    batcher: Batcher[int, int] = Batcher(recorder)
    assert batcher.submit(21) == 42
    assert recorder.batches == [[21]]
    assert recorder.threads == [threading.current_thread().name]
    assert not batcher.leading
    assert batcher.pending == 0


def test_requests_queued_while_a_batch_runs_run_together_in_order() -> None:
    recorder = Recorder()
    batcher: Batcher[int, int] = Batcher(recorder)
    outcomes, _ = queue_behind_a_running_batch(batcher, recorder, [5, 3, 4, 1])
    assert recorder.batches == [[0], [5, 3, 4, 1]]
    assert recorder.threads == ["first", "caller5"]  # the first one queued leads
    assert outcomes == {0: 0, 5: 10, 3: 6, 4: 8, 1: 2}
    assert (batcher.batches, batcher.requests) == (2, 5)
    assert not batcher.leading


def test_a_refused_request_fails_alone() -> None:
    recorder = Recorder()
    batcher: Batcher[int, int] = Batcher(recorder)
    outcomes, _ = queue_behind_a_running_batch(batcher, recorder, [1, -2, 3])
    assert recorder.batches == [[0], [1, -2, 3]]
    assert outcomes[1] == 2
    assert outcomes[3] == 6
    assert isinstance(outcomes[-2], ValueError)
    assert str(outcomes[-2]) == "-2 refused"


def test_a_batch_takes_at_most_max_batch_and_the_rest_follow() -> None:
    recorder = Recorder()
    batcher: Batcher[int, int] = Batcher(recorder, max_batch=2)
    outcomes, _ = queue_behind_a_running_batch(batcher, recorder, [1, 2, 3, 4, 5])
    assert recorder.batches == [[0], [1, 2], [3, 4], [5]]
    assert outcomes == {0: 0, 1: 2, 2: 4, 3: 6, 4: 8, 5: 10}


def test_a_batch_function_that_raises_fails_each_request_it_left_without_an_outcome() -> None:
    def run(batch: list[Request[int, int]]) -> None:
        batch[0].done(1)
        raise OSError("disk gone")

    batcher: Batcher[int, int] = Batcher(run)
    assert batcher.submit(7) == 1  # it had its outcome before the error
    silent: Batcher[int, int] = Batcher(lambda batch: None)
    with pytest.raises(RuntimeError, match="no outcome"):
        silent.submit(1)
    failing: Batcher[int, int] = Batcher(lambda batch: (_ for _ in ()).throw(OSError("gone")))
    with pytest.raises(OSError, match="gone"):
        failing.submit(1)
    assert not failing.leading  # the lead is free again


@pytest.mark.parametrize("refusal", ["from the batch", "raised by the batch function"])
def test_a_refused_caller_leaves_no_reference_cycle(refusal: str) -> None:
    """Once a refused caller has handled its error, what its frame held is
    freed by reference counting alone, not left for the collector: a
    replica refusing API writes (not the leader) kept each refused call's
    gRPC stream until a collection, and past the server's limit of streams
    refused every call on that connection."""

    def run(batch: list[Request[int, int]]) -> None:
        if refusal == "from the batch":
            batch[0].fail(ValueError("not the leader"))
        else:
            raise ValueError("not the leader")

    batcher: Batcher[int, int] = Batcher(run)
    assert refusal_leaves_no_cycle(lambda: batcher.submit(1), ValueError)


def test_max_batch_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        Batcher(lambda batch: None, max_batch=0)
