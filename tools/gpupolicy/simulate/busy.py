"""Busy devices: time-sliced pods whose memory a neighbour already holds, with and without the startup check.

A time-slicing replica isolates no memory (NVIDIA's device plugin hands out replicas of one card and nothing
else), and the repository's own pod examples ask for `nvidia.com/gpu: 1`, one replica. So in this mode a pod
on a time-sliced pool takes one replica and needs its own share of the card's memory (`Shape.memory`).
Two pods whose shares add up to more than the card then meet on a busy device:
- without the startup check the newcomer's containers start, fail at start, and its Job recreates it after a
  backoff (engine.CRASH_BACKOFF_*), giving up after the Job's backoff limit: each such start is counted;
- with the check (an init container that waits while the pool's memory share is taken), the pod does not
  start on a busy card: the replay places it only where its share is free, else it waits in the queue.
The check is on for every pool except those whose pool.yaml says `spec.startupCheck: {skip: true}`; the
block is read only when present.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from ..infra import repopath, yamlload
from ..model import Cluster
from .policy import SimPolicy


def skips_startup_check(repo: Path, pool_path: str) -> bool:
    """True when the pool's pool.yaml says `spec.startupCheck.skip: true`; a file that cannot be read or
    parsed here was already reported by `validate`, and keeps the check (the default)."""
    try:
        raw = repopath.read_file(repo, pool_path)
    except (repopath.Refused, OSError):
        return False
    for document in yamlload.parse_source(raw, pool_path).documents:
        spec = yamlload.mapping(yamlload.mapping(document.data).get("spec"))
        check = yamlload.mapping(spec.get("startupCheck"))
        if check.get("skip") is True:
            return True
    return False


def with_busy_devices(policy: SimPolicy, checked: dict[str, bool]) -> SimPolicy:
    """`policy` with time-sliced pods as one replica each and the startup check per pool (`checked`: pool ->
    whether the check runs there; a pool not named keeps it)."""
    pools = {
        name: replace(pool, startup_check=checked.get(name, True)) for name, pool in policy.pools.items()
    }
    return replace(policy, pools=pools, replica_per_pod=True)


def startup_checks(repo: Path, cluster: Cluster, enabled: bool = True) -> dict[str, bool]:
    """pool -> whether the startup check runs there: as pool.yaml says, or nowhere when not `enabled`."""
    return {pool.name: enabled and not skips_startup_check(repo, pool.path) for pool in cluster.pools}
