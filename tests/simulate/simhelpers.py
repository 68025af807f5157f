"""Shared helpers for the simulator tests: a small hand-built cluster (model types only, no repository needed)
and the location of ../shared/traces. Imported as `from simhelpers import ...`; fixtures stay in
conftest.py."""

from __future__ import annotations

from pathlib import Path

import pytest
from support import SHARED

from gpupolicy.model import (
    Cluster,
    ClusterFacts,
    ClusterQueue,
    Flavor,
    FlavorQuotas,
    K8sObject,
    Pool,
    ResourceGroup,
    ResourceQuota,
    WorkloadPriorityClass,
)

TRACES = SHARED / "traces"


def _obj(kind: str, name: str, spec: dict | None = None) -> K8sObject:
    return K8sObject(
        "kueue.x-k8s.io/v1beta2", kind, name, "", {"metadata": {"name": name}, "spec": spec or {}}
    )


def _pool(name: str, nodes: int, per_node: int, mode: str, **extra) -> Pool:
    return Pool(
        name=name,
        path=f"pools/{name}/pool.yaml",
        gpu_model="A100-SXM4-80GB",
        gpus_per_node=per_node,
        zones={"zone-a": nodes},
        access_mode=mode,
        node_labels={"gpupolicy.io/pool": name},
        **extra,
    )


def _flavor(name: str, pool: str) -> Flavor:
    return Flavor(name, {"gpupolicy.io/pool": pool}, (), (), _obj("ResourceFlavor", name))


def _queue(
    name: str,
    team: str,
    tier: str,
    workload: str,
    quotas: list[tuple[str, str, float, float | None]],
    cohort: str = "research",
    preemption: dict | None = None,
    strategy: str = "BestEffortFIFO",
    labels: dict | None = None,
) -> ClusterQueue:
    flavors = tuple(
        FlavorQuotas(flavor, (ResourceQuota(resource, nominal, borrow),))
        for flavor, resource, nominal, borrow in quotas
    )
    group = ResourceGroup(tuple(sorted({q[1] for q in quotas})), flavors)
    return ClusterQueue(
        name=name,
        cohort=cohort,
        namespace_selector={},
        resource_groups=(group,),
        preemption=preemption or {},
        team=team,
        tier=tier,
        workload=workload,
        labels=labels or {},
        obj=_obj("ClusterQueue", name, {"queueingStrategy": strategy}),
    )


def build_cluster() -> Cluster:
    """train: 4 x 8 exclusive; shared: 2 x 4 time-sliced x4; mig: 1 x 8 MIG. Three teams share a cohort."""
    facts = ClusterFacts(
        "sim-test", "clusters/sim-test/cluster.yaml", "test", "eu", ("zone-a",), "1.33", "v26.3.0", "flux"
    )
    pools = [
        _pool("train", 4, 8, "exclusive"),
        _pool("shared", 2, 4, "time-sliced", time_slicing_replicas=4),
        _pool("mig", 1, 8, "mig", mig_layout="all-1g.10gb", mig_strategy="mixed"),
    ]
    flavors = {f"{p.name}-flavor": _flavor(f"{p.name}-flavor", p.name) for p in pools}
    reclaim = {"withinClusterQueue": "LowerPriority", "reclaimWithinCohort": "Any"}
    queues = [
        _queue(
            "team-a-training",
            "team-a",
            "training",
            "training",
            [("train-flavor", "nvidia.com/gpu", 16, None)],
            preemption=reclaim,
        ),
        _queue(
            "team-b-training",
            "team-b",
            "training",
            "training",
            [("train-flavor", "nvidia.com/gpu", 16, 8)],
            preemption=reclaim,
        ),
        _queue(
            "team-c-inference",
            "team-c",
            "production",
            "inference",
            [("shared-flavor", "nvidia.com/gpu", 32, None)],
            preemption=reclaim,
        ),
        _queue(
            "team-c-experiments",
            "team-c",
            "experiment",
            "notebook",
            [("mig-flavor", "nvidia.com/mig-1g.10gb", 56, None)],
        ),
    ]
    wpcs = {
        t: WorkloadPriorityClass(t, v, t, _obj("WorkloadPriorityClass", t))
        for t, v in (("production", 100000), ("training", 10000), ("batch", 1000), ("experiment", 100))
    }
    return Cluster(
        facts=facts,
        pools=pools,
        flavors=flavors,
        cluster_queues={q.name: q for q in queues},
        workload_priority_classes=wpcs,
    )


def peak_usage(engine, queue: str, flavor: str):
    """Run the engine; return the most milli-GPUs `queue` held at once on `flavor`, and the result."""
    peak = 0
    original = engine._start

    def start(run):
        nonlocal peak
        original(run)
        peak = max(peak, engine.usage[queue][flavor])

    engine._start = start
    result = engine.run()
    return peak, result


def shared_trace(*parts: str) -> Path:
    path = TRACES.joinpath(*parts)
    if not path.exists():
        pytest.skip(f"{path} is absent (../shared not available)")
    return path


CONFIGURATION_LINE = "    kind: Configuration\n"  # where the values file's Configuration starts its fields


def fleet_copy(tmp_path: Path):
    """A copy of the tests' own fleet (decision 0085) and its first cluster, loaded: (repo, cluster)."""
    from support import copy_repo, fleet_repo

    repo = copy_repo(fleet_repo(), tmp_path / "repo")
    return repo, reloaded(repo, "")


def reloaded(repo: Path, name: str):
    """The cluster `name` of the repository as it now is ("": the first one)."""
    from gpupolicy import pipeline

    clusters = pipeline.load_fleet(repo, use_cache=False).clusters
    return clusters[name] if name else next(iter(clusters.values()))


def with_configuration(repo: Path, lines: str, original: str | None = None) -> str:
    """Add `lines` (YAML at the Configuration's indentation) to the Kueue Configuration of `repo`'s values
    file, or of its `original` text; the text before the change."""
    from gpupolicy.domain.kueue_configuration import KUEUE_VALUES

    values = repo / KUEUE_VALUES
    text = values.read_text() if original is None else original
    assert CONFIGURATION_LINE in text
    values.write_text(text.replace(CONFIGURATION_LINE, CONFIGURATION_LINE + lines, 1))
    return text


def with_queue_spec(repo: Path, queue, lines: str) -> None:
    """Add `lines` (YAML indented under `spec:`) to the ClusterQueue `queue`'s file."""
    path = repo / queue.obj.origin
    path.write_text(path.read_text().replace("\nspec:\n", "\nspec:\n" + lines, 1))
