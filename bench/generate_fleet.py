"""Write a synthetic policy repository of N clusters x M pools x T teams, laid out like the reference fleet.

The shared policy (`policies/` except `policies/teams/`, and the runbooks its alerts link to) is copied from
the repository this script lives in, so the synthetic fleet renders the same operator configuration,
admission policies, dashboards and alerts as the real one. Everything that grows with the fleet is
generated: pools (pool.yaml + a Component with ResourceFlavor, NVIDIADriver and device-plugin config),
teams (namespace, quota, limits, LocalQueues, role bindings), clusters (cluster.yaml, an entry overlay with
originAnnotations, Flux sync objects, one ClusterQueue per team, the team quota patch).

Quotas always fit: every team of a cluster gets `capacity // teams` of every pool of the cluster, so the
sum of nominal quotas never exceeds what a pool exposes. The output depends only on the arguments (seeded).

    python bench/generate_fleet.py OUT --clusters 100 --pools 1000 --teams 200 --teams-per-cluster 50
"""

from __future__ import annotations

import argparse
import random
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

SOURCE_REPO = Path(__file__).resolve().parents[1]
SHARED_POLICY_DIRS = (
    "gpu-operator",
    "kueue",
    "scheduling",
    "access",
    "admission",
    "observability",
    "sync/flux",
)
GPU = "nvidia.com/gpu"
MIG_1G = "nvidia.com/mig-1g.10gb"
COVERED = ("cpu", "memory", GPU, MIG_1G)
DRIVER_VERSION = "580.173.02"


@dataclass(frozen=True)
class PoolKind:
    """One of the pool shapes of the reference fleet."""

    suffix: str
    model: str
    product: str
    per_node: int
    access: str
    replicas: int = 0  # time-slicing
    mig_layout: str = ""
    mig_per_gpu: int = 0  # instances per GPU of the layout

    def exposed(self, nodes: int) -> tuple[str, int]:
        gpus = nodes * self.per_node
        if self.mig_layout:
            return MIG_1G, gpus * self.mig_per_gpu
        return GPU, gpus * (self.replicas or 1)


POOL_KINDS = (
    PoolKind("h100", "H100-80GB", "NVIDIA-H100-80GB-HBM3", 8, "exclusive"),
    PoolKind(
        "a100-mig", "A100-80GB", "NVIDIA-A100-SXM4-80GB", 8, "mig", mig_layout="all-1g.10gb", mig_per_gpu=7
    ),
    PoolKind("l40s-shared", "L40S", "NVIDIA-L40S-SHARED", 4, "time-sliced", replicas=4),
)


@dataclass(frozen=True)
class PoolPlan:
    name: str
    kind: PoolKind
    zones: dict[str, int]

    @property
    def nodes(self) -> int:
        return sum(self.zones.values())

    def exposed(self) -> tuple[str, int]:
        return self.kind.exposed(self.nodes)


@dataclass(frozen=True)
class ClusterPlan:
    name: str
    region: str
    zones: tuple[str, str]
    pools: tuple[PoolPlan, ...]
    teams: tuple[str, ...]


def plan_fleet(clusters: int, pools: int, teams: int, teams_per_cluster: int, seed: int) -> list[ClusterPlan]:
    """Which pools and teams each cluster gets; node counts drawn from a seeded generator."""
    rng = random.Random(seed)
    team_names = [f"team-{i:04d}" for i in range(teams)]
    per_cluster = max(teams_per_cluster, 1)
    plans = []
    for c in range(clusters):
        name = f"c{c:03d}"
        region = f"region-{c % 7}"
        zones = (f"{region}a", f"{region}b")
        cluster_pools = []
        for p in range(c * pools // clusters, (c + 1) * pools // clusters):
            kind = POOL_KINDS[p % len(POOL_KINDS)]
            per_zone = rng.randint(2, 6)
            cluster_pools.append(
                PoolPlan(f"{name}-{kind.suffix}-{p:04d}", kind, {zones[0]: per_zone, zones[1]: per_zone})
            )
        chosen = tuple(team_names[(c * per_cluster + t) % teams] for t in range(min(per_cluster, teams)))
        plans.append(ClusterPlan(name, region, zones, tuple(cluster_pools), tuple(sorted(set(chosen)))))
    return plans


# --- writers ---------------------------------------------------------------------------------------------


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def write_pool(root: Path, pool: PoolPlan) -> None:
    kind = pool.kind
    base = root / "pools" / pool.name
    zones = "".join(f"    {zone}: {count}\n" for zone, count in pool.zones.items())
    extra = ""
    labels = (
        f'    gpupolicy.io/pool: "{pool.name}"\n    nvidia.com/gpu.product: "{kind.product}"\n'
        f'    nvidia.com/device-plugin.config: "{pool.name}"\n'
    )
    if kind.mig_layout:
        extra = f"  mig:\n    layout: {kind.mig_layout}\n    strategy: mixed\n"
        labels += f'    nvidia.com/mig.config: "{kind.mig_layout}"\n'
    if kind.replicas:
        extra = f"  timeSlicing:\n    replicas: {kind.replicas}\n    renameByDefault: false\n"
    _write(
        base / "pool.yaml",
        f"""# Synthetic pool {pool.name} (bench/generate_fleet.py).
apiVersion: gpupolicy/v1
kind: Pool
metadata:
  name: {pool.name}
  description: "Synthetic {kind.access} {kind.model} pool."
spec:
  gpu:
    model: {kind.model}
    perNode: {kind.per_node}
  zones:
{zones}  accessMode: {kind.access}
{extra}  nodeLabels:
{labels}  taints:
    - key: nvidia.com/gpu
      value: present
      effect: NoSchedule
""",
    )
    _write(
        base / "kustomization.yaml",
        f"""apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
resources:
  - resourceflavor.yaml
  - nvidiadriver.yaml
configMapGenerator:
  - name: device-plugin-config
    namespace: gpu-operator
    behavior: merge
    files:
      - {pool.name}=device-plugin.yaml
""",
    )
    _write(
        base / "resourceflavor.yaml",
        f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: ResourceFlavor
metadata:
  name: {pool.name}
  labels:
    gpupolicy.io/pool: {pool.name}
spec:
  nodeLabels:
    gpupolicy.io/pool: {pool.name}
  tolerations:
    - key: nvidia.com/gpu
      operator: Equal
      value: present
      effect: NoSchedule
""",
    )
    _write(
        base / "nvidiadriver.yaml",
        f"""apiVersion: nvidia.com/v1alpha1
kind: NVIDIADriver
metadata:
  name: {pool.name}
  labels:
    gpupolicy.io/pool: {pool.name}
spec:
  default: false
  driverType: gpu
  repository: nvcr.io/nvidia
  image: driver
  version: "{DRIVER_VERSION}"
  kernelModuleType: auto
  nodeSelector:
    gpupolicy.io/pool: {pool.name}
  tolerations:
    - key: nvidia.com/gpu
      operator: Exists
      effect: NoSchedule
  upgradePolicy:
    autoUpgrade: true
    maxParallelUpgrades: 1
    maxUnavailable: "25%"
    drain:
      enable: true
      force: false
      timeoutSeconds: 600
      deleteEmptyDir: true
""",
    )
    sharing = ""
    if kind.replicas:
        sharing = f"""sharing:
  timeSlicing:
    renameByDefault: false
    failRequestsGreaterThanOne: true
    resources:
      - name: nvidia.com/gpu
        replicas: {kind.replicas}
"""
    _write(base / "device-plugin.yaml", f"version: v1\nflags:\n  migStrategy: mixed\n{sharing}")


def write_team(root: Path, team: str) -> None:
    base = root / "policies" / "teams" / team
    _write(
        base / "kustomization.yaml",
        """apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources:
  - namespace.yaml
  - resourcequota.yaml
  - limitrange.yaml
  - localqueues.yaml
  - rolebindings.yaml
""",
    )
    _write(
        base / "namespace.yaml",
        f"""apiVersion: v1
kind: Namespace
metadata:
  name: {team}
  labels:
    gpupolicy.io/team: {team}
    pod-security.kubernetes.io/enforce: baseline
    pod-security.kubernetes.io/warn: restricted
""",
    )
    _write(base / "resourcequota.yaml", _resource_quota(team, gpus=0, mig_slices=0))
    _write(
        base / "limitrange.yaml",
        f"""apiVersion: v1
kind: LimitRange
metadata:
  name: defaults
  namespace: {team}
spec:
  limits:
    - type: Container
      defaultRequest:
        cpu: 500m
        memory: 1Gi
""",
    )
    _write(
        base / "localqueues.yaml",
        "---\n".join(
            f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: LocalQueue
metadata:
  name: {queue}
  namespace: {team}
spec:
  clusterQueue: {team}
"""
            for queue in ("training", "batch", "notebooks")
        ),
    )
    _write(
        base / "rolebindings.yaml",
        "---\n".join(
            f"""apiVersion: rbac.authorization.k8s.io/v1
kind: RoleBinding
metadata:
  name: {binding}
  namespace: {team}
roleRef:
  apiGroup: rbac.authorization.k8s.io
  kind: ClusterRole
  name: {role}
subjects:
  - apiGroup: rbac.authorization.k8s.io
    kind: Group
    name: gpu-{team}
"""
            for binding, role in (
                ("gpu-trainers", "gpu-trainer"),
                ("gpu-metrics-viewers", "gpu-metrics-viewer"),
            )
        ),
    )


def team_quota(cluster: ClusterPlan, pool: PoolPlan) -> tuple[str, int, int]:
    """(resource, nominal, borrowing limit) one team of the cluster gets on a pool."""
    resource, exposed = pool.exposed()
    nominal = exposed // len(cluster.teams)
    return resource, nominal, nominal


def write_cluster(root: Path, cluster: ClusterPlan) -> None:
    base = root / "clusters" / cluster.name
    _write(
        base / "cluster.yaml",
        f"""apiVersion: gpupolicy/v1
kind: Cluster
metadata:
  name: {cluster.name}
  description: "Synthetic cluster {cluster.name} (bench/generate_fleet.py)."
spec:
  environment: staging
  region: {cluster.region}
  zones: [{cluster.zones[0]}, {cluster.zones[1]}]
  kubernetesVersion: "1.33"
  gpuOperatorVersion: {_operator_version()}
  syncEngine: flux
""",
    )
    resources = "".join(
        f"  - ../../policies/{d}\n"
        for d in ("gpu-operator", "kueue", "scheduling", "access", "admission", "observability")
    )
    resources += "".join(f"  - ../../policies/teams/{team}\n" for team in cluster.teams)
    components = "".join(f"  - ../../pools/{pool.name}\n" for pool in cluster.pools)
    _write(
        base / "kustomization.yaml",
        f"""apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
buildMetadata:
  - originAnnotations
resources:
{resources}  - queues
components:
{components}  - ../../policies/sync/flux
configMapGenerator:
  - name: gpu-operator-values
    namespace: gpu-operator
    behavior: merge
    files:
      - 10-cluster.yaml=gpu-operator-values.yaml
patches:
  - path: team-quotas.yaml
""",
    )
    _write(base / "gpu-operator-values.yaml", "{}\n")
    # Flux is bootstrapped at clusters/<name>/flux (decision 0028): its entry and the two stage
    # Kustomizations.
    _write(
        base / "flux" / "kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\n"
        "kind: Kustomization\nresources:\n  - flux-system\n  - stages.yaml\n",
    )
    _write(
        base / "flux" / "flux-system" / "kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nresources:\n  - gotk-sync.yaml\n",
    )
    _write(base / "flux" / "flux-system" / "gotk-sync.yaml", _flux_entry(cluster.name))
    _write(base / "flux" / "stages.yaml", _flux_sync(cluster.name))
    _write(
        base / "queues" / "kustomization.yaml",
        "apiVersion: kustomize.config.k8s.io/v1beta1\n"
        "kind: Kustomization\nresources:\n" + "".join(f"  - {team}.yaml\n" for team in cluster.teams),
    )
    for team in cluster.teams:
        _write(base / "queues" / f"{team}.yaml", _cluster_queue(cluster, team))
    _write(base / "team-quotas.yaml", "---\n".join(_namespace_quota(cluster, team) for team in cluster.teams))


def _cluster_queue(cluster: ClusterPlan, team: str) -> str:
    # The CPU flavor first (decision 0029), so pod sets without GPUs never get a pool's flavor.
    flavors = "        - name: cpu\n          resources:\n" + "".join(
        f"            - name: {name}\n              nominalQuota: {quota}\n"
        for name, quota in zip(COVERED, (32, '"128Gi"', 0, 0), strict=True)
    )
    for pool in cluster.pools:
        resource, nominal, borrow = team_quota(cluster, pool)
        per_device = 1 if resource == MIG_1G else 8
        amounts = {
            "cpu": (nominal * per_device, borrow * per_device),
            "memory": (f'"{nominal * per_device * 8}Gi"', f'"{borrow * per_device * 8}Gi"'),
            GPU: (nominal, borrow) if resource == GPU else (0, 0),
            MIG_1G: (nominal, borrow) if resource == MIG_1G else (0, 0),
        }
        flavors += f"        - name: {pool.name}\n          resources:\n"
        for name in COVERED:
            quota, limit = amounts[name]
            flavors += (
                f"            - name: {name}\n              nominalQuota: {quota}\n"
                f"              borrowingLimit: {limit}\n"
            )
    covered = "".join(f"        - {name}\n" for name in COVERED)
    return f"""apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: {team}
  labels:
    gpupolicy.io/team: {team}
    gpupolicy.io/tier: training
    gpupolicy.io/workload: training
    gpupolicy.io/allow-shared-gpus: "true"
spec:
  cohortName: training
  namespaceSelector:
    matchLabels:
      gpupolicy.io/team: {team}
  queueingStrategy: BestEffortFIFO
  preemption:
    reclaimWithinCohort: LowerPriority
    borrowWithinCohort:
      policy: LowerPriority
      maxPriorityThreshold: 1000
    withinClusterQueue: LowerPriority
  resourceGroups:
    - coveredResources:
{covered}      flavors:
{flavors}"""


def _namespace_quota(cluster: ClusterPlan, team: str) -> str:
    totals = {GPU: 0, MIG_1G: 0}
    for pool in cluster.pools:
        resource, nominal, borrow = team_quota(cluster, pool)
        totals[resource] += nominal + borrow
    return _resource_quota(team, gpus=totals[GPU], mig_slices=totals[MIG_1G])


def _resource_quota(team: str, gpus: int, mig_slices: int) -> str:
    """The team namespace's GPU ResourceQuota: 0 in the team base, the team's quota in a cluster's overlay."""
    return f"""apiVersion: v1
kind: ResourceQuota
metadata:
  name: gpu
  namespace: {team}
spec:
  hard:
    requests.nvidia.com/gpu: "{gpus}"
    requests.nvidia.com/mig-1g.10gb: "{mig_slices}"
"""


def _flux_entry(cluster: str) -> str:
    return f"""apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 1m
  url: https://github.com/example-org/gpu-fleet.git
  ref:
    branch: main
---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: flux-system
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/{cluster}/flux
  prune: true
  sourceRef:
    kind: GitRepository
    name: flux-system
"""


def _flux_sync(cluster: str) -> str:
    stages = ""
    for name, selector, extra in (
        (f"{cluster}-operators", "gpupolicy.io/sync-stage!=operators", "  wait: true\n  timeout: 15m\n"),
        (
            cluster,
            "gpupolicy.io/sync-stage=operators",
            f"  timeout: 10m\n  dependsOn:\n    - name: {cluster}-operators\n",
        ),
    ):
        stages += f"""---
apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata:
  name: {name}
  namespace: flux-system
spec:
  interval: 10m
  path: ./clusters/{cluster}
  prune: true
{extra}  sourceRef:
    kind: GitRepository
    name: flux-system
  patches:
    - target:
        labelSelector: {selector}
      patch: |-
        $patch: delete
        apiVersion: v1
        kind: any
        metadata:
          name: any
"""
    return stages.removeprefix("---\n")


def _operator_version() -> str:
    """The GPU Operator version the reference fleet pins (its first cluster's cluster.yaml)."""
    import yaml

    for facts in sorted((SOURCE_REPO / "clusters").glob("*/cluster.yaml")):
        data = yaml.safe_load(facts.read_text(encoding="utf-8"))
        return str(data["spec"]["gpuOperatorVersion"])
    return "v26.7.0"


def copy_shared_policy(source: Path, root: Path) -> None:
    for directory in SHARED_POLICY_DIRS:
        shutil.copytree(source / "policies" / directory, root / "policies" / directory)
    # The site settings: site_url, which every alert's runbook_url starts with (OBS001), and the alerts'
    # owners and escalation (extra.oncall, OBS007).
    shutil.copyfile(source / "mkdocs.yml", root / "mkdocs.yml")
    if (source / "docs" / "runbooks").is_dir():  # alerts link their runbooks (OBS001)
        shutil.copytree(source / "docs" / "runbooks", root / "docs" / "runbooks")


def generate(
    root: Path,
    clusters: int,
    pools: int,
    teams: int,
    teams_per_cluster: int,
    seed: int = 1,
    git: bool = False,
    source: Path = SOURCE_REPO,
) -> list[ClusterPlan]:
    """Write the synthetic fleet into `root` (which must not exist or be empty); return its plan."""
    if root.exists() and any(root.iterdir()):
        raise SystemExit(f"{root}: exists and is not empty")
    root.mkdir(parents=True, exist_ok=True)
    plans = plan_fleet(clusters, pools, teams, teams_per_cluster, seed)
    copy_shared_policy(source, root)
    for team in sorted({team for plan in plans for team in plan.teams}):
        write_team(root, team)
    for plan in plans:
        for pool in plan.pools:
            write_pool(root, pool)
        write_cluster(root, plan)
    if git:
        _git_commit(root)
    return plans


def _git_commit(root: Path) -> None:
    env_args = [
        "-c",
        "user.name=bench",
        "-c",
        "user.email=bench@example.invalid",
        "-c",
        "commit.gpgsign=false",
    ]
    for command in (["init", "-q"], ["add", "-A"], ["commit", "-q", "-m", "synthetic fleet"]):
        subprocess.run(["git", *env_args, *command], cwd=root, check=True, capture_output=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", type=Path, help="target folder (created; must be empty)")
    parser.add_argument("--clusters", type=int, default=100)
    parser.add_argument("--pools", type=int, default=1000, help="pools in the whole fleet")
    parser.add_argument("--teams", type=int, default=200, help="teams in the whole fleet")
    parser.add_argument("--teams-per-cluster", type=int, default=50)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--git", action="store_true", help="make the folder a git repository with one commit")
    args = parser.parse_args(argv)
    plans = generate(
        args.out, args.clusters, args.pools, args.teams, args.teams_per_cluster, args.seed, args.git
    )
    print(
        f"{args.out}: {len(plans)} clusters, {sum(len(p.pools) for p in plans)} pools, "
        f"{len({t for p in plans for t in p.teams})} teams"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
