"""The synthetic trace shipped in the package: `python -m gpupolicy.simulate.synthetic > FILE` regenerates it.

A week of four teams named like the reference fleet's queues (nlp and vision train, serving runs inference,
research experiments on MIG slices and shared cards). Arrivals follow a working-day rhythm; sizes and
durations are drawn from a seeded generator, so the file is reproducible. It is invented data, not a
sample of any real cluster.
"""

from __future__ import annotations

import random
import sys

from .jobs import Job
from .traces import write_csv

DAY = 86400


def _arrival(rng: random.Random, day: int) -> int:
    hour = rng.choices(
        range(24), weights=[1, 1, 1, 1, 1, 2, 3, 5, 8, 9, 9, 8, 6, 8, 9, 9, 8, 6, 4, 3, 2, 2, 1, 1]
    )[0]
    return day * DAY + hour * 3600 + rng.randrange(3600)


def generate(seed: int = 7, days: int = 7) -> list[Job]:
    rng = random.Random(seed)
    jobs: list[Job] = []
    for day in range(days):
        weekend = day % 7 >= 5
        for team in ("nlp", "vision"):
            for _ in range(rng.randint(8, 12) if weekend else rng.randint(22, 28)):
                gpus = rng.choices([1, 2, 4, 8], weights=[4, 2, 3, 3])[0]
                pods = 2 if gpus == 8 and rng.random() < 0.3 else 1
                hours = rng.choice([1, 2, 3, 4, 6, 8, 12])
                jobs.append(
                    Job(
                        "",
                        _arrival(rng, day),
                        hours * 3600 + rng.randrange(1800),
                        gpus=gpus,
                        pods=pods,
                        team=team,
                        tier="training",
                        workload="training",
                        checkpoint=1800,
                    )
                )
        for _ in range(rng.randint(16, 24)):
            share = rng.choice([0.0, 0.25, 0.5])
            jobs.append(
                Job(
                    "",
                    _arrival(rng, day),
                    rng.randint(4, 24) * 3600,
                    gpus=1,
                    share=share,
                    pods=rng.choice([1, 2, 2, 4]),
                    team="serving",
                    tier="production",
                    workload="inference",
                )
            )
        for _ in range(rng.randint(70, 90) if not weekend else rng.randint(15, 25)):
            if rng.random() < 0.6:
                jobs.append(
                    Job(
                        "",
                        _arrival(rng, day),
                        rng.randint(1, 8) * 1800,
                        mig=rng.choice(["1g.10gb", "1g.10gb", "2g.20gb", "3g.40gb"]),
                        team="research",
                        tier="experiment",
                        workload="notebook",
                    )
                )
            else:
                jobs.append(
                    Job(
                        "",
                        _arrival(rng, day),
                        rng.randint(1, 8) * 1800,
                        gpus=1,
                        share=rng.choice([0.25, 0.5]),
                        team="research",
                        tier="experiment",
                        workload="notebook",
                    )
                )
    jobs.sort(key=lambda j: j.submit)
    for index, job in enumerate(jobs):
        job.id = f"job-{index:04d}"
    return jobs


if __name__ == "__main__":
    import pathlib

    target = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else pathlib.Path("/dev/stdout")
    write_csv(generate(), target)
