"""Requests from many threads run in batches by one of the callers (group
commit).

A caller hands in a request and blocks until it has its outcome: a value,
or the error of its own. One caller at a time leads: it takes the requests
queued, in the order they came (its own first, at most ``max_batch``), and
runs them as one batch; then it passes the lead to the first caller still
queued, wakes those it ran and returns. A lone request runs at once in its
caller's thread, so batching adds no wait when there is no load; under load,
requests queue while a batch runs and the next batch takes them together,
so what a batch costs once (a store transaction, a lock, a version, waking
the switches) is paid once for all of them. No thread of its own.

The batch function gives each request its outcome (``Request.done``,
``Request.fail``); a request it leaves without one gets the error it raised,
or a RuntimeError if it raised none. It runs in whichever caller leads, so
a caller must not hold what the batch function takes (the controller's
lock) while it waits here.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Generic, TypeVar

W = TypeVar("W")  # what a request asks for
R = TypeVar("R")  # what it gets back

# Most requests one batch takes: bounds how long a batch holds what it
# holds (the controller's lock: a switch's next pass waits for it) and so
# the wait of the requests behind it. 64 attaches, detaches or moves take
# about 8 ms of the controller's CPU (scaled from 2 ms measured for 16), which
# a switch's next pass may wait for. Under churn offered at 2,000 events/s
# by 64 callers (bench/churn.py), 64 against 16 acknowledged 6-24 % more
# events a second in each of five side-by-side pairs, with p99 297-722 ms
# against 788-944 (bench/NOTES.md, "Bigger batches"): below saturation a
# batch rarely holds more than a few, so a lone change waits for nothing.
MAX_BATCH = 64


class Request(Generic[W, R]):
    """One caller's request: ``work`` in, an outcome out."""

    __slots__ = ("_has_outcome", "_lead", "_wake", "error", "value", "work")

    def __init__(self, work: W) -> None:
        self.work = work
        self.value: R | None = None
        self.error: BaseException | None = None
        self._has_outcome = False
        self._lead = False
        self._wake = threading.Lock()
        self._wake.acquire()  # released once: an outcome, or the lead

    def done(self, value: R) -> None:
        self.value, self.error, self._has_outcome = value, None, True

    def fail(self, error: BaseException) -> None:
        self.value, self.error, self._has_outcome = None, error, True

    @property
    def has_outcome(self) -> bool:
        return self._has_outcome

    def outcome(self) -> R:
        """The value, or the error raised. Raising it here must leave no
        reference cycle (request -> error -> its traceback -> the frames
        that held the request): a cycle lives until the collector runs, and
        with it everything those frames held, such as the gRPC call of the
        API request that is refused (NotLeader, a validation error), whose
        HTTP/2 stream then stays counted against the server's limit: past
        it, the server refused every new call on that connection until a
        collection (tests/test_api.py, tests/test_batching.py). The request
        forgets its error and the raise its local, as
        ``concurrent.futures.Future`` does."""
        error, self.error = self.error, None
        if error is not None:
            try:
                raise error
            finally:
                del error
        return self.value  # type: ignore[return-value]  # (R may include None)


class Batcher(Generic[W, R]):
    """``submit(work)`` from any thread; ``run(batch)`` runs each batch."""

    def __init__(
        self, run: Callable[[list[Request[W, R]]], None], max_batch: int = MAX_BATCH
    ) -> None:
        if max_batch < 1:
            raise ValueError("max_batch must be at least 1")
        self._run = run
        self.max_batch = max_batch
        self._queue: list[Request[W, R]] = []
        self._guard = threading.Lock()  # the queue and the lead
        self._leading = False
        self.batches = 0  # batches run (and requests in them): what batching did
        self.requests = 0

    @property
    def pending(self) -> int:
        """Requests handed in and not taken by a batch yet."""
        with self._guard:
            return len(self._queue)

    @property
    def leading(self) -> bool:
        """Whether a caller leads (a batch runs or is about to)."""
        return self._leading

    def submit(self, work: W) -> R:
        request: Request[W, R] = Request(work)
        with self._guard:
            self._queue.append(request)
            lead = not self._leading
            self._leading = True
        if not lead:
            request._wake.acquire()  # an outcome, or the lead passed on to us
            if not request._lead:
                return request.outcome()
        self._lead_one_batch()
        return request.outcome()

    def _lead_one_batch(self) -> None:
        """Run the queue's first requests (the leader's own first), pass the
        lead on, wake the others that ran."""
        with self._guard:
            batch = self._queue[: self.max_batch]
            del self._queue[: self.max_batch]
        try:
            self._run(batch)
        except BaseException as exc:  # noqa: BLE001 -- raised to each caller without an outcome
            for request in batch:
                if not request.has_outcome:
                    request.fail(exc)
        finally:
            self.batches += 1
            self.requests += len(batch)
            for request in batch:
                if not request.has_outcome:
                    request.fail(RuntimeError("the batch gave this request no outcome"))
            with self._guard:
                if self._queue:
                    following = self._queue[0]
                    following._lead = True
                    following._wake.release()
                else:
                    self._leading = False
            for request in batch[1:]:  # (the first is the leader's own)
                request._wake.release()
