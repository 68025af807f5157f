"""Where candidate replays run: in this process, in a local process pool (`--jobs`), or on a Ray cluster
(`--ray`).

Every executor gets the same list of tasks (policy, fraction of the workload) and returns the summaries in the
same order; a replay is deterministic, so the numbers never depend on the executor
(tests/test_recommend_executors.py). The workload is shipped to each worker once (pool initializer,
`ray.put`), not with every task.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor

from ..errors import ToolError
from ..simulate import replay
from ..simulate.jobs import Job
from ..simulate.metrics import Summary, summarize
from ..simulate.policy import SimPolicy

Task = tuple[SimPolicy, float]  # the policy, and the share of the workload (by submission order) to replay


def evaluate(policy: SimPolicy, jobs: Sequence[Job], fraction: float) -> Summary:
    """Replay the first `fraction` of the jobs (they are sorted by submission) under the policy."""
    count = max(1, math.ceil(len(jobs) * fraction))
    return summarize(replay(policy, jobs[:count]))


class Serial:
    name = "serial"

    def __init__(self, jobs: Sequence[Job]) -> None:
        self.jobs = jobs

    def map(self, tasks: Sequence[Task]) -> list[Summary]:
        return [evaluate(policy, self.jobs, fraction) for policy, fraction in tasks]

    def close(self) -> None:
        pass


_WORKER_JOBS: Sequence[Job] = ()


def _init_worker(jobs: Sequence[Job]) -> None:
    global _WORKER_JOBS
    _WORKER_JOBS = jobs


def _evaluate_in_worker(task: Task) -> Summary:
    return evaluate(task[0], _WORKER_JOBS, task[1])


class ProcessPool:
    def __init__(self, jobs: Sequence[Job], workers: int) -> None:
        self.name = f"process pool ({workers} workers)"
        self.pool = ProcessPoolExecutor(max_workers=workers, initializer=_init_worker, initargs=(list(jobs),))

    def map(self, tasks: Sequence[Task]) -> list[Summary]:
        return list(self.pool.map(_evaluate_in_worker, tasks))

    def close(self) -> None:
        self.pool.shutdown()


def _evaluate_on_ray(policy: SimPolicy, jobs: Sequence[Job], fraction: float) -> Summary:
    return evaluate(policy, jobs, fraction)


class RayCluster:
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
        self.remote = ray.remote(_evaluate_on_ray)
        self.jobs = ray.put(list(jobs))

    def map(self, tasks: Sequence[Task]) -> list[Summary]:
        return self.ray.get([self.remote.remote(policy, self.jobs, fraction) for policy, fraction in tasks])

    def close(self) -> None:
        if self.started:
            self.ray.shutdown()


def executor(jobs: Sequence[Job], workers: int, ray_address: str | None):
    if ray_address:
        return RayCluster(jobs, ray_address)
    return ProcessPool(jobs, workers) if workers > 1 else Serial(jobs)
