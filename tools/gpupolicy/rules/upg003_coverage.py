'''A rollout plan does not take every pool (or cluster) running the component exactly once.

## Why it matters
A pool left out of every stage keeps the old driver forever and the plan still looks finished; a pool in two
stages is promoted twice, and its second stage's soak means nothing. A selector that matches nothing is
usually a typo. One NVIDIADriver object that drives pools of two different stages cannot be upgraded stage by
stage at all: editing its `spec.version` moves every pool it selects at once.

## Bad example
```yaml
stages:
  - name: canary
    phase: limited
    select: [{cluster: prod-us, pools: [us-h100-canary]}]
  - name: fleet
    phase: full
    select: [{cluster: prod-us}]      # takes us-h100-canary a second time; prod-eu is in no stage
```

## Fix
Name the pools of each stage so every pool with an NVIDIADriver appears once (for a gpu-operator plan, every
cluster once), and give each pool its own NVIDIADriver (`nodeSelector: {gpupolicy.io/pool: <pool>}`).
'''

from collections import defaultdict
from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import (
    Plan,
    all_units,
    drivers_of_pool,
    plans_of,
    repository_clusters,
    selector_fully_loaded,
    selector_units,
)

ID = "UPG003"
SEVERITY = Severity.ERROR
SUMMARY = "Rollout plan does not cover every pool running the component exactly once"


def check(fleet: Fleet) -> Iterator[Finding]:
    for plan in plans_of(fleet).plans:
        if not plan.finished:
            yield from _check_plan(fleet, plan)


def _check_plan(fleet: Fleet, plan: Plan) -> Iterator[Finding]:
    stages_of: dict = defaultdict(list)
    for stage in plan.stages:
        for selector in stage.selectors:
            location = plan.locate_stage(stage, "select", selector.index)
            yield from _unknown_names(fleet, plan, selector, location)
            units = selector_units(fleet, plan, selector)
            if not units:
                yield from _whole_fleet(
                    fleet,
                    selector,
                    _finding(
                        location,
                        f"{plan.name}: stage {stage.name} selector ({selector.describe()}) takes no "
                        f"{'pool with an NVIDIADriver' if plan.component == 'driver' else 'cluster'}",
                        "fix the names, or remove the selector",
                    ),
                )
            for unit in units:
                if stage not in stages_of[unit]:
                    stages_of[unit].append(stage)
    for unit in all_units(fleet, plan):
        stages = stages_of.get(unit, [])
        if not stages:
            yield _finding(
                plan.locate("spec", "stages"),
                f"{plan.name}: {unit.label} runs the {plan.component} but is in no stage",
                "add it to the stage it belongs to",
            )
        elif len(stages) > 1:
            names = ", ".join(s.name for s in stages)
            yield _finding(
                plan.locate_stage(stages[1], "select"),
                f"{plan.name}: {unit.label} is in {len(stages)} stages ({names})",
                "keep it in one stage only",
            )
    if plan.component == "driver":
        yield from _shared_drivers(fleet, plan, stages_of)


def _unknown_names(fleet: Fleet, plan: Plan, selector, location) -> Iterator[Finding]:
    if selector.cluster and selector.cluster not in repository_clusters(fleet):
        yield _finding(
            location,
            f"{plan.name}: no cluster named {selector.cluster}",
            f"clusters: {', '.join(sorted(repository_clusters(fleet)))}",
        )
    for name in selector.pools or ():
        if name not in fleet.pools and name not in fleet.invalid_pools:
            yield from _whole_fleet(
                fleet,
                selector,
                _finding(
                    location, f"{plan.name}: no pool named {name}", "pool names are the pools/<name> folders"
                ),
            )


def _whole_fleet(fleet: Fleet, selector, finding: Finding) -> Iterator[Finding]:
    """A finding that is true only if it holds in every cluster the selector could take: reported when they
    are
    all loaded; otherwise (a shard, `--cluster`) proposed, and `report merge` keeps it if every shard proposes
    it."""
    if selector_fully_loaded(fleet, selector):
        yield finding
    else:
        fleet.proposed.append(finding)


def _shared_drivers(fleet: Fleet, plan: Plan, stages_of: dict) -> Iterator[Finding]:
    by_driver: dict = defaultdict(set)
    for unit, stages in stages_of.items():
        for driver in drivers_of_pool(fleet.clusters[unit.cluster], unit.pool):
            by_driver[(unit.cluster, driver.name, driver.obj.origin)].update(s.name for s in stages)
    for (cluster, name, origin), stage_names in sorted(by_driver.items()):
        if len(stage_names) > 1:
            location = fleet.locate_file(origin, "spec", "nodeSelector")
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster,
                path=location.path,
                line=location.line,
                message=f"{plan.name}: NVIDIADriver {name} drives pools of stages "
                f"{', '.join(sorted(stage_names))}; editing its version moves them all at "
                "once",
                hint="give every pool its own NVIDIADriver (nodeSelector gpupolicy.io/pool)",
            )


def _finding(location, message: str, hint: str = "") -> Finding:
    return Finding(
        rule=ID, severity=SEVERITY, message=message, path=location.path, line=location.line, hint=hint
    )
