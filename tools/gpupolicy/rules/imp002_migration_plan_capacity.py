"""A step of an import's migration plan takes a pool below what its production queues are promised.

## Why it matters
`gpupolicy import` writes `imports/<cluster>/migration-plan.yaml`: the nodes to drain and return under GPU
Operator management, one at a time. While a node is out, its pool's remaining nodes must still expose the
nominal quota of the pool's production queues (as UPG008 requires of an upgrade's drain), and, to keep
CAP005's reserve, still do so if one more node fails. The plan was computed from the snapshot; this rule
checks it again against the repository as it is now (a quota raised, a tier answered, a node added), so a plan
that has gone stale fails validate. A queue without a `gpupolicy.io/tier` label counts as production, as in
the plan, until its question (IMP001) is answered. A step naming a pool or cluster the repository does not
have, or a plan that takes more than one node out at a time, is refused.

## Bad example
```yaml
# pools/l4: 3 nodes x 4 L4 x 4 replicas = 48; ClusterQueue inference (tier production) holds 40 on l4
kind: MigrationPlan
spec:
  cluster: acme-east
  maxNodesOut: 1
  steps:
    - node: l4-03
      pool: l4            # 32 online while l4-03 is out < 40 nominal
```

## Fix
Lower the production queue's nominal quota on the pool for the migration (borrow through the cohort), or add a
node to the pool first; then run the step.
"""

from collections.abc import Iterator
from pathlib import Path

import yaml

from ..domain.gpu_resources import is_nvidia_resource
from ..domain.quotas import capacity_known, pool_of, queue_entries
from ..findings import Finding, Severity
from ..model import Fleet

ID = "IMP002"
SEVERITY = Severity.ERROR
SUMMARY = "A migration-plan step takes a pool below its production quota"
PLANS = "imports/*/migration-plan.yaml"
PRODUCTION = "production"
MAX_BYTES = 4 * 1024 * 1024


def check(fleet: Fleet) -> Iterator[Finding]:
    root = Path(fleet.root)
    for path in sorted(root.glob(PLANS)):
        rel = path.relative_to(root).as_posix()
        if path.is_symlink() or path.stat().st_size > MAX_BYTES:
            yield Finding(ID, SEVERITY, "not read: a symbolic link or over 4 MiB", rel, 1)
            continue
        try:
            plan = yaml.safe_load(path.read_text(encoding="utf-8"))
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as exc:
            yield Finding(ID, SEVERITY, f"cannot read the plan: {str(exc).splitlines()[0]}", rel, 1)
            continue
        yield from _check_plan(fleet, rel, path.read_text(encoding="utf-8"), plan)


def _check_plan(fleet: Fleet, rel: str, text: str, plan: object) -> Iterator[Finding]:
    spec = plan.get("spec") if isinstance(plan, dict) else None
    if not isinstance(spec, dict) or not isinstance(spec.get("steps"), list):
        yield Finding(ID, SEVERITY, "not a MigrationPlan: spec.steps must be a list", rel, 1)
        return
    name = str(spec.get("cluster", ""))
    cluster = fleet.clusters.get(name)
    if cluster is None:
        if name not in fleet.repository_clusters:
            yield Finding(
                ID,
                SEVERITY,
                f"spec.cluster {name!r}: no such cluster in clusters/",
                rel,
                _line(text, "cluster:"),
            )
        return  # a cluster this run does not cover (validate --cluster): checked where it is
    if spec.get("maxNodesOut") != 1:
        yield Finding(
            ID,
            SEVERITY,
            f"maxNodesOut {spec.get('maxNodesOut')!r}: the plan takes one node out "
            "at a "
            "time (the checks below assume it)",
            rel,
            _line(text, "maxNodesOut:"),
            name,
        )
    pools = {p.name: p for p in cluster.pools}
    for number, step in enumerate(spec["steps"], 1):
        node = step.get("node", "?") if isinstance(step, dict) else "?"
        line = _line(text, f"- node: {node}")
        pool = pools.get(step.get("pool", "") if isinstance(step, dict) else "")
        if pool is None:
            yield Finding(
                ID,
                SEVERITY,
                f"step {number} ({node}): pool "
                f"{step.get('pool') if isinstance(step, dict) else '?'!r} is not a pool of {name}",
                rel,
                line,
                name,
            )
            continue
        if not capacity_known(cluster, pool):
            continue  # MIG004 reports the missing layout
        need = _production_need(cluster, pool)
        during, reserve = pool.capacity_without(1), pool.capacity_without(2)
        short = {r: (during.get(r, 0), n) for r, n in need.items() if during.get(r, 0) < n}
        thin = {r: (reserve.get(r, 0), n) for r, n in need.items() if reserve.get(r, 0) < n}
        if short:
            yield Finding(
                ID,
                SEVERITY,
                f"step {number} drains {node} of pool {pool.name}: production short "
                f"while it is out ({_gaps(short)})",
                rel,
                line,
                name,
                hint="lower the production queues' nominal quota on the pool or add a node first",
            )
        elif thin:
            yield Finding(
                ID,
                Severity.WARNING,
                f"step {number} drains {node} of pool {pool.name}: CAP005's "
                f"reserve is gone while it is out, one more node lost leaves {_gaps(thin)}",
                rel,
                line,
                name,
                hint="run the step when the pool can lose a node (a quiet hour, a spare node added)",
            )


def _production_need(cluster, pool) -> dict[str, float]:
    need: dict[str, float] = {}
    for queue in cluster.cluster_queues.values():
        if queue.tier not in (PRODUCTION, "", None):
            continue
        for entry in queue_entries(queue):
            if is_nvidia_resource(entry.quota.name) and pool_of(cluster, entry.flavor) is pool:
                need[entry.quota.name] = need.get(entry.quota.name, 0) + float(entry.quota.nominal)
    return {r: n for r, n in need.items() if n > 0}


def _gaps(gaps: dict[str, tuple[int, float]]) -> str:
    return ", ".join(f"{r} {online} online < {need:g} nominal" for r, (online, need) in sorted(gaps.items()))


def _line(text: str, needle: str) -> int:
    for number, line in enumerate(text.splitlines(), 1):
        if needle in line:
            return number
    return 1
