"""The cpu and memory a GPU quota edit moves with it, in the old queue shape (cpu/memory on each GPU flavor)
and
in decision 0069's (cpu/memory a resource group of their own on the `cpu` flavor)."""

import re
from decimal import Decimal
from fractions import Fraction

from ruamel.yaml import YAML
from support import copy_repo, fleet_repo

from gpupolicy.domain import quotas
from gpupolicy.pipeline import load_fleet
from gpupolicy.recommend import cpu_share, edits, space

GI = Decimal(2**30)
OLD = """
resourceGroups:
  - coveredResources: [cpu, memory, nvidia.com/gpu]
    flavors:
      - name: pool-a
        resources:
          - {name: cpu, nominalQuota: 40}
          - {name: memory, nominalQuota: "400Gi"}
          - {name: nvidia.com/gpu, nominalQuota: 2, borrowingLimit: 2}
"""
NEW = """
resourceGroups:
  - coveredResources: [cpu, memory]
    flavors:
      - name: cpu
        resources:
          - {name: cpu, nominalQuota: 50}
          - {name: memory, nominalQuota: "500Gi", lendingLimit: "100Gi"}
  - coveredResources: [nvidia.com/gpu]
    flavors:
      - name: pool-a
        resources:
          - {name: nvidia.com/gpu, nominalQuota: 2, borrowingLimit: 2, lendingLimit: 1}
"""


def _spec(text):
    return YAML().load(text)


def _knob(kind):
    return space.Knob(
        f"team-x/pool-a/nvidia.com/gpu/{kind}", "team-x", kind, 0, flavor="pool-a", resource="nvidia.com/gpu"
    )


def _resources(spec, flavor):
    return {
        r["name"]: r
        for g in spec["resourceGroups"]
        for f in g["flavors"]
        if f["name"] == flavor
        for r in f["resources"]
    }


def test_the_old_shape_scales_the_flavors_own_cpu_and_memory(tmp_path):
    spec = _spec(OLD)
    edits.CandidateEditor(tmp_path)._set_limit(spec, _knob(space.NOMINAL), 5, None)
    quota = _resources(spec, "pool-a")
    assert (
        quota["nvidia.com/gpu"]["nominalQuota"],
        quota["cpu"]["nominalQuota"],
        quota["memory"]["nominalQuota"],
    ) == (5, 100, "1000Gi")  # 20 cpu + 200Gi per GPU, read from the flavor's own nominal quotas


def test_the_new_shape_moves_the_cpu_flavor_by_the_change_times_the_ratio(tmp_path):
    spec = _spec(NEW)
    ratio = {"cpu": Decimal(8), "memory": 64 * GI}
    editor = edits.CandidateEditor(tmp_path)
    editor._set_limit(spec, _knob(space.NOMINAL), 5, ratio)  # +3 devices
    cpu = _resources(spec, "cpu")
    assert (cpu["cpu"]["nominalQuota"], cpu["memory"]["nominalQuota"]) == (74, "692Gi")
    assert "cpu" not in _resources(spec, "pool-a")
    # the cpu flavor sets no borrowingLimit: unlimited stays
    editor._set_limit(spec, _knob(space.BORROW), 6, ratio)
    assert "borrowingLimit" not in cpu["cpu"] and "borrowingLimit" not in cpu["memory"]
    # -1 device lent: the limit it sets comes down with it
    editor._set_limit(spec, _knob(space.LEND), 0, ratio)
    assert cpu["memory"]["lendingLimit"] == "36Gi" and "lendingLimit" not in cpu["cpu"]
    editor._set_limit(spec, _knob(space.NOMINAL), 0, None)  # no ratio known: the GPUs alone change
    assert (
        cpu["cpu"]["nominalQuota"] == 74 and _resources(spec, "pool-a")["nvidia.com/gpu"]["nominalQuota"] == 0
    )


def _queue(name="research", cluster_name="prod-us"):
    cluster = load_fleet(fleet_repo(), [cluster_name]).clusters[cluster_name]
    return cluster, cluster.cluster_queues[name]


def _gpu_quotas(cluster, queue):
    return [(flavor, q) for flavor, q in queue.quotas() if q.name.startswith("nvidia.com/") and q.nominal]


def test_the_new_shape_derives_the_ratio_from_the_yaml_and_the_pools_node_shape():
    """No comment is read: one device stands for its node share (node / perNode x its card share) times the
    queue's proportion, its cpu flavor's quota over the node share of all its GPU quotas (at most 1)."""
    cluster, queue = _queue()
    cpu_flavor = next(fq for g in queue.resource_groups if "cpu" in g.covered_resources for fq in g.flavors)
    held = {q.name: Fraction(str(q.nominal)) for q in cpu_flavor.resources}
    offered = {"cpu": Fraction(0), "memory": Fraction(0)}
    for flavor, quota in _gpu_quotas(cluster, queue):
        pool = quotas.pool_of(cluster, flavor)
        per_gpu = {"cpu": Fraction(str(pool.node_cpu)), "memory": Fraction(pool.node_memory)}
        for key in offered:
            offered[key] += per_gpu[key] / pool.gpus_per_node * quotas.cards(pool, quota.name) * quota.nominal
    proportion = cpu_share.queue_proportion(cluster, queue)
    assert proportion == {k: min(Fraction(1), held[k] / offered[k]) for k in offered}
    assert proportion["memory"] < 1  # the fixture's queue holds less memory than its GPUs' nodes offer
    flavor, quota = _gpu_quotas(cluster, queue)[0]
    share = cpu_share.node_share(cluster, flavor, quota.name)
    assert cpu_share.per_device(cluster, queue, flavor, quota.name) == {
        k: Decimal(share[k].numerator * proportion[k].numerator)
        / Decimal(share[k].denominator * proportion[k].denominator)
        for k in share
    }


def test_the_ratio_reads_no_comment(tmp_path):
    """The same queue with its header block stating other ratios (the old `cpu/memory: ... per gpu.`) derives
    the same per-device share: the header is output only (decision 0090)."""
    cluster, queue = _queue()
    flavor, quota = _gpu_quotas(cluster, queue)[0]
    before = cpu_share.per_device(cluster, queue, flavor, quota.name)
    root = copy_repo(fleet_repo(), tmp_path / "repo")
    path = root / queue.obj.origin
    path.write_text(
        path.read_text().replace(
            "# Quotas per flavor (pool), devices the pool exposes:\n",
            "# Quotas per flavor (pool), devices the pool exposes:\n"
            f"#   {flavor} (x): cpu/memory: 99 cpu + 999Gi per gpu.\n",
        )
    )
    edited = load_fleet(root, ["prod-us"]).clusters["prod-us"]
    assert cpu_share.per_device(edited, edited.cluster_queues[queue.name], flavor, quota.name) == before


def test_without_a_node_shape_no_ratio_is_derived(tmp_path):
    cluster, queue = _queue()
    flavor, quota = _gpu_quotas(cluster, queue)[0]
    pool = quotas.pool_of(cluster, flavor)
    root = copy_repo(fleet_repo(), tmp_path / "repo")
    path = root / pool.path
    path.write_text(re.sub(r"\n  node:\n    cpu: .*\n    memory: .*\n", "\n", path.read_text()))
    edited = load_fleet(root, ["prod-us"]).clusters["prod-us"]
    assert cpu_share.per_device(edited, edited.cluster_queues[queue.name], flavor, quota.name) is None
