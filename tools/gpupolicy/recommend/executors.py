"""Where candidate replays run: in this process, in a local process pool (`--jobs`), or on a Ray cluster
(`--ray`).

Every executor gets the same list of tasks (policy, fraction of the workload) and returns the summaries in the
same order; a replay is deterministic, so the numbers never depend on the executor
(tests/test_recommend.py). The workload is shipped to each worker once (pool initializer,
`ray.put`), not with every task.

Besides `map`, each executor can `chain` (a follow-up task decided from each result as it comes back, in task
order, so the search's whole replays start while other partial replays still run and no worker waits for a
batch's slowest one) and `start` (tasks that run beside what is asked next, their results read later).
`runner(run)` gives a plain map function the same interface, one batch after another.

A replay the engine stops (a candidate whose queues preempt each other without end: engine.EndlessReplay)
comes back as `Stopped`, not as an error: the search ranks that candidate last and goes on (search.py), where
one such candidate used to end the whole search with its message.

`Weeks` joins one executor per week of work into one (recommend --search-seeds): a whole replay comes back as
`Weekly`, every week's summary, the search's own week first.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass

from ..errors import ToolError
from ..simulate import replay
from ..simulate.engine import EndlessReplay
from ..simulate.jobs import Job
from ..simulate.metrics import Summary, summarize
from ..simulate.policy import SimPolicy


@dataclass(frozen=True)
class Stopped:
    """A replay the engine stopped, with its message (the policy, the time, the last preemption)."""

    reason: str


Task = tuple[SimPolicy, float]  # the policy, and the share of the workload (by submission order) to replay
Replayed = Summary | Stopped
# given a task's index and its result, the follow-up task to replay, or None (Batches.chain)
Then = Callable[[int, "Replayed | Weekly"], "Task | None"]


def evaluate(policy: SimPolicy, jobs: Sequence[Job], fraction: float) -> Replayed:
    """Replay the first `fraction` of the jobs (they are sorted by submission) under the policy."""
    count = max(1, math.ceil(len(jobs) * fraction))
    try:
        return summarize(replay(policy, jobs[:count]))
    except EndlessReplay as exc:
        return Stopped(str(exc))


def summary_of(result: Replayed) -> Summary:
    """The summary of a replay that must finish (the repository's policy, the baseline): a stopped one is the
    command's error, with the engine's message."""
    if isinstance(result, Stopped):
        raise ToolError(result.reason)
    return result


class Batches:
    """`chain` and `start` over a `map` function alone: the follow-ups run as a second batch once every first
    result is in, started tasks when their results are read. The same results as a pipelining executor (each
    follow-up is decided from its own task's result only), without the overlap."""

    name = "batches"
    width = 1  # replays that run side by side

    def __init__(self, run: Callable[[Sequence[Task]], list[Replayed]]) -> None:
        self.run = run

    def map(self, tasks: Sequence[Task]) -> list[Replayed]:
        return self.run(tasks)

    def chain(self, tasks: Sequence[Task], then: Then) -> tuple[list[Replayed], list[Replayed | None]]:
        firsts = self.map(tasks)
        follow = [then(index, summary) for index, summary in enumerate(firsts)]
        done = iter(self.map([task for task in follow if task is not None]))
        return firsts, [None if task is None else next(done) for task in follow]

    def start(self, tasks: Sequence[Task]) -> Callable[[], list[Replayed]]:
        return lambda: self.map(tasks)

    def close(self) -> None:
        pass


def runner(run):
    """An executor as it is, or a plain map function (tests, benchmarks) wrapped in Batches."""
    return run if hasattr(run, "chain") else Batches(run)


class Serial(Batches):
    name = "serial"

    def __init__(self, jobs: Sequence[Job]) -> None:
        super().__init__(self._replay)
        self.jobs = jobs

    def _replay(self, tasks: Sequence[Task]) -> list[Replayed]:
        return [evaluate(policy, self.jobs, fraction) for policy, fraction in tasks]


_WORKER_JOBS: Sequence[Job] = ()


def _init_worker(jobs: Sequence[Job]) -> None:
    global _WORKER_JOBS
    _WORKER_JOBS = jobs


def _evaluate_in_worker(task: Task) -> Replayed:
    return evaluate(task[0], _WORKER_JOBS, task[1])


class Pipelined(ABC):
    """An executor that submits tasks and reads their results later (`_submit`, `_collect`): `chain` submits a
    follow-up as soon as its task's result is read, and `start` returns at once."""

    @abstractmethod
    def _submit(self, task: Task): ...

    @abstractmethod
    def _collect(self, handle) -> Replayed: ...

    def map(self, tasks: Sequence[Task]) -> list[Replayed]:
        return self.start(tasks)()

    def chain(self, tasks: Sequence[Task], then: Then) -> tuple[list[Replayed], list[Replayed | None]]:
        firsts = [self._submit(task) for task in tasks]
        results, follow = [], []
        for index, handle in enumerate(firsts):  # in task order, as Batches.chain asks `then`
            results.append(self._collect(handle))
            task = then(index, results[-1])
            follow.append(None if task is None else self._submit(task))
        return results, [None if handle is None else self._collect(handle) for handle in follow]

    def start(self, tasks: Sequence[Task]) -> Callable[[], list[Replayed]]:
        handles = [self._submit(task) for task in tasks]
        return lambda: [self._collect(handle) for handle in handles]


class ProcessPool(Pipelined):
    def __init__(self, jobs: Sequence[Job], workers: int) -> None:
        self.name = f"process pool ({workers} workers)"
        self.width = workers
        self.pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(list(jobs),))

    def _submit(self, task: Task):
        return self.pool.submit(_evaluate_in_worker, task)

    def _collect(self, handle) -> Replayed:
        return handle.result()

    def close(self) -> None:
        self.pool.shutdown()


def _evaluate_on_ray(policy: SimPolicy, jobs: Sequence[Job], fraction: float) -> Replayed:
    return evaluate(policy, jobs, fraction)


class RayCluster(Pipelined):
    """Ray at `address` (`auto`, `ray://head:10001`, or `local` for a new local instance). A Ray session the
    caller already started is used as it is, and left running."""

    def __init__(self, jobs: Sequence[Job], address: str) -> None:
        try:
            import ray
        except ImportError:
            raise ToolError("--ray needs Ray: pip install 'gpupolicy[ray]'") from None
        self.ray = ray
        self.started = not ray.is_initialized()
        if self.started:
            try:
                ray.init(address=address, include_dashboard=False, log_to_driver=False)
            except Exception as exc:  # Ray raises ConnectionError, RuntimeError, ValueError... by cause
                raise ToolError(f"--ray {address}: cannot connect to Ray: {exc}") from None
        self.name = f"Ray ({address})"
        self.width = max(1, int(ray.cluster_resources().get("CPU", 1)))
        self.remote = ray.remote(_evaluate_on_ray)
        self.jobs = ray.put(list(jobs))

    def _submit(self, task: Task):
        return self.remote.remote(task[0], self.jobs, task[1])

    def _collect(self, handle) -> Replayed:
        return self.ray.get(handle)

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


class Prepared:
    """An executor whose every task's policy is first passed through `prepare` (recommend --busy-devices)."""

    def __init__(self, inner, prepare: Callable[[SimPolicy], SimPolicy]) -> None:
        self.inner, self.prepare = inner, prepare
        self.name, self.width = inner.name, inner.width

    def _tasks(self, tasks: Sequence[Task]) -> list[Task]:
        return [(self.prepare(policy), share) for policy, share in tasks]

    def map(self, tasks: Sequence[Task]) -> list[Replayed]:
        return self.inner.map(self._tasks(tasks))

    def chain(self, tasks: Sequence[Task], then: Then) -> tuple[list[Replayed], list[Replayed | None]]:
        def prepared_then(index: int, summary: Replayed) -> Task | None:
            task = then(index, summary)
            return None if task is None else self._tasks([task])[0]

        return self.inner.chain(self._tasks(tasks), prepared_then)

    def start(self, tasks: Sequence[Task]) -> Callable[[], list[Replayed]]:
        return self.inner.start(self._tasks(tasks))

    def close(self) -> None:
        self.inner.close()


@dataclass(frozen=True)
class Weekly:
    """A whole replay on every week of a search over several (`Weeks`): the search's own week first."""

    summaries: tuple[Summary, ...]


class Weeks:
    """Executors of several weeks of work as one (recommend --search-seeds): the search's own week's and the
    other seeds' (`others`, in the order of `seeds`). A whole replay (share 1.0) runs on every week and comes
    back as Weekly, or as the first Stopped of its weeks; a partial one, for the pruner, runs on the search's
    own week alone. The other weeks' replays of a task are submitted with it, so they run beside the rest."""

    def __init__(self, own, others: Sequence, seeds: Sequence[int]) -> None:
        self.own, self.others, self.seeds = own, list(others), list(seeds)
        self.name, self.width = own.name, own.width

    def _elsewhere(self, task: Task) -> list[Callable[[], list[Replayed]]] | None:
        return [inner.start([task]) for inner in self.others] if task[1] >= 1.0 else None

    def _joined(self, own: Replayed, elsewhere) -> Replayed | Weekly:
        if elsewhere is None:
            return own
        results = [own, *(pending()[0] for pending in elsewhere)]
        for seed, result in zip([None, *self.seeds], results, strict=True):
            if isinstance(result, Stopped):
                return result if seed is None else Stopped(f"on seed {seed}'s week: {result.reason}")
        return Weekly(tuple(results))

    def map(self, tasks: Sequence[Task]) -> list[Replayed | Weekly]:
        return self.start(tasks)()

    def start(self, tasks: Sequence[Task]) -> Callable[[], list[Replayed | Weekly]]:
        elsewhere = [self._elsewhere(task) for task in tasks]
        own = self.own.start(tasks)
        return lambda: [self._joined(r, e) for r, e in zip(own(), elsewhere, strict=True)]

    def chain(self, tasks: Sequence[Task], then: Then) -> tuple[list, list]:
        elsewhere = [self._elsewhere(task) for task in tasks]
        firsts: dict[int, Replayed | Weekly] = {}  # joined once: a Batches `start` replays when read
        follow_elsewhere: dict[int, list | None] = {}

        def joined_then(index: int, result: Replayed) -> Task | None:
            firsts[index] = self._joined(result, elsewhere[index])
            task = then(index, firsts[index])
            if task is not None:
                follow_elsewhere[index] = self._elsewhere(task)
            return task

        own_firsts, follows = self.own.chain(tasks, joined_then)
        return [firsts[index] for index in range(len(own_firsts))], [
            None if r is None else self._joined(r, follow_elsewhere.get(index))
            for index, r in enumerate(follows)
        ]

    def close(self) -> None:
        for inner in (self.own, *self.others):
            inner.close()


def executor(jobs: Sequence[Job], workers: int, ray_address: str | None):
    if ray_address:
        return RayCluster(jobs, ray_address)
    return ProcessPool(jobs, workers) if workers > 1 else Serial(jobs)
