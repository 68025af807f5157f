"""The cpu and memory a GPU quota edit moves with it, in the old queue shape (cpu/memory on each GPU flavor) and
in decision 0069's (cpu/memory a resource group of their own on the `cpu` flavor)."""

from decimal import Decimal

from ruamel.yaml import YAML

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
    return space.Knob(f"team-x/pool-a/nvidia.com/gpu/{kind}", "team-x", kind, 0, flavor="pool-a",
                      resource="nvidia.com/gpu")


def _resources(spec, flavor):
    return {r["name"]: r for g in spec["resourceGroups"] for f in g["flavors"] if f["name"] == flavor
            for r in f["resources"]}


def test_the_old_shape_scales_the_flavors_own_cpu_and_memory(tmp_path):
    spec = _spec(OLD)
    edits.CandidateEditor(tmp_path)._set_limit(spec, _knob(space.NOMINAL), 5, None)
    quota = _resources(spec, "pool-a")
    assert (quota["nvidia.com/gpu"]["nominalQuota"], quota["cpu"]["nominalQuota"], quota["memory"]["nominalQuota"]) \
        == (5, 100, "1000Gi")  # 20 cpu + 200Gi per GPU, read from the flavor's own nominal quotas


def test_the_new_shape_moves_the_cpu_flavor_by_the_change_times_the_ratio(tmp_path):
    spec = _spec(NEW)
    ratio = {"cpu": Decimal(8), "memory": 64 * GI}
    editor = edits.CandidateEditor(tmp_path)
    editor._set_limit(spec, _knob(space.NOMINAL), 5, ratio)  # +3 devices
    cpu = _resources(spec, "cpu")
    assert (cpu["cpu"]["nominalQuota"], cpu["memory"]["nominalQuota"]) == (74, "692Gi")
    assert "cpu" not in _resources(spec, "pool-a")
    editor._set_limit(spec, _knob(space.BORROW), 6, ratio)  # the cpu flavor sets no borrowingLimit: unlimited stays
    assert "borrowingLimit" not in cpu["cpu"] and "borrowingLimit" not in cpu["memory"]
    editor._set_limit(spec, _knob(space.LEND), 0, ratio)  # -1 device lent: the limit it sets comes down with it
    assert cpu["memory"]["lendingLimit"] == "36Gi" and "lendingLimit" not in cpu["cpu"]
    editor._set_limit(spec, _knob(space.NOMINAL), 0, None)  # no ratio known: the GPUs alone change
    assert cpu["cpu"]["nominalQuota"] == 74 and _resources(spec, "pool-a")["nvidia.com/gpu"]["nominalQuota"] == 0


def test_the_header_states_the_ratio_per_device_profile_or_card():
    text = ("# team-x in c1: header\n"
            "#   pool-a (time-sliced): gpu 48 of 64, borrow up to 16. cpu/memory: 2 cpu + 16Gi per gpu.\n"
            "#   pool-m (mig): mig-1g.10gb 16 of 64; mig-2g.20gb 8 of 32. cpu/memory: 1 cpu + 12Gi per mig-1g.10gb; "
            "2.5 cpu + 24Gi per mig-2g.20gb.\n"
            "#   pool-n (mig): mig-1g.10gb 24 of 96. cpu/memory: 8 cpu + 96Gi per card's worth of slices.\n")
    assert cpu_share.stated_ratios(text, "pool-a") == {"nvidia.com/gpu": (Decimal(2), 16 * GI)}
    assert cpu_share.stated_ratios(text, "pool-m") == {"nvidia.com/mig-1g.10gb": (Decimal(1), 12 * GI),
                                                       "nvidia.com/mig-2g.20gb": (Decimal("2.5"), 24 * GI)}
    assert cpu_share.stated_ratios(text, "pool-n") == {cpu_share.CARD: (Decimal(8), 96 * GI)}
    assert cpu_share.stated_ratios(text, "pool-z") == {}
