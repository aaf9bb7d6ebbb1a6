"""Micro-batching (`logicval_hf.serve.batching`): concurrent requests share batches, each request gets exactly its
own results back, and a full queue answers `Overloaded` with a retry time. A fake pool stands in for the workers:
it records the batches and answers each sample with a value computed from the sample itself."""

from __future__ import annotations

import asyncio
import random

import pytest

from logicval_hf.serve.batching import MicroBatcher, Overloaded, Stopping
from logicval_hf.serve.pool import WorkerLost
from logicval_hf.serve.protocol import SampleResult
from logicval_hf.serve.worker import Sample


class FakePool:
    def __init__(self, slots: int = 1, delay: float = 0.01):
        self.slots = slots
        self.delay = delay
        self.batches: list[int] = []
        self.gate: asyncio.Event | None = None

    async def run(self, samples):
        self.batches.append(len(samples))
        if self.gate is not None:
            await self.gate.wait()
        await asyncio.sleep(self.delay)
        return [SampleResult(score=float(s.image)) for s in samples]


def _request(tag: int, n: int) -> list[Sample]:
    return [Sample(image=tag * 1000 + k, item=None) for k in range(n)]


def test_concurrent_requests_share_batches_and_each_gets_its_own_results():
    async def main():
        pool = FakePool(slots=2)
        batcher = MicroBatcher(pool, max_batch=64, wait_s=0.005)
        batcher.start()
        rng = random.Random(3)
        sizes = [rng.randint(1, 20) for _ in range(40)]
        answers = await asyncio.gather(*(batcher.score(_request(t, n)) for t, n in enumerate(sizes)))
        await batcher.close()
        return pool, sizes, answers

    pool, sizes, answers = asyncio.run(main())
    for t, (n, got) in enumerate(zip(sizes, answers, strict=True)):
        assert [r.score for r in got] == [float(t * 1000 + k) for k in range(n)]
    assert sum(pool.batches) == sum(sizes) and max(pool.batches) <= 64
    assert len(pool.batches) < len(sizes) / 2  # merged, not one batch per request


def test_a_request_larger_than_a_batch_goes_whole():
    async def main():
        pool = FakePool()
        batcher = MicroBatcher(pool, max_batch=8, wait_s=0)
        batcher.start()
        got = await batcher.score(_request(1, 20))
        await batcher.close()
        return pool, got

    pool, got = asyncio.run(main())
    assert pool.batches == [20] and len(got) == 20


def test_a_full_queue_is_refused_with_a_retry_time():
    async def main():
        pool = FakePool(slots=1)
        pool.gate = asyncio.Event()
        batcher = MicroBatcher(pool, max_batch=16, max_queue=32, wait_s=0)
        batcher.start()
        running = asyncio.ensure_future(batcher.score(_request(0, 16)))  # holds the only slot
        await asyncio.sleep(0.01)
        waiting = [asyncio.ensure_future(batcher.score(_request(t, 16))) for t in (1, 2)]
        await asyncio.sleep(0.01)
        with pytest.raises(Overloaded) as refused:
            await batcher.score(_request(3, 1))
        pool.gate.set()
        done = await asyncio.gather(running, *waiting)
        await batcher.close()
        return refused.value, done

    refused, done = asyncio.run(main())
    assert refused.retry_after >= 1 and "32" in str(refused)
    assert [r[0].score for r in done] == [0.0, 1000.0, 2000.0]


def test_a_lost_worker_fails_only_its_own_requests():
    class FailingOnce(FakePool):
        async def run(self, samples):
            if any(s.image == 666 for s in samples):
                raise WorkerLost("a scoring worker died while it held this request; retry it")
            return await super().run(samples)

    async def main():
        batcher = MicroBatcher(FailingOnce(slots=1), max_batch=1, wait_s=0)
        batcher.start()
        out = await asyncio.gather(batcher.score([Sample(666, None)]), batcher.score(_request(1, 1)),
                                   return_exceptions=True)
        await batcher.close()
        return out

    bad, good = asyncio.run(main())
    assert isinstance(bad, WorkerLost) and good[0].score == 1000.0


def test_a_batch_that_fails_as_a_whole_is_scored_in_parts_down_to_the_failing_sample():
    """A sample no check foresaw makes the whole batch raise (as pickling a value nested too deep for a worker
    did): the batch is split in halves until that sample fails alone; it gets an error entry naming its index in
    its request, every other request of the batch its exact results."""
    class Poisoned(FakePool):
        async def run(self, samples):
            self.batches.append(len(samples))
            if any(s.image == 666 for s in samples):
                raise RecursionError("maximum recursion depth exceeded while pickling an object")
            return [SampleResult(score=float(s.image)) for s in samples]

    async def main():
        pool = Poisoned(slots=1)
        batcher = MicroBatcher(pool, max_batch=64, wait_s=0.01)
        batcher.start()
        hostile = [Sample(1, None, index=0), Sample(666, None, index=1), Sample(2, None, index=2)]
        out = await asyncio.gather(batcher.score(_request(1, 5)), batcher.score(hostile),
                                   batcher.score(_request(2, 7)))
        await batcher.close()
        return pool, out

    pool, (first, bad, last) = asyncio.run(main())
    assert [r.score for r in first] == [1000.0 + k for k in range(5)]
    assert [r.score for r in last] == [2000.0 + k for k in range(7)]
    assert [r.score for r in bad] == [1.0, 0.0, 2.0] and [r.error is None for r in bad] == [True, False, True]
    assert bad[1].error == "images[1]: could not be scored (RecursionError)" and "pickling" in bad[1].detail
    assert pool.batches[0] == 15 and len(pool.batches) <= 1 + 2 * 4  # halves: a handful of calls, not one each


def test_a_running_batch_is_answered_within_the_grace_and_refused_after_it():
    async def main(grace: float) -> object:
        pool = FakePool(delay=0.0)
        pool.gate = asyncio.Event()  # the batch runs until the gate opens
        batcher = MicroBatcher(pool, wait_s=0)
        batcher.start()
        running = asyncio.ensure_future(batcher.score(_request(1, 3)))
        for _ in range(1000):  # until the batch is dispatched
            if pool.batches:
                break
            await asyncio.sleep(0.001)
        batcher.stop(grace)
        asyncio.get_running_loop().call_later(0.05, pool.gate.set)  # the batch finishes 50 ms into the stop
        try:
            return [r.score for r in await asyncio.wait_for(running, 5)]
        except Stopping as e:
            return e
        finally:
            await batcher.close()

    assert asyncio.run(main(grace=5.0)) == [1000.0, 1001.0, 1002.0]
    assert isinstance(asyncio.run(main(grace=0.01)), Stopping)
