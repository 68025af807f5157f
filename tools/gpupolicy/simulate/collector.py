"""Python's cyclic garbage collector, paused where the simulator builds many objects that form no cycles.

A collection walks every object the process tracks to find unreachable cycles. A replay (engine.py), and
reading a replay's answer from a forked child (beside.py), each create hundreds of thousands of containers
and no reference cycles (a replay of the mixed workload leaves 29 objects for the collector), so the
collections they trigger find nothing. Measured, they cost about a sixth of that replay, and they turn the
0.13 s it takes to unpickle the ITP replay's answer (69,351 runs) into 0.85-1.2 s.
Reference counting still frees everything; the collector's state is restored afterwards.

`gpupolicy simulate` runs whole with the collector paused: what it holds besides the replays (the trace's
jobs, a copy of each with its checkpoint interval, the summaries, the report) is as large and as free of
cycles, and the collections it triggered over that heap cost the ITP command about a second of its twelve.
The command reads one trace, bounded as every input is (decision 0065), and ends; the plots' figures, which
do hold cycles, are a handful.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
