"""`recommend`'s sharing switch: which pools get it, what the simulator sees, and what `--apply` writes."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

import pytest
from support import fleet_repo

from gpupolicy import docsgen
from gpupolicy.errors import ToolError
from gpupolicy.model import (
    PRODUCT_LABEL,
    Cluster,
    ClusterFacts,
    ClusterQueue,
    Flavor,
    FlavorQuotas,
    K8sObject,
    Pool,
    ResourceGroup,
    ResourceQuota,
)
from gpupolicy.pipeline import load_fleet
from gpupolicy.recommend import edits, sharing, space
from gpupolicy.simulate import replay
from gpupolicy.simulate.jobs import MILLI, Job

# The tests' own rich fleet (tests/fixtures/fleet), not whatever fleet this repository holds (decision 0085).
REPO = fleet_repo()
GPU = "nvidia.com/gpu"


def _obj(kind: str, name: str) -> K8sObject:
    return K8sObject("kueue.x-k8s.io/v1beta2", kind, name, "", {"metadata": {"name": name}, "spec": {}})


def _pool(name: str, mode: str, **extra) -> Pool:
    """One node of 4 L4 cards, labelled as GPU feature discovery labels an exclusive L4."""
    return Pool(
        name=name,
        path=f"pools/{name}/pool.yaml",
        gpu_model="L4",
        gpus_per_node=4,
        zones={"zone-a": 1},
        access_mode=mode,
        node_labels={"gpupolicy.io/pool": name, PRODUCT_LABEL: "NVIDIA-L4"},
        capacity={GPU: 4 * (extra.get("time_slicing_replicas") or 1)},
        **extra,
    )


def _queue(name: str, workload: str, flavor: str, nominal: int) -> ClusterQueue:
    group = ResourceGroup((GPU,), (FlavorQuotas(flavor, (ResourceQuota(GPU, nominal),)),))
    return ClusterQueue(
        name=name,
        cohort="",
        namespace_selector={},
        resource_groups=(group,),
        preemption={},
        team=name,
        tier="batch",
        workload=workload,
        labels={},
        obj=_obj("ClusterQueue", name),
    )


def _cluster(*pools_and_queues: tuple[Pool, str, int]) -> Cluster:
    """A cluster of the given pools, each with one flavor (selecting its nodes by pool and product label) and
    one queue of the given workload holding the given quota there."""
    facts = ClusterFacts(
        "mini", "clusters/mini/cluster.yaml", "test", "eu", ("zone-a",), "1.33", "v26.3.0", "flux"
    )
    flavors = {
        p.name: Flavor(
            p.name,
            {"gpupolicy.io/pool": p.name, PRODUCT_LABEL: p.node_labels[PRODUCT_LABEL]},
            (),
            (),
            _obj("ResourceFlavor", p.name),
        )
        for p, _, _ in pools_and_queues
    }
    queues = {
        f"{p.name}-q": _queue(f"{p.name}-q", workload, p.name, nominal)
        for p, workload, nominal in pools_and_queues
    }
    return Cluster(
        facts=facts, pools=[p for p, _, _ in pools_and_queues], flavors=flavors, cluster_queues=queues
    )


def _ranges(cluster: Cluster) -> dict[str, tuple[int, int, int]]:
    return {k.pool: (k.current, k.low, k.high) for k in space.replica_knobs(cluster)}


def test_the_switch_is_offered_to_inference_pools_that_are_exclusive_or_time_sliced():
    cluster = _cluster(
        (_pool("serve", "exclusive"), "inference", 4),
        (_pool("train", "exclusive"), "training", 4),
        (_pool("notebooks", "time-sliced", time_slicing_replicas=3), "notebook", 12),
        (_pool("renamed", "time-sliced", time_slicing_replicas=4, rename_shared=True), "inference", 16),
        (_pool("dedicated", "isolated", team="serve"), "inference", 4),
        (_pool("mps", "exclusive", mps_replicas=4), "inference", 16),
    )
    assert _ranges(cluster) == {
        "serve": (1, 1, sharing.EXCLUSIVE_MAX_REPLICAS),  # exclusive today; may become time-sliced
        "notebooks": (3, 1, 6),  # time-sliced today; may become exclusive or go up to twice today's count
        "renamed": (4, 2, 8),  # nvidia.com/gpu.shared: today's replica knob only, no switch
    }  # not the training pool (whole-card jobs cannot run on a shared card), isolated, MIG or MPS pools


def test_the_reference_fleet_offers_the_switch_to_its_shared_pools_only():
    fleet = load_fleet(REPO, None)
    offered = {name: _ranges(cluster) for name, cluster in sorted(fleet.clusters.items())}
    assert offered == {
        "prod-eu": {"eu-l4-shared": (4, 1, 8)},
        "prod-us": {"us-l40s-shared": (4, 1, 8)},
        # the serving pools are isolated, H100/H200 train
        "test-us": {"test-l4-shared": (4, 1, 8)},
    }


def _quarter_card_jobs(queue: str, count: int = 16) -> list[Job]:
    return [
        Job(
            f"j{i}",
            submit=0,
            duration=3600,
            gpus=1,
            share=0.25,
            queue=queue,
            team=queue,
            workload="inference",
        )
        for i in range(count)
    ]


def _started_at_once(policy, jobs) -> tuple[int, float, set[int]]:
    """(jobs started at submission, mean wait in seconds, milli of a card each pod held)."""
    runs = replay(policy, jobs).runs
    waits = [r.first_start - r.job.submit for r in runs]
    return sum(w == 0 for w in waits), sum(waits) / len(waits), {r.shape.milli for r in runs}


def test_an_exclusive_serving_pool_switched_to_time_slicing_packs_fractional_jobs():
    cluster = _cluster((_pool("serve", "exclusive"), "inference", 4))
    [knob] = space.replica_knobs(cluster)
    jobs = _quarter_card_jobs("serve-q")
    exclusive = space.candidate_policy(cluster, [knob], {})
    shared = space.candidate_policy(cluster, [knob], {knob.name: 4})
    assert (shared.pools["serve"].sharing, shared.pools["serve"].replicas) == ("time-sliced", 4)
    assert shared.queues["serve-q"].flavors[0].nominal == 4 * MILLI  # 16 replicas: the same 4 cards
    before, after = _started_at_once(exclusive, jobs), _started_at_once(shared, jobs)
    assert (before[0], before[2]) == (4, {MILLI})  # a quarter-card job holds a whole card
    assert (after[0], after[2]) == (16, {MILLI // 4})  # four to a card: all start at once
    assert after[1] == 0 < before[1]
    switched = space.with_params(cluster, [knob], {knob.name: 4})
    pool = switched.pools[0]
    assert (pool.access_mode, pool.sharing, pool.time_slicing_replicas, pool.capacity) == (
        "time-sliced",
        "time-sliced",
        4,
        {GPU: 16},
    )
    assert pool.node_labels[PRODUCT_LABEL] == "NVIDIA-L4-SHARED"  # as GFD labels a shared card
    # still selects the pool
    assert switched.flavors["serve"].node_labels[PRODUCT_LABEL] == "NVIDIA-L4-SHARED"
    assert switched.cluster_queues["serve-q"].resource_groups[0].flavors[0].resources[0].nominal == 16


def test_a_shared_pool_switched_to_exclusive_rounds_jobs_up_to_cards_and_quotas_down():
    cluster = _cluster((_pool("notebooks", "time-sliced", time_slicing_replicas=4), "notebook", 15))
    [knob] = space.replica_knobs(cluster)
    jobs = _quarter_card_jobs("notebooks-q")
    shared, exclusive = (space.candidate_policy(cluster, [knob], {knob.name: value}) for value in (4, 1))
    assert exclusive.pools["notebooks"].sharing == "exclusive"
    started, _, held = _started_at_once(shared, jobs)
    assert (started, held) == (15, {MILLI // 4})  # 15 replicas of the notebooks queue
    started, _, held = _started_at_once(exclusive, jobs)
    assert (started, held) == (3, {MILLI})  # 15 replicas are 3 whole cards (rounded down: CAP001 holds)
    switched = space.with_params(cluster, [knob], {knob.name: 1})
    pool = switched.pools[0]
    assert (pool.access_mode, pool.sharing, pool.time_slicing_replicas, pool.capacity) == (
        "exclusive",
        "exclusive",
        None,
        {GPU: 4},
    )
    assert pool.node_labels[PRODUCT_LABEL] == "NVIDIA-L4"


def test_the_reference_shared_pool_switched_to_exclusive():
    cluster = load_fleet(REPO, ["prod-us"]).clusters["prod-us"]
    knob_list = space.knobs(cluster)
    switched = space.with_params(cluster, knob_list, {"us-l40s-shared/replicas": 1})
    pool = next(p for p in switched.pools if p.name == "us-l40s-shared")
    assert (pool.sharing, pool.capacity, pool.memory_share_percent) == ("exclusive", {GPU: 16}, 0)

    def nominal(queue: str) -> int:
        return next(
            q.nominal
            for g in switched.cluster_queues[queue].resource_groups
            for f in g.flavors
            if f.flavor == "us-l40s-shared"
            for q in f.resources
            if q.name == GPU
        )

    assert (nominal("research"), nominal("serving")) == (12, 4)  # 48 and 16 replicas of 4 per card
    policy = space.candidate_policy(cluster, knob_list, {"us-l40s-shared/replicas": 1})
    assert (policy.pools["us-l40s-shared"].sharing, policy.pools["us-l40s-shared"].replicas) == (
        "exclusive",
        1,
    )


# ---- --apply ----


def _validate(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "gpupolicy", "validate", "--repo", str(root)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )


def _switch(root: Path, cluster_name: str, pool_name: str, value: int, knob_list=None):
    cluster = load_fleet(root, [cluster_name]).clusters[cluster_name]
    return edits.edited_files(
        root, cluster_name, knob_list or space.knobs(cluster), {f"{pool_name}/replicas": value}
    )


def test_apply_switches_a_shared_pool_to_exclusive_and_back(tmp_path):
    root = edits.copy_repository(REPO, tmp_path)
    texts, errors = _switch(root, "prod-us", "us-l40s-shared", 1)
    assert errors == []
    assert set(texts) == {
        "pools/us-l40s-shared/pool.yaml",
        "pools/us-l40s-shared/device-plugin.yaml",
        "policies/startup-check/pools.conf",
        "clusters/prod-us/queues/research.yaml",
        "clusters/prod-us/queues/serving.yaml",
        "clusters/prod-us/team-quotas.yaml",
    }
    pool = texts["pools/us-l40s-shared/pool.yaml"]
    assert "Time-slicing" not in pool and "exposes nvidia.com/gpu =" not in pool  # no counts in comments
    assert pool.startswith(
        "# Pool us-l40s-shared: Exclusive L40S pool for notebooks, debugging and light inference.\n"
    )
    assert '  description: "Exclusive L40S pool for notebooks, debugging and light inference."\n' in pool
    assert (
        "  accessMode: exclusive\n  # The GPU startup check before a pod's containers start "
        "(policies/startup-check, "
        "decision 0051).\n  startupCheck:\n" in pool
    )
    assert "timeSlicing" not in pool and "-SHARED" not in pool
    assert (
        "    backoffSeconds: 5\n    # Another holder may have at most this share of a device's memory in "
        "use.\n"
        "    maxMemoryUsedPercent: 5\n  nodeLabels:\n" in pool
    )  # as the exclusive pools say it
    assert '    gpupolicy.io/pool: "us-l40s-shared"\n    nvidia.com/gpu.product: "NVIDIA-L40S"\n' in pool
    plugin = texts["pools/us-l40s-shared/device-plugin.yaml"]
    assert (
        plugin.endswith(
            "flags:\n  # Must match the ClusterPolicy mig.strategy "
            "(policies/gpu-operator/values.yaml).\n  migStrategy: mixed\n"
        )
        and "sharing" not in plugin.split("\n", 1)[1]
    )
    assert re.search(
        r"^  us-l40s-shared\s+exclusive\s+L40S\s+false\s+3\s+5\s+5\s+0$",
        texts["policies/startup-check/pools.conf"],
        re.M,
    )
    research = texts["clusters/prod-us/queues/research.yaml"]
    assert "#   us-l40s-shared (exclusive): gpu 12 of 16, borrow up to 4." in research
    assert "              nominalQuota: 12\n              borrowingLimit: 4\n" in research
    assert (
        "#   us-l40s-shared (exclusive): gpu 4 of 16, borrow up to 4, lend at most 4."
        in texts["clusters/prod-us/queues/serving.yaml"]
    )  # production's reserve: the same 4 cards
    # research: 48 + 16 replicas on the pool become 12 + 4 cards; its other flavors as the fleet has them
    before = (REPO / "clusters/prod-us/team-quotas.yaml").read_text()
    research_before = int(
        re.search(r'namespace: research\n(?:.*\n)*?\s+requests.nvidia.com/gpu: "(\d+)"', before)[1]
    )
    team = texts["clusters/prod-us/team-quotas.yaml"]
    assert f'requests.nvidia.com/gpu: "{research_before - 64 + 16}"' in team
    original = {rel: (root / rel).read_text() for rel in texts}
    edits.apply_to_repository(root, texts)
    docsgen.refresh(root)  # as `recommend --apply` does
    validate = _validate(root)
    assert validate.returncode == 0, validate.stdout + validate.stderr

    # now an exclusive inference pool: the switch goes 1 .. 4, and back to 4 replicas writes every file as it
    # was
    cluster = load_fleet(root, ["prod-us"]).clusters["prod-us"]
    assert _ranges(cluster)["us-l40s-shared"] == (1, 1, 4)
    back, errors = _switch(root, "prod-us", "us-l40s-shared", 4)
    assert errors == [] and back == original


def test_apply_refuses_to_time_slice_the_isolated_serving_pool(tmp_path):
    """eu-h100-serving is `isolated`, not exclusive: it gets no switch, and a hand-made knob is refused."""
    root = edits.copy_repository(REPO, tmp_path)
    knob = space.Knob("eu-h100-serving/replicas", "", space.REPLICAS, 1, 1, 4, pool="eu-h100-serving")
    with pytest.raises(
        ToolError,
        match=r"pool eu-h100-serving \(isolated, exclusive\): only exclusive and "
        "time-sliced pools",
    ):
        _switch(root, "prod-eu", "eu-h100-serving", 4, [knob])


def test_time_slicing_an_exclusive_h100_pool_is_refused_by_the_startup_check_table(tmp_path):
    """Were eu-h100-serving exclusive, the switch writes every file, and POOL005 rightly refuses it: the
    startup check finds a device's line by product word and MIG-or-not, and a time-sliced H100 looks like
    every other
    H100 of the fleet, all exclusive: the check could judge shared devices by an exclusive pool's line."""
    root = edits.copy_repository(REPO, tmp_path)
    pool_yaml = root / "pools/eu-h100-serving/pool.yaml"
    pool_yaml.write_text(pool_yaml.read_text().replace("accessMode: isolated", "accessMode: exclusive"))
    queue = root / "clusters/prod-eu/queues/serving.yaml"
    queue.write_text(queue.read_text().replace("eu-h100-serving (isolated)", "eu-h100-serving (exclusive)"))
    cluster = load_fleet(root, ["prod-eu"]).clusters["prod-eu"]
    assert _ranges(cluster)["eu-h100-serving"] == (1, 1, 4)  # an exclusive inference pool: offered the switch
    texts, errors = edits.edited_files(root, "prod-eu", space.knobs(cluster), {"eu-h100-serving/replicas": 4})
    assert {re.sub(r" pools/\S+: pools (\S+) and (\S+) both.*", r" \1 \2", e) for e in errors} == {
        f"POOL005 {a} {b}"
        for a, b in (
            ("eu-h100-serving", "test-h100"),
            ("test-h100", "eu-h100-serving"),
            ("us-h100-canary", "eu-h100-serving"),
            ("us-h100-serving", "eu-h100-serving"),
            ("us-h100-train", "eu-h100-serving"),
        )
    }
    assert (
        "but different startup-check settings or sharing (sharing exclusive (pool.yaml: time-sliced), "
        "sharePercent 0 (pool.yaml: 25))" in errors[0]
    )
    pool = texts["pools/eu-h100-serving/pool.yaml"]
    assert "Time-slicing:" not in pool and "exposes nvidia.com/gpu =" not in pool  # no counts in comments
    assert (
        "  accessMode: time-sliced\n  timeSlicing:\n    replicas: 4\n    renameByDefault: false\n  team: "
        "serving\n"
        "  # The GPU startup check before a pod's containers start (policies/startup-check, decision "
        "0051):\n"
        "  # a device passes while one replica's share (100 / replicas percent) of its memory is free.\n"
        "  startupCheck:\n" in pool
    )
    # the default; sharePercent judges
    assert "maxMemoryUsedPercent" not in pool and "Another holder" not in pool
    assert (
        "    # GFD appends -SHARED to the product when a GPU is time-sliced without renaming.\n"
        '    nvidia.com/gpu.product: "NVIDIA-H100-80GB-HBM3-SHARED"\n' in pool
    )
    plugin = texts["pools/eu-h100-serving/device-plugin.yaml"]
    assert plugin.endswith(
        "  migStrategy: mixed\nsharing:\n  timeSlicing:\n"
        "    # Keep the resource name nvidia.com/gpu so queues and quotas count "
        "replicas.\n    renameByDefault: false\n"
        "    # A pod asking for 2 replicas would get no more compute than 1: refuse it "
        "instead.\n    failRequestsGreaterThanOne: true\n    resources:\n      - name: nvidia.com/gpu\n"
        "        # Pods share each GPU in turns (memory is not isolated).\n"
        "        replicas: 4\n"
    )
    assert re.search(
        r"^  eu-h100-serving\s+time-sliced\s+H100\s+false\s+3\s+5\s+5\s+25$",
        texts["policies/startup-check/pools.conf"],
        re.M,
    )
    serving = texts["clusters/prod-eu/queues/serving.yaml"]
    assert "#   eu-h100-serving (time-sliced): gpu 128 of 192, borrow up to 64, lend at most 0." in serving
    assert (
        "              nominalQuota: 128\n              borrowingLimit: 64\n              lendingLimit: 0\n"
    ) in serving
    # reserve
    assert "              nominalQuota: 64\n" in texts["clusters/prod-eu/queues/cohort-production.yaml"]
    # serving's namespace quota grows by the pool's nominal + borrowing in replicas less the same in cards
    before = (REPO / "clusters/prod-eu/team-quotas.yaml").read_text()
    serving_before = int(
        re.search(r'namespace: serving\n(?:.*\n)*?\s+requests.nvidia.com/gpu: "(\d+)"', before)[1]
    )
    team = texts["clusters/prod-eu/team-quotas.yaml"]
    assert f'requests.nvidia.com/gpu: "{serving_before + (128 + 64) - 48}"' in team


def test_a_device_plugin_config_shared_by_two_pools_is_not_switched(tmp_path):
    cluster = load_fleet(REPO, ["prod-us"]).clusters["prod-us"]
    label = edits.DEVICE_PLUGIN_LABEL
    shared = next(p for p in cluster.pools if p.name == "us-l40s-shared")
    other = next(p for p in cluster.pools if p.name == "us-h100-canary")
    pools = [
        dataclasses.replace(other, node_labels={**other.node_labels, label: shared.node_labels[label]})
        if p is other
        else p
        for p in cluster.pools
    ]
    editor = edits.CandidateEditor(REPO)
    with pytest.raises(ToolError, match="also the config of us-h100-canary"):
        editor.set_replicas(
            None, dataclasses.replace(cluster, pools=pools, derived={}), "us-l40s-shared", 4, 1
        )


def test_a_flavor_that_selects_by_product_label_follows_the_switch(tmp_path):
    root = edits.copy_repository(REPO, tmp_path)
    flavor_file = root / "pools/us-l40s-shared/resourceflavor.yaml"
    flavor_file.write_text(
        flavor_file.read_text().replace(
            "  nodeLabels:\n    gpupolicy.io/pool: us-l40s-shared\n",
            '  nodeLabels:\n    gpupolicy.io/pool: us-l40s-shared\n    nvidia.com/gpu.product: '
            '"NVIDIA-L40S-SHARED"\n',
        )
    )
    assert edits.repository_errors(root) == set()
    texts, errors = _switch(root, "prod-us", "us-l40s-shared", 1)
    assert errors == []  # CAP003 would name a flavor that selects no pool
    assert (
        '    gpupolicy.io/pool: us-l40s-shared\n    nvidia.com/gpu.product: "NVIDIA-L40S"\n'
        in texts["pools/us-l40s-shared/resourceflavor.yaml"]
    )


def test_switching_one_of_two_l4_pools_is_refused_by_the_startup_check_table(tmp_path):
    """eu-l4-shared (prod-eu) and test-l4-shared (test-us) both time-slice L4 cards; pools.conf is the
    fleet's, and on the node the check finds a device's line by product word: made exclusive, one would be
    judged by the
    other's line. The search passes over such a candidate (the command tries the next one)."""
    root = edits.copy_repository(REPO, tmp_path)
    _, errors = _switch(root, "prod-eu", "eu-l4-shared", 1)
    assert errors == [
        "POOL005 pools/eu-l4-shared/pool.yaml: pools eu-l4-shared and test-l4-shared both have L4 GPUs but "
        "different startup-check settings or sharing (sharing time-sliced (pool.yaml: exclusive), "
        "sharePercent 25 (pool.yaml: 0)); on the node the check cannot tell them apart and may apply "
        "test-l4-shared's line to eu-l4-shared's devices",
        "POOL005 pools/test-l4-shared/pool.yaml: pools test-l4-shared and eu-l4-shared both have L4 GPUs but "
        "different startup-check settings or sharing (sharing exclusive (pool.yaml: time-sliced), "
        "sharePercent 0 (pool.yaml: 25)); on the node the check cannot tell them apart and may apply "
        "eu-l4-shared's line to test-l4-shared's devices",
    ]


def test_a_pool_whose_startup_check_line_another_pool_shares_gets_no_replica_knob():
    fleet = load_fleet(REPO)
    tied = sharing.tied_pools(fleet)
    # eu-l4-shared and test-l4-shared are both time-sliced L4: POOL005 refuses changing one alone
    assert {"eu-l4-shared", "test-l4-shared", "us-h100-serving", "eu-h100-serving"} <= tied
    assert "us-l40s-shared" not in tied  # the fleet's only L40S pool
    replica_pools = {
        c: [k.pool for k in space.knobs(cluster, fleet) if k.kind == space.REPLICAS]
        for c, cluster in fleet.clusters.items()
    }
    assert replica_pools == {"prod-eu": [], "prod-us": ["us-l40s-shared"], "test-us": []}
    # without the fleet the knob is offered, and the rule check is what refuses it (test above)
    assert "eu-l4-shared" in [
        k.pool for k in space.knobs(fleet.clusters["prod-eu"]) if k.kind == space.REPLICAS
    ]
