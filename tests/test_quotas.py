"""The quota arithmetic (gpupolicy.domain.quotas): what is given out per flavor and per pool, the capacity a
flavor stands
for, and agreement between CAP001 and the generated quota page on the reference fleet."""

from __future__ import annotations

import re
from decimal import Decimal

import pytest
from simulate.simhelpers import _obj
from support import REPO

from gpupolicy import pipeline
from gpupolicy.docsgen import Context
from gpupolicy.docsgen import quotas as quota_page
from gpupolicy.domain import quotas
from gpupolicy.model import (
    Cluster,
    ClusterFacts,
    ClusterQueue,
    Cohort,
    Flavor,
    FlavorQuotas,
    Pool,
    ResourceGroup,
    ResourceQuota,
)
from gpupolicy.rules import cap001_quota_over_capacity as cap001

GPU = "nvidia.com/gpu"


def _pool(name: str, gpus: int, product: str = "NVIDIA-H100-80GB-HBM3") -> Pool:
    return Pool(
        name=name,
        path=f"pools/{name}/pool.yaml",
        gpu_model="H100-80GB",
        gpus_per_node=8,
        zones={"zone-a": gpus // 8},
        access_mode="exclusive",
        node_labels={"gpupolicy.io/pool": name, "nvidia.com/gpu.product": product},
        capacity={GPU: gpus},
    )


def _flavor(name: str, labels: dict[str, str]) -> Flavor:
    return Flavor(name, labels, (), (), _obj("ResourceFlavor", name))


def _groups(*quota: tuple[str, float]) -> tuple[ResourceGroup, ...]:
    return (
        ResourceGroup(
            (GPU,), tuple(FlavorQuotas(flavor, (ResourceQuota(GPU, nominal),)) for flavor, nominal in quota)
        ),
    )


def _queue(name: str, *quota: tuple[str, float], cohort: str = "") -> ClusterQueue:
    return ClusterQueue(
        name=name,
        cohort=cohort,
        namespace_selector={},
        resource_groups=_groups(*quota),
        preemption={},
        team=name,
        tier="training",
        workload="training",
        labels={},
        obj=_obj("ClusterQueue", name),
    )


def _cluster(flavors: dict[str, Flavor], queues: list[ClusterQueue], cohorts: list[Cohort] = ()) -> Cluster:
    facts = ClusterFacts(
        "q-test", "clusters/q-test/cluster.yaml", "test", "eu", ("zone-a",), "1.33", "v26.3.0", "flux"
    )
    return Cluster(
        facts=facts,
        pools=[_pool("a", 16), _pool("b", 8), _pool("c", 8, "NVIDIA-H200")],
        flavors=flavors,
        cluster_queues={q.name: q for q in queues},
        cohorts={c.name: c for c in cohorts},
    )


def test_a_cohorts_own_quota_is_given_out_on_its_flavor() -> None:
    cohort = Cohort("prod", "", _groups(("fa", 4)), _obj("Cohort", "prod"))
    cluster = _cluster(
        {"fa": _flavor("fa", {"gpupolicy.io/pool": "a"})},
        [_queue("q1", ("fa", 8), cohort="prod"), _queue("q2", ("fa", 6))],
        [cohort],
    )
    assert quotas.nominal_per_flavor(cluster) == {("fa", GPU): 18}
    assert quotas.flavor_capacity(cluster, "fa") == {GPU: 16}
    charged = quotas.nominal_per_pool(cluster)
    assert list(charged) == [("a", GPU)]
    assert sorted(e.label for e in charged[("a", GPU)]) == ["cohort prod", "q1", "q2"]


def test_a_flavor_over_several_pools_stands_for_all_of_them_but_is_charged_to_none() -> None:
    h100 = _flavor("h100", {"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3"})  # pools a and b
    cluster = _cluster({"h100": h100}, [_queue("q", ("h100", 20))])
    assert [p.name for p in quotas.pools_of(cluster, "h100")] == ["a", "b"]
    assert quotas.flavor_capacity(cluster, "h100") == {GPU: 24}
    assert quotas.pool_of(cluster, "h100") is None  # CAP003 reports it; CAP001 cannot charge it to a pool
    assert quotas.nominal_per_pool(cluster) == {}


def test_two_flavors_on_one_pool_are_both_charged_to_it() -> None:
    flavors = {
        "b1": _flavor("b1", {"gpupolicy.io/pool": "b"}),
        "b2": _flavor("b2", {"gpupolicy.io/pool": "b"}),
    }
    cluster = _cluster(flavors, [_queue("q1", ("b1", 6)), _queue("q2", ("b2", 6))])
    assert quotas.nominal_per_flavor(cluster) == {("b1", GPU): 6, ("b2", GPU): 6}
    assert sum(e.quota.nominal for e in quotas.nominal_per_pool(cluster)[("b", GPU)]) == 12


def test_unknown_flavor_stands_for_nothing() -> None:
    cluster = _cluster({}, [_queue("q", ("nope", 1))])
    assert quotas.pools_of(cluster, "nope") == [] and quotas.flavor_capacity(cluster, "nope") == {}
    assert quotas.nominal_per_flavor(cluster) == {("nope", GPU): 1} and quotas.nominal_per_pool(cluster) == {}


def test_the_quota_page_is_a_queue_by_pool_matrix_in_gpus_with_zeros_blank() -> None:
    cohort = Cohort("prod", "", _groups(("fb", 2)), _obj("Cohort", "prod"))
    flavors = {
        "fa": _flavor("fa", {"gpupolicy.io/pool": "a"}),
        "fb": _flavor("fb", {"gpupolicy.io/pool": "b"}),
    }
    cluster = _cluster(
        flavors, [_queue("q1", ("fa", 8), ("fb", 0)), _queue("q2", ("fb", 4), cohort="prod")], [cohort]
    )
    lines = quota_page._matrix(cluster).splitlines()
    assert lines[0] == "| team (queue) | cohort | a (flavor fa) | b (flavor fb) |"
    assert lines[2:] == [
        "| q1 | - | 8 GPUs |  |",  # the zero quota on fb is blank, not "0"
        "| q2 | prod |  | 4 GPUs (+any) |",  # in a cohort with no borrowing limit
        "| cohort prod (its own quota) | prod |  | 2 GPUs |",
        "| **nominal total** |  | 8 GPUs | 6 GPUs |",
        "| **pools expose** |  | 16 GPUs | 8 GPUs |",
        "| **not in any quota** |  | 8 GPUs | 2 GPUs |",
    ]


def test_amounts_are_in_the_pools_units() -> None:
    sliced = Pool(
        name="s",
        path="pools/s/pool.yaml",
        gpu_model="L4",
        gpus_per_node=8,
        zones={"z": 1},
        access_mode="time-sliced",
        node_labels={},
        time_slicing_replicas=4,
    )
    assert quota_page.amount_text(GPU, 1, [_pool("a", 8)]) == "1 GPU"
    assert quota_page.amount_text(GPU, 48, [sliced]) == "48 × 1/4 GPU"
    assert quota_page.amount_text("nvidia.com/mig-1g.10gb", 16, []) == "16 × 1g.10gb"


def test_share_percent_is_exact() -> None:
    assert quotas.share_percent(16, 64) == 25
    assert quotas.share_percent(1, 0) is None
    assert quotas.share_percent(10**400, 3) == 100 * Decimal(10**400) / 3  # no float overflow


# --- the reference fleet: the page and the rule read the same numbers
# -------------------------------------------


@pytest.fixture(scope="module")
def fleet():
    if not (REPO / "clusters").is_dir():
        pytest.skip("the reference fleet (clusters/) is not there")
    return pipeline.run(REPO, rules=False).fleet


def _amounts(cell: str) -> dict[str, int]:
    """`64 × 1g.10gb, 32 × 2g.20gb` -> {mig-1g.10gb: 64, ...}; `48 GPUs` and `64 × 1/4 GPU` -> {gpu: 48 /
    64}."""
    found = {}
    for number, profile in re.findall(r"(\d+) (?:× (\d+g\.\d+gb)|GPUs?|× 1/\d+ GPU)", cell):
        found[f"mig-{profile}" if profile else "gpu"] = int(number)
    return found


def _page_totals(text: str) -> dict[tuple[str, str, str], tuple[int, int]]:
    """(cluster, flavor column, resource) -> (nominal total, pools expose) from each cluster's matrix."""
    totals = {}
    for section in re.split(r"^## ", text, flags=re.M)[1:]:
        cluster = section.splitlines()[0].strip()
        for block in re.split(r"\n\s*\n", section):  # a cluster with many pools has several tables
            rows = {
                line.split(" | ")[0].strip("| *"): [c.strip() for c in line.strip().strip("|").split("|")]
                for line in block.splitlines()
                if line.startswith("| ")
            }
            if "team (queue)" not in rows:
                continue
            header = rows["team (queue)"]
            for column, (nominal, exposed) in enumerate(
                zip(rows["nominal total"], rows["pools expose"], strict=True)
            ):
                for resource, amount in _amounts(exposed).items():
                    totals[(cluster, header[column], resource)] = (_amounts(nominal).get(resource, 0), amount)
    return totals


def test_cap001_and_the_quota_page_agree_on_the_repository_fleet(fleet) -> None:
    """On whatever fleet this repository holds (the reference one, or a fork's)."""
    text = quota_page.pages(Context(root=REPO, fleet=fleet))["quotas.md"]
    page = _page_totals(text)
    compared = 0
    for cluster in fleet.clusters.values():
        for (pool_name, resource), entries in quotas.nominal_per_pool(cluster).items():
            flavors = {e.flavor for e in entries}
            assert len(flavors) == 1, f"{cluster.name}: pool {pool_name} has several flavors (CAP004)"
            flavor = flavors.pop()
            pool = next(p for p in cluster.pools if p.name == pool_name)
            short = resource.removeprefix("nvidia.com/").split(".shared")[0]
            assert page[(cluster.name, flavor, short)] == (
                sum(e.quota.nominal for e in entries),
                pool.capacity[resource],
            )
            compared += 1
    assert compared == sum(len(quotas.nominal_per_pool(c)) for c in fleet.clusters.values()) > 0
    # CAP001 is silent exactly when no flavor's nominal total exceeds what its pool exposes
    assert list(cap001.check(fleet)) == []
    assert all(nominal <= exposed for nominal, exposed in page.values())
