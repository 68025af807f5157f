"""`gpupolicy diff` shows every change that reaches a cluster, in the units a reviewer thinks in (issue 14).

The cases come from the issue: a namespace ResourceQuota raised 48 -> 480 was reported as "no change"; a queue
label, a taint and an upgrade-plan edit did not appear; a memory quota read `+8.24634e+11 memory` after the
GPU rows' `+0`s. Each side is a pipeline run over a copy of a repository; `diff.compare` is what the command
prints.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest
from support import MINIREPO, copy_repo, fleet_repo

from gpupolicy import diff, pipeline
from gpupolicy.domain.quantity import human_amount, human_delta


def _compare(base: Path, head: Path) -> diff.SemanticDiff:
    old, new = pipeline.run(base), pipeline.run(head)
    return diff.compare(old.fleet, new.fleet, old.findings, new.findings, "base", "head", ())


def _edit(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _rows(result: diff.SemanticDiff, key: str) -> list[dict]:
    return json.loads(diff.to_json(result))["sections"].get(key, [])


@pytest.fixture
def mini(tmp_path: Path) -> tuple[Path, Path]:
    """Two copies of the minirepo: the base, and the head a test edits."""
    base, head = tmp_path / "base", tmp_path / "head"
    shutil.copytree(MINIREPO, base)
    shutil.copytree(MINIREPO, head)
    return base, head


# --- the combined change on the shipped fleet
# ----------------------------------------------------------

NLP = 48  # nlp's requests.nvidia.com/gpu in prod-eu as the tests' own fleet (tests/fixtures/fleet) has it


@pytest.fixture(scope="module")
def fleet_change(tmp_path_factory: pytest.TempPathFactory) -> diff.SemanticDiff:
    """nlp's prod-eu ResourceQuota x10, a taint and a node on eu-l4-shared, the canary stage's soak 7d ->
    10d."""
    base = fleet_repo()  # the tests' own rich fleet, the same on a fork (decision 0085)
    head = copy_repo(base, tmp_path_factory.mktemp("fleet") / "repo")
    _edit(
        head / "clusters/prod-eu/team-quotas.yaml",
        f'requests.nvidia.com/gpu: "{NLP}"',
        f'requests.nvidia.com/gpu: "{NLP * 10}"',
    )
    pool = head / "pools/eu-l4-shared/pool.yaml"
    _edit(pool, "    eu-west-1b: 1", "    eu-west-1b: 2")
    _edit(
        pool,
        "      effect: NoSchedule\n",
        "      effect: NoSchedule\n    - key: gpupolicy.io/dedicated\n      value: notebooks\n      "
        "effect: NoSchedule\n",
    )
    _edit(head / "policies/upgrades/driver-r580-to-r595.yaml", "minimumSoak: 7d", "minimumSoak: 10d")
    return _compare(base, head)


def test_a_namespace_resource_quota_change_is_shown(fleet_change: diff.SemanticDiff) -> None:
    assert _rows(fleet_change, "namespace-quotas") == [
        {
            "cluster": "prod-eu",
            "namespace": "nlp",
            "quota": "gpu",
            "resource": "requests.nvidia.com/gpu",
            "old": str(NLP),
            "new": str(NLP * 10),
            "delta": f"+{NLP * 9}",
        }
    ]
    headline = f"+{NLP * 9} nvidia.com/gpu for namespace nlp in prod-eu ({NLP} -> {NLP * 10})"
    assert headline in fleet_change.headline


def test_a_taint_an_upgrade_plan_and_a_pool_size_are_shown(fleet_change: diff.SemanticDiff) -> None:
    declared = {
        (row["pool"], row["field"]): (row["old"], row["new"])
        for row in _rows(fleet_change, "pool-declarations")
    }
    assert declared == {
        ("eu-l4-shared", "zones.eu-west-1b"): ("1", "2"),
        ("eu-l4-shared", "taints"): (
            "nvidia.com/gpu=present:NoSchedule",
            "gpupolicy.io/dedicated=notebooks:NoSchedule, nvidia.com/gpu=present:NoSchedule",
        ),
    }
    plan = {row["field"]: (row["old"], row["new"]) for row in _rows(fleet_change, "plans")}
    assert plan == {"spec.stages[canary].minimumSoak": ("7d", "10d")}
    assert [(r["pool"], r["old"], r["new"], r["delta"]) for r in _rows(fleet_change, "capacity")] == [
        ("eu-l4-shared", "64", "96", "+32")
    ]
    # the new taint is the riskiest change: it shuts out every workload that does not tolerate it
    assert fleet_change.headline.startswith(
        "new taint gpupolicy.io/dedicated=notebooks:NoSchedule on pool eu-l4-shared"
    )


def test_every_changed_rendered_object_is_listed_with_its_yaml_diff(fleet_change: diff.SemanticDiff) -> None:
    objects = {(c.cluster, c.ref): c for cluster in fleet_change.objects for c in cluster.changes}
    assert set(objects) == {("prod-eu", "ResourceQuota nlp/gpu")}
    quota = objects[("prod-eu", "ResourceQuota nlp/gpu")]
    assert quota.change == "changed"
    assert f"-    requests.nvidia.com/gpu: '{NLP}'" in quota.diff
    assert f"+    requests.nvidia.com/gpu: '{NLP * 10}'" in quota.diff
    assert not any("config.kubernetes.io/origin" in line for line in quota.diff)
    markdown = diff.to_markdown(fleet_change)
    assert "##### prod-eu: 0 added, 0 removed, 1 changed" in markdown
    assert "<details><summary>ResourceQuota nlp/gpu</summary>\n\n```diff\n--- base\n+++ head\n" in markdown


# --- units, zero rows and order
# --------------------------------------------------------------------------------

MEMORY_QUOTA = """\
    - coveredResources: [cpu, memory]
      flavors:
        - name: mini-a100
          resources:
            - name: cpu
              nominalQuota: 0
            - name: memory
              nominalQuota: 768Gi
"""


def test_quantities_read_in_human_units_with_gpu_rows_first_and_no_zero_rows(mini: tuple[Path, Path]) -> None:
    base, head = mini
    queues = head / "clusters/mini/queues.yaml"
    _edit(queues, "              nominalQuota: 16\n", "              nominalQuota: 8\n" + MEMORY_QUOTA)
    result = _compare(base, head)
    rows = [(r["resource"], r["old"], r["new"], r["delta"]) for r in _rows(result, "quotas")]
    # cpu 0 (absent before) is no change: no "+0" row
    assert rows == [("nvidia.com/gpu", "16", "8", "-8"), ("memory", "—", "768 GiB", "+768 GiB")]
    assert result.headline.startswith(
        "-8 A100 on mini-a100 for team alpha in mini (16 -> 8); +768 GiB memory on mini-a100 for team alpha"
    )
    assert "e+" not in result.headline


@pytest.mark.parametrize(
    ("resource", "amount", "shown"),
    [
        ("memory", 824633720832, "768 GiB"),
        ("requests.memory", "3Ti", "3 TiB"),
        ("memory", "1536Mi", "1.5 GiB"),
        ("cpu", "500m", "0.5 cores"),
        ("limits.cpu", 1, "1 core"),
        ("nvidia.com/gpu", "480", "480"),
        ("nvidia.com/mig-1g.10gb", 56, "56"),
        ("nvidia.com/gpu", 10**400, "1.000e+400"),
        ("memory", "x", "x"),
    ],
)
def test_human_amount(resource: str, amount: object, shown: str) -> None:
    assert human_amount(resource, amount) == shown


def test_human_delta() -> None:
    assert human_delta("memory", None, 824633720832) == "+768 GiB"
    assert human_delta("cpu", "2", "500m") == "-1.5 cores"
    assert human_delta("requests.nvidia.com/gpu", "48", "480") == "+432"
    assert human_delta("memory", "not a quantity", 1) == ""


# --- what the semantic part covers besides
# -------------------------------------------------------------------


def test_a_queue_label_and_a_limit_range_are_shown(mini: tuple[Path, Path]) -> None:
    base, head = mini
    _edit(
        head / "clusters/mini/queues.yaml",
        "    gpupolicy.io/tier: training\n",
        '    gpupolicy.io/tier: training\n    gpupolicy.io/allow-shared-gpus: "true"\n',
    )
    (head / "policies/base/team.yaml").write_text(
        (head / "policies/base/team.yaml").read_text()
        + """\
---
apiVersion: v1
kind: LimitRange
metadata:
  name: defaults
  namespace: alpha
spec:
  limits:
    - type: Container
      defaultRequest: {cpu: 500m, memory: 1Gi}
"""
    )
    result = _compare(base, head)
    assert _rows(result, "labels") == [
        {
            "cluster": "mini",
            "kind": "ClusterQueue",
            "object": "alpha",
            "label": "gpupolicy.io/allow-shared-gpus",
            "old": "—",
            "new": "true",
        }
    ]
    assert [(r["setting"], r["resource"], r["old"], r["new"]) for r in _rows(result, "limit-ranges")] == [
        ("defaultRequest", "cpu", "—", "0.5 cores"),
        ("defaultRequest", "memory", "—", "1 GiB"),
    ]
    changes = {(c.change, c.ref) for cluster in result.objects for c in cluster.changes}
    assert changes == {
        ("changed", "ClusterQueue.kueue.x-k8s.io alpha"),
        ("added", "LimitRange alpha/defaults"),
    }


def test_a_flavor_toleration_is_a_node_selection_change(mini: tuple[Path, Path]) -> None:
    base, head = mini
    flavor = head / "pools/mini-a100/flavor.yaml"
    flavor.write_text(
        flavor.read_text().rstrip("\n") + "\n  tolerations:\n    - {key: "
        "gpupolicy.io/dedicated, operator: Exists, effect: NoSchedule}\n"
    )
    rows = _rows(_compare(base, head), "placement")
    assert rows == [
        {
            "cluster": "mini",
            "kind": "ResourceFlavor",
            "object": "mini-a100",
            "field": "spec.tolerations",
            "old": "—",
            "new": "gpupolicy.io/dedicated exists:NoSchedule",
        }
    ]


def test_secret_values_never_reach_the_diff(mini: tuple[Path, Path]) -> None:
    base, head = mini
    secret = """\
---
apiVersion: v1
kind: Secret
metadata:
  name: pull
  namespace: alpha
stringData:
  token: {value}
"""
    (base / "policies/base/team.yaml").write_text(
        (base / "policies/base/team.yaml").read_text() + secret.format(value="old-value-1234")
    )
    (head / "policies/base/team.yaml").write_text(
        (head / "policies/base/team.yaml").read_text() + secret.format(value="new-value-5678")
    )
    result = _compare(base, head)
    [change] = [c for cluster in result.objects for c in cluster.changes]
    assert change.ref == "Secret alpha/pull" and change.change == "changed"
    text = diff.to_markdown(result) + diff.to_json(result)
    assert "old-value-1234" not in text and "new-value-5678" not in text
    assert any(line.startswith("+  token: <hidden, sha256 ") for line in change.diff)


def test_a_fence_outlasts_backticks_in_the_content() -> None:
    from gpupolicy.diff.objects import fence

    assert fence(["plain"]) == "```"
    assert fence(["+  note: ````` five"]) == "``````"


def test_markdown_shows_a_repeated_diff_once_and_keeps_to_its_budget(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpupolicy.diff.objects import ClusterObjects, ObjectChange

    lines = ("--- base", "+++ head", "@@ -1 +1 @@", "-value: 1", "+value: 2")
    same = [
        ClusterObjects(
            name, [ObjectChange(name, "PriorityClass.scheduling.k8s.io p", "changed", "p.yaml", lines)]
        )
        for name in ("a", "b")
    ]
    other = ClusterObjects("c", [ObjectChange("c", "ConfigMap x/big", "changed", "big.yaml", lines * 3)])
    monkeypatch.setattr(diff, "MARKDOWN_DIFF_BUDGET", 10)
    text = diff.to_markdown(diff.SemanticDiff("b", "h", [], diff.FindingsDiff(), "x", objects=[*same, other]))
    assert text.count("```diff") == 1
    assert "PriorityClass.scheduling.k8s.io p: the same diff as in a." in text
    assert "Diff of ConfigMap x/big left out (report size)" in text
    assert "| changed | ConfigMap x/big | `big.yaml` |" in text  # still listed
