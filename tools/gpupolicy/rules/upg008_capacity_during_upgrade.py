'''While a stage's nodes drain, a pool has fewer GPUs online than its production queues' nominal quota.

## Why it matters
The GPU Operator upgrades a driver node by node: it cordons the node, waits for the selected jobs, deletes the
GPU pods (and drains as a fallback), reloads the driver and validates it. How many nodes of a pool are out at
once follows the upgrade policy: the NVIDIADriver's `spec.upgradePolicy` (GPU Operator 26.7+), else the
ClusterPolicy's `driver.upgradePolicy` from the chart values — `maxParallelUpgrades` (0 = unlimited) capped by
`maxUnavailable` (a count, or a percentage of the nodes rounded up). At that worst moment the nodes left
online must still expose the nominal quota of the pool's production-tier ClusterQueues; otherwise production
serving is short exactly while the new driver is least proven. The message names the worst moment. A MIG pool
whose layout is missing from the mig-parted config exposes nothing that can be counted; MIG004 reports it, and
this rule does not.

## Bad example
```yaml
# pools/prod-h100: 4 nodes x 8 GPUs; the serving queue (tier production) holds 24 nvidia.com/gpu nominal
upgradePolicy:
  autoUpgrade: true
  maxParallelUpgrades: 2      # 2 of 4 nodes out: 16 GPUs online < 24
  maxUnavailable: "50%"
```

## Fix
Lower `maxParallelUpgrades` / `maxUnavailable` on the pool's NVIDIADriver (one node at a time), add a node to
the pool, or lower the production queue's nominal quota there (and borrow through the cohort).
'''

from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import Unit, drain_moments, drivers_of_pool, plans_of, unit_location

ID = "UPG008"
SEVERITY = Severity.ERROR
SUMMARY = "Production quota not covered by the GPUs left online while a stage drains"


def check(fleet: Fleet) -> Iterator[Finding]:
    for plan in plans_of(fleet).plans:
        if plan.component != "driver" or plan.finished:
            continue
        for stage in plan.stages:
            for moment in drain_moments(fleet, plan, stage):
                yield from _check_moment(fleet, plan, stage, moment)


def _check_moment(fleet: Fleet, plan, stage, moment) -> Iterator[Finding]:
    cluster = fleet.clusters[moment.cluster]
    drivers = drivers_of_pool(cluster, moment.pool)
    if drivers and drivers[0].upgrade_policy:
        location = fleet.locate(drivers[0].obj, "spec", "upgradePolicy")
    else:
        location = unit_location(fleet, plan, Unit(moment.cluster, moment.pool.name, moment.pool))
    if moment.stalls:
        yield Finding(
            rule=ID,
            severity=Severity.WARNING,
            cluster=moment.cluster,
            path=location.path,
            line=location.line,
            message=f"{plan.name}: stage {stage.name}, pool {moment.pool.name}: maxUnavailable "
            f"resolves to 0 nodes ({moment.policy_source}); the upgrade never starts",
            hint="allow at least one node: maxUnavailable: 1",
        )
        return
    short = moment.shortfalls
    if not short:
        return
    gaps = ", ".join(
        f"{name} {online} online < {need:g} nominal" for name, (online, need) in sorted(short.items())
    )
    yield Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=moment.cluster,
        path=location.path,
        line=location.line,
        message=f"{plan.name}: stage {stage.name}, pool {moment.pool.name}: at the worst moment "
        f"{moment.describe()} ({moment.policy_source}); production short: {gaps}",
        hint=_hint(moment),
    )


def _hint(moment) -> str:
    """What would help: never "one node at a time" when the operator already takes one node at a time (the
    hint must not propose the value the repository already has)."""
    if moment.nodes_down > 1:
        return (
            "upgrade fewer nodes at once (maxParallelUpgrades: 1), add a node, or lower the production "
            "queue's nominal quota on this pool"
        )
    never_enough = sorted(
        name for name, need in moment.production_need.items() if moment.pool.capacity.get(name, 0) < need
    )
    if never_enough:
        return (
            f"even with every node online the pool exposes too little {', '.join(never_enough)}: fix "
            "the pool's "
            "capacity or the production quota first (the CAP findings on this pool)"
        )
    return (
        "the operator already takes one node at a time: add a node, or lower the production queue's "
        "nominal quota "
        "on this pool"
    )
