"""The workload path under load (issue 33, defect 2): `trace(..., full=...)` fills flavors to the most a queue
may use of them and follows Kueue's walk to the next flavor (flavorassigner.go findFlavorForPodSets /
shouldTryNextFlavor). A pod set that then only waits is pending, not blocked; a CPU-only pod set moved on to a
GPU flavor is blocked. The fixture repositories are WL014's (tests/rules/WL014/): the same queue as one
resource
group (before decision 0069) and with cpu/memory in a group of their own (after)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from rules.test_rule_fixtures import build_fixture_repo

from gpupolicy import cli, pipeline, workpath
from gpupolicy.infra import yamlload
from gpupolicy.model import Fleet
from gpupolicy.rules import wl014_cluster_under_load as wl014

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
FIXTURES = HERE / "rules" / "WL014"
ONE_GROUP = FIXTURES / "bad" / "cpu-job-spills-under-load"
OWN_GROUP = FIXTURES / "good" / "cpu-memory-own-group"


def _fleet(fixture: Path, tmp_path: Path) -> tuple[Fleet, Path]:
    repo = build_fixture_repo(fixture, tmp_path / "repo")
    return pipeline.load_fleet(repo), repo


def _document(path: Path):
    return yamlload.parse_source(path.read_bytes(), str(path)).documents[0]


def _trace(
    fleet: Fleet,
    path: Path,
    cluster: str = "mini",
    full: frozenset[str] = frozenset(),
    body: dict | None = None,
) -> workpath.WorkloadPath:
    document = _document(path)
    return workpath.trace(
        fleet, fleet.clusters[cluster], body or document.data, workpath.example_locator(document), None, full
    )


def test_one_group_sends_the_cpu_job_to_the_gpu_flavor_when_cpu_is_full(tmp_path: Path) -> None:
    fleet, repo = _fleet(ONE_GROUP, tmp_path)
    empty = _trace(fleet, repo / "docs/examples/prep.yaml")
    assert workpath.misplaced(empty) == ("", None) and empty.pod_sets[0].flavors == {
        "cpu": "cpu",
        "memory": "cpu",
    }
    loaded = _trace(fleet, repo / "docs/examples/prep.yaml", full=frozenset({"cpu"}))
    problem, where = workpath.misplaced(loaded)
    assert "gives it GPU flavor mini-a100" in problem
    assert where.path == "clusters/mini/queues.yaml"


def test_own_group_leaves_the_cpu_job_waiting_when_cpu_is_full(tmp_path: Path) -> None:
    fleet, repo = _fleet(OWN_GROUP, tmp_path)
    loaded = _trace(fleet, repo / "docs/examples/prep.yaml", full=frozenset({"cpu"}))
    assert workpath.misplaced(loaded) == ("", None)
    (pod_set,) = loaded.pod_sets
    assert (pod_set.waits_for, pod_set.flavors, pod_set.pool) == (("cpu",), {}, "")
    assert pod_set.landing() == "waits for room in flavor cpu"
    step = pod_set.steps[-1]
    assert step.ok and step.text.startswith("waits:") and "no room left" in step.text


def test_gpu_pod_set_takes_cpu_from_the_cpu_flavor_and_gpus_from_the_pool(tmp_path: Path) -> None:
    """Two resource groups, two flavors: Kueue injects both flavors' nodeLabels and tolerations
    (pkg/podset/podset.go FromAssignment); the cpu flavor has none, so the pool's alone decide."""
    fleet, repo = _fleet(OWN_GROUP, tmp_path)
    body = _document(repo / "docs/examples/train.yaml").data
    container = body["spec"]["template"]["spec"]["containers"][0]
    container["resources"] = {
        "requests": {"cpu": "8", "memory": "64Gi"},
        "limits": {"memory": "64Gi", "nvidia.com/gpu": 1},
    }
    path = _trace(fleet, repo / "docs/examples/train.yaml", body=body)
    (pod_set,) = path.pod_sets
    assert pod_set.flavors == {"cpu": "cpu", "memory": "cpu", "nvidia.com/gpu": "mini-a100"}
    assert pod_set.pool == "mini-a100", path.summary()
    assert pod_set.spec["nodeSelector"] == {"gpupolicy.io/pool": "mini-a100"}
    assert [t["key"] for t in pod_set.spec["tolerations"]] == ["nvidia.com/gpu"]
    # The pool full: it waits for the pool; cpu full: it waits for cpu. Never another flavor.
    for full in ({"mini-a100"}, {"cpu"}):
        loaded = _trace(fleet, repo / "docs/examples/train.yaml", full=frozenset(full), body=body)
        assert loaded.pod_sets[0].waits_for == tuple(full), loaded.summary()
        assert workpath.misplaced(loaded) == ("", None)


def test_under_load_walks_every_flavor_the_workload_gets(tmp_path: Path) -> None:
    fleet, repo = _fleet(ONE_GROUP, tmp_path)
    document = _document(repo / "docs/examples/prep.yaml")
    found = wl014.under_load(fleet, fleet.clusters["mini"], document.data, workpath.example_locator(document))
    assert found is not None and found[0] == ("cpu",) and "GPU flavor mini-a100" in found[1]
    fleet, repo = _fleet(OWN_GROUP, tmp_path / "after")
    document = _document(repo / "docs/examples/prep.yaml")
    assert (
        wl014.under_load(fleet, fleet.clusters["mini"], document.data, workpath.example_locator(document))
        is None
    )


def test_explain_full_says_the_workload_waits(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    _fleet_unused, repo = _fleet(OWN_GROUP, tmp_path)
    code = cli.main(
        [
            "explain",
            str(repo / "docs/examples/prep.yaml"),
            "--full",
            "cpu",
            "--format",
            "json",
            "--repo",
            str(repo),
        ]
    )
    (traced,) = json.loads(capsys.readouterr().out)
    assert code == 0 and traced["lands"] and traced["podSets"][0]["waitsFor"] == ["cpu"]
    _fleet_unused, before = _fleet(ONE_GROUP, tmp_path / "before")
    assert (
        cli.main(["explain", str(before / "docs/examples/prep.yaml"), "--full", "cpu", "--repo", str(before)])
        == 1
    )
    assert "gives it GPU flavor mini-a100" in capsys.readouterr().out


# --- the reference fleet (explicitly about it: decision 0069 fixed its queues)
# --------------------------------


@pytest.fixture(scope="module")
def reference() -> Fleet:
    return pipeline.load_fleet(REPO)


def test_reference_cpu_only_job_waits_when_the_cpu_flavor_is_full(reference: Fleet) -> None:
    for cluster in reference.clusters:
        path = _trace(reference, REPO / "docs/examples/cpu-only-job.yaml", cluster, frozenset({"cpu"}))
        assert workpath.misplaced(path) == ("", None), (cluster, path.summary())
        assert path.pod_sets[0].waits_for == ("cpu",), (cluster, path.summary())


# --- findings where the user must act (issue 33): the workload's line, the queue as related location
# ----------


def _with_example(fixture: Path, tmp_path: Path, text: str) -> Path:
    repo = build_fixture_repo(fixture, tmp_path / "repo")
    (repo / "docs/examples/asks.yaml").write_text(text)
    return repo


ASKS = """apiVersion: batch/v1
kind: Job
metadata:
  name: asks
  namespace: alpha
  labels:
    kueue.x-k8s.io/queue-name: {queue}
spec:
  suspend: true
  template:
    metadata:
      labels:
        kueue.x-k8s.io/queue-name: {queue}
    spec:
      restartPolicy: Never
      containers:
        - name: main
          image: registry.example/app:1
          resources:
            limits: {{{resource}: 1}}
"""


@pytest.mark.parametrize(
    ("queue", "resource", "related", "says"),
    [
        (
            "training",
            "nvidia.com/mig-9g.99gb",
            "clusters/mini/queues.yaml",
            "is not covered by ClusterQueue alpha",
        ),
        ("no-such-queue", "nvidia.com/gpu", None, "LocalQueue alpha/no-such-queue does not exist"),
    ],
    ids=["unknown-mig-profile", "missing-local-queue"],
)
def test_a_workload_error_is_reported_at_the_workload(
    tmp_path: Path, queue: str, resource: str, related: str | None, says: str
) -> None:
    from gpupolicy.report.formats import as_sarif

    repo = _with_example(OWN_GROUP, tmp_path, ASKS.format(queue=queue, resource=resource))
    result = pipeline.run(repo)
    (finding,) = [f for f in result.findings if f.rule == "WL011" and "asks.yaml" in f.message]
    assert finding.path == "docs/examples/asks.yaml" and finding.line > 0 and says in finding.message, finding
    assert "none" not in finding.message.split()
    assert [r.path for r in finding.related] == ([related] if related else [])
    (sarif,) = [
        r
        for r in json.loads(as_sarif(result, str(repo)))["runs"][0]["results"]
        if r["ruleId"] == "WL011" and "asks.yaml" in r["message"]["text"]
    ]
    assert sarif["locations"][0]["physicalLocation"]["artifactLocation"]["uri"] == "docs/examples/asks.yaml"
    shown = [r["physicalLocation"]["artifactLocation"]["uri"] for r in sarif.get("relatedLocations", [])]
    assert shown == ([related] if related else [])


def _jobset() -> dict:
    def replicated(name: str, replicas: int, resources: dict) -> dict:
        container = {"name": name, "image": "registry.example/train:1", "resources": resources}
        return {
            "name": name,
            "replicas": replicas,
            "template": {
                "spec": {
                    "template": {
                        "metadata": {"labels": {"kueue.x-k8s.io/queue-name": "training"}},
                        "spec": {"restartPolicy": "Never", "containers": [container]},
                    }
                }
            },
        }

    return {
        "apiVersion": "jobset.x-k8s.io/v1alpha2",
        "kind": "JobSet",
        "metadata": {
            "name": "dist",
            "namespace": "alpha",
            "labels": {"kueue.x-k8s.io/queue-name": "training"},
        },
        "spec": {
            "suspend": True,
            "replicatedJobs": [
                replicated(
                    "launcher", 1, {"requests": {"cpu": "2", "memory": "8Gi"}, "limits": {"memory": "8Gi"}}
                ),
                replicated(
                    "workers",
                    2,
                    {
                        "requests": {"cpu": "8", "memory": "64Gi"},
                        "limits": {"memory": "64Gi", "nvidia.com/gpu": 4},
                    },
                ),
            ],
        },
    }


def test_launcher_waits_for_cpu_and_workers_take_the_pool_under_load(tmp_path: Path) -> None:
    """A JobSet's CPU launcher and GPU workers (moved here from the reference-fleet tests): in an empty
    cluster the launcher runs on CPU nodes, the workers on the pool with cpu/memory from the cpu flavor; with
    cpu full
    both pod sets wait (they share the cpu flavor), none is moved to the GPU flavor."""
    fleet, repo = _fleet(OWN_GROUP, tmp_path)
    path = _trace(fleet, repo / "docs/examples/prep.yaml", body=_jobset())
    launcher, workers = path.pod_sets
    assert (launcher.name, launcher.count, set(launcher.flavors.values()), launcher.pool) == (
        "launcher",
        1,
        {"cpu"},
        "",
    )
    assert (workers.name, workers.count, workers.pool) == ("workers", 2, "mini-a100")
    assert workers.flavors == {"cpu": "cpu", "memory": "cpu", "nvidia.com/gpu": "mini-a100"}
    loaded = _trace(fleet, repo / "docs/examples/prep.yaml", full=frozenset({"cpu"}), body=_jobset())
    assert workpath.misplaced(loaded) == ("", None)
    assert [p.waits_for for p in loaded.pod_sets] == [("cpu",), ("cpu",)], loaded.summary()
