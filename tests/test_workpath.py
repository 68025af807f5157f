"""The workload-path model and `gpupolicy explain` on the reference fleet: every example lands, CPU-only pod
sets land on the CPU flavor with no GPU toleration, a pod too big for any node is blocked at node fit. Defect
4 of issue 12 (CPU-only pod sets given a GPU flavor) reintroduced is WL012's bad fixture; the same under load
(issue 33,
defect 2) is test_workpath_load.py and WL014's fixtures."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from support import copy_repo, fleet_repo

from gpupolicy import cli, pipeline, workpath
from gpupolicy.domain.startupcheck import with_check
from gpupolicy.infra import yamlload
from gpupolicy.model import Fleet
from gpupolicy.workpath import matrix

HERE = Path(__file__).resolve().parent
# The tests' own rich fleet (tests/fixtures/fleet), not whatever fleet this repository holds (decision 0085).
REPO = fleet_repo()
EXAMPLES = sorted((REPO / "docs" / "examples").glob("*.yaml"))
GPU_TAINT_KEYS = ("nvidia.com/gpu", "gpupolicy.io/dedicated")


@pytest.fixture(scope="module")
def fleet() -> Fleet:
    return pipeline.load_fleet(REPO)


def _trace(fleet: Fleet, path: Path, cluster: str, namespace: str | None = None) -> workpath.WorkloadPath:
    loaded = yamlload.parse_source(path.read_bytes(), str(path))
    return workpath.trace(
        fleet,
        fleet.clusters[cluster],
        loaded.documents[0].data,
        workpath.example_locator(loaded.documents[0]),
        namespace,
    )


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: p.name)
def test_every_example_lands_on_every_cluster(fleet: Fleet, example: Path) -> None:
    for cluster in fleet.clusters:
        path = _trace(fleet, example, cluster)
        assert workpath.misplaced(path) == ("", None), (cluster, path.summary())
        assert all(p.pool or not p.wants_gpu for p in path.pod_sets), path.summary()


def test_cpu_only_job_lands_on_the_cpu_flavor_without_gpu_toleration(fleet: Fleet) -> None:
    for cluster in fleet.clusters:
        path = _trace(fleet, REPO / "docs/examples/cpu-only-job.yaml", cluster)
        (pod_set,) = path.pod_sets
        assert set(pod_set.flavors.values()) == {"cpu"}, pod_set.flavors
        assert pod_set.pool == "" and not pod_set.stray_pools
        assert not [t for t in pod_set.spec.get("tolerations", []) if t.get("key") in GPU_TAINT_KEYS]
        assert "gpupolicy.io/pool" not in pod_set.spec.get("nodeSelector", {})


def test_init_container_asking_more_gpus_than_a_node_has_is_blocked_at_node_fit(
    fleet: Fleet, tmp_path: Path
) -> None:
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {
            "name": "big-init",
            "namespace": "nlp",
            "labels": {"kueue.x-k8s.io/queue-name": "training"},
        },
        "spec": {
            "initContainers": [
                {"name": "warmup", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 16}}}
            ],
            "containers": [{"name": "main", "image": "x", "resources": {"limits": {"nvidia.com/gpu": 8}}}],
        },
    }
    # a team GPU pod carries the startup check (else refused at admission)
    pod["spec"] = with_check(pod["spec"])
    manifest = tmp_path / "pod.yaml"
    manifest.write_text(yaml.safe_dump(pod))
    path = _trace(fleet, manifest, "prod-us")
    blocked = path.blocked
    assert blocked is not None and blocked.stage == "node fit"
    assert "requests 16 nvidia.com/gpu, a node has 8" in blocked.text
    assert path.pod_sets[0].requests["nvidia.com/gpu"] == 16  # max(init 16, containers 8)


def test_limitrange_default_below_a_request_blocks_at_defaulting(fleet: Fleet, tmp_path: Path) -> None:
    """Decision 0030: a default limit below an explicit request makes the API server refuse the pod."""
    repo = copy_repo(REPO, tmp_path / "repo")
    limit_range = repo / "policies/teams/nlp/limitrange.yaml"
    limit_range.write_text(
        limit_range.read_text().replace(
            "      defaultRequest:\n", "      default:\n        cpu: \"2\"\n      defaultRequest:\n"
        )
    )
    findings = [f for f in pipeline.run(repo).findings if f.rule == "WL011"]
    assert findings and all(f.path == "policies/teams/nlp/limitrange.yaml" for f in findings), findings
    assert "requests 96 cpu, above its limit 2" in findings[0].message


def test_a_mig_layout_missing_from_the_config_is_blamed_on_the_pool_not_the_pods(tmp_path: Path) -> None:
    """A typo in spec.mig.layout leaves the pool exposing nothing: every finding points at that line, and the
    drain check does not report a capacity shortfall with a hint about CAP findings that cannot exist."""
    repo = copy_repo(REPO, tmp_path / "repo")
    pool = repo / "pools/eu-a100-mig-balanced/pool.yaml"
    text = pool.read_text()
    pool.write_text(text.replace("layout: all-balanced", "layout: all-balanced-typo"))
    line = text[: text.index("layout: all-balanced")].count("\n") + 1
    findings = [f for f in pipeline.run(repo).findings if f.severity.name == "ERROR"]
    by_rule = {f.rule for f in findings}
    assert {"MIG004", "WL011", "WL012"} <= by_rule and "UPG008" not in by_rule, findings
    for finding in (f for f in findings if f.rule in ("WL011", "WL012")):
        assert (finding.path, finding.line) == ("pools/eu-a100-mig-balanced/pool.yaml", line), finding
        assert "its MIG layout all-balanced-typo is not in the cluster's mig-parted config" in finding.message


def test_matrix_has_every_team_workload_and_cluster(fleet: Fleet) -> None:
    cases = matrix.cases(fleet)
    teams = {(c.cluster, c.team) for c in cases}
    assert len(cases) == len(teams) * len(matrix.KINDS) == 3 * 4 * 6
    assert not [c for c in cases if c.problem], [c.problem for c in cases if c.problem]
    not_offered = {(c.team, c.kind) for c in cases if c.path is None}
    assert not_offered == {("nlp", "MIG inference Deployment")}


def _explain(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str, str]:
    code = cli.main(["explain", *args, "--repo", str(REPO)])
    out = capsys.readouterr()
    return code, out.out, out.err


def test_explain_prints_each_step_with_its_source(capsys: pytest.CaptureFixture) -> None:
    code, out, _ = _explain(capsys, str(REPO / "docs/examples/training-job.yaml"), "--cluster", "prod-us")
    assert code == 0
    assert out.startswith("Job nlp/llm-pretrain-step1 on prod-us: lands: main x1 -> pool us-h100-train")
    for stage in (
        "admission",
        "defaulting",
        "namespace quota",
        "queue",
        "flavor assignment",
        "node fit",
        "GPU Operator",
        "runtime",
    ):
        assert f" {stage}: " in out, stage
    assert "[policies/teams/nlp/localqueues.yaml:8]" in out


def test_explain_json_and_blocked_exit_code(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    job = yaml.safe_load((REPO / "docs/examples/training-job.yaml").read_text())
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "no-such-queue"
    manifest.write_text(yaml.safe_dump(job))
    code, out, _ = _explain(capsys, str(manifest), "--cluster", "test-us", "--format", "json")
    assert code == 1
    (report,) = json.loads(out)
    assert report["lands"] is False and report["problem"].startswith(
        "blocked at queue: LocalQueue nlp/no-such-queue"
    )
    assert report["change"]["path"] == str(manifest)


def test_explain_says_the_workload_changes_when_a_policy_denies_it(
    capsys: pytest.CaptureFixture, tmp_path: Path
) -> None:
    manifest = tmp_path / "job.yaml"
    job = yaml.safe_load((REPO / "docs/examples/training-job.yaml").read_text())
    job["spec"]["template"]["spec"].pop("initContainers")  # the GPU startup check
    manifest.write_text(yaml.safe_dump(job))
    code, out, _ = _explain(capsys, str(manifest), "--cluster", "prod-us")
    assert code == 1
    assert "BLOCKED admission: the workload is denied by gpu-jobs-require-startup-check" in out
    last = out.rstrip().splitlines()[-1]
    assert last.startswith(
        "  -> change the workload as the policy's message says "
        "(the rule: policies/admission/gpu-startup-check.yaml:"
    ), last


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("kind: ConfigMap\napiVersion: v1\nmetadata: {name: x}\n", "no workload in it"),
        ("a: [1, 2\n", "YAML001"),
    ],
)
def test_explain_refuses_unusable_input_with_exit_2(
    capsys: pytest.CaptureFixture, tmp_path: Path, content: str, message: str
) -> None:
    manifest = tmp_path / "bad.yaml"
    manifest.write_text(content)
    code, out, err = _explain(capsys, str(manifest))
    assert (code, out) == (2, "")
    assert message in err and "Traceback" not in err


def test_explain_missing_file(capsys: pytest.CaptureFixture, tmp_path: Path) -> None:
    code, _, err = _explain(capsys, str(tmp_path / "nope.yaml"))
    assert code == 2 and "nope.yaml: cannot read" in err


def test_a_workload_without_pod_templates_is_never_reported_as_landing(fleet: Fleet, tmp_path: Path) -> None:
    manifest = tmp_path / "job.yaml"
    manifest.write_text(
        yaml.safe_dump(
            {
                "apiVersion": "leaderworkerset.x-k8s.io/v1",
                "kind": "LeaderWorkerSet",
                "metadata": {"name": "empty", "namespace": "nlp"},
                "spec": {},
            }
        )
    )
    problem, _where = workpath.misplaced(_trace(fleet, manifest, "prod-us"))
    assert problem.startswith("blocked at pod sets: no pod template")


def test_a_time_sliced_product_label_without_shared_suffix_is_blocked_at_node_fit(fleet: Fleet) -> None:
    """GPU feature discovery labels time-sliced cards NVIDIA-L40S-SHARED; selecting NVIDIA-L40S finds no
    node."""
    loaded = yamlload.parse_source(
        (REPO / "docs/examples/notebook-statefulset.yaml").read_bytes(),
        "docs/examples/notebook-statefulset.yaml",
    )
    body = loaded.documents[0].data
    body["spec"]["template"]["spec"]["nodeSelector"] = {"nvidia.com/gpu.product": "NVIDIA-L40S"}
    path = workpath.trace(
        fleet, fleet.clusters["prod-us"], body, workpath.example_locator(loaded.documents[0])
    )
    blocked = path.blocked
    assert blocked.stage == "node fit" and "no pool's nodes carry the labels" in blocked.text
    assert "nvidia.com/gpu.product=NVIDIA-L40S" in blocked.text
    assert blocked.where.path == "docs/examples/notebook-statefulset.yaml"


WRONG_SHAPES = [
    None,
    0,
    -1,
    10**30,
    "x",
    [],
    {},
    [1],
    {"a": 1},
    True,
    1.5,
    "1e400",
    "-3",
    [None],
    [{}],
    "9Ei",
]


def _field_paths(data, prefix=()):
    yield prefix
    items = data.items() if isinstance(data, dict) else enumerate(data) if isinstance(data, list) else ()
    for key, value in items:
        yield from _field_paths(value, (*prefix, key))


def test_trace_never_crashes_on_wrongly_shaped_manifests(fleet: Fleet) -> None:
    """Examples are unreviewed content: any field of any shape gives a path (maybe blocked), never an
    exception."""
    import copy
    import random

    rng = random.Random(11)
    bodies = [
        yamlload.parse_source(p.read_bytes(), p.name).documents[0].data
        for p in [*EXAMPLES, HERE / "workpath" / "distributed-jobset.yaml"]
    ]
    clusters = list(fleet.clusters.values())
    for _ in range(400):
        body = copy.deepcopy(rng.choice(bodies))
        for _ in range(rng.randint(1, 4)):
            target = rng.choice([p for p in _field_paths(body) if p])
            parent = body
            for key in target[:-1]:
                parent = parent[key]
            parent[target[-1]] = copy.deepcopy(rng.choice(WRONG_SHAPES))
        path = workpath.trace(fleet, rng.choice(clusters), body, lambda _field: None)
        workpath.misplaced(path)
        path.summary()


def test_a_deployment_counts_every_replica_against_the_namespace_quota(fleet: Fleet) -> None:
    """Each replica is its own Kueue workload, but the namespace ResourceQuota sees all their pods at once."""
    loaded = yamlload.parse_source(
        (REPO / "docs/examples/inference-deployment-mig.yaml").read_bytes(), "x.yaml"
    )
    body = loaded.documents[0].data
    # serving may hold 168 mig-1g.10gb in prod-us (clusters/prod-us/team-quotas.yaml)
    body["spec"]["replicas"] = 200
    path = workpath.trace(
        fleet, fleet.clusters["prod-us"], body, workpath.example_locator(loaded.documents[0])
    )
    blocked = path.blocked
    assert blocked.stage == "namespace quota" and "request 200" in blocked.text, blocked.text
    assert path.pod_sets[0].count == 1 and path.pod_sets[0].workloads == 200


def test_startup_check_is_a_step_with_the_pools_settings(fleet: Fleet) -> None:
    path = _trace(fleet, REPO / "docs/examples/training-job.yaml", "prod-us")
    step = path.pod_sets[0].steps[-1]
    assert step.stage == "startup check" and step.ok
    assert "given 8 nvidia.com/gpu" in step.text and "pool us-h100-train: at most 5%" in step.text
    assert step.where.path == "pools/us-h100-train/pool.yaml"


def test_example_without_the_startup_check_is_refused_at_admission(fleet: Fleet, tmp_path: Path) -> None:
    job = yaml.safe_load((REPO / "docs/examples/training-job.yaml").read_text())
    spec = job["spec"]["template"]["spec"]
    del spec["initContainers"], spec["volumes"]
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job))
    for cluster in ("prod-eu", "prod-us", "test-us"):
        blocked = _trace(fleet, manifest, cluster).blocked
        # The Job itself is refused, before Kueue would reserve quota for pods that could never be created.
        assert blocked.stage == "admission" and blocked.text.startswith(
            "the workload is denied by gpu-jobs-require-startup-check: every GPU pod template of this job"
        )
        assert blocked.where.path == "policies/admission/gpu-startup-check.yaml"


@pytest.mark.parametrize(
    "resource, value, why",
    [
        ("nvidia.com/gpu", -8, "must be greater than or equal to 0"),
        ("nvidia.com/gpu", "500m", "must be an integer (a device cannot be split)"),
        ("nvidia.com/gpu", 0.5, "must be an integer (a device cannot be split)"),
        ("nvidia.com/gpu", "eight", "is not a quantity"),
        ("cpu", "-1", "must be greater than or equal to 0"),
    ],
)
def test_a_quantity_the_api_server_refuses_blocks_before_admission(
    fleet: Fleet, tmp_path: Path, resource: str, value: object, why: str
) -> None:
    """kubernetes pkg/apis/core/validation/validation.go ValidateResourceQuantityValue: the Job is refused as
    an object, before any admission policy (whose expressions would read the bad value) sees it."""
    job = yaml.safe_load((REPO / "docs/examples/training-job.yaml").read_text())
    trainer = job["spec"]["template"]["spec"]["containers"][0]
    trainer["resources"]["limits"][resource] = value
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job, sort_keys=False))
    traced = _trace(fleet, manifest, "prod-us")
    blocked = traced.blocked
    assert blocked.stage == "validation" and [s.stage for s in traced.steps] == ["validation"]
    name = trainer["name"]
    assert (
        blocked.text == f"the API server refuses the Job: container {name}'s limits {resource} {value}: {why}"
    )
    lines = manifest.read_text().splitlines()
    assert blocked.where.path == str(manifest)
    located = lines[blocked.where.line - 1].strip()  # the trainer's limit, not the startup check's request
    assert located.split(":")[0] == resource and str(value) in located.replace("'", "")
    trainer_line = next(n for n, text in enumerate(lines, 1) if text.strip() == f"- name: {name}")
    assert blocked.where.line > trainer_line  # in the trainer's block, after the startup check's


def test_a_fractional_cpu_is_no_refusal(fleet: Fleet, tmp_path: Path) -> None:
    job = yaml.safe_load((REPO / "docs/examples/training-job.yaml").read_text())
    job["spec"]["template"]["spec"]["containers"][0]["resources"]["requests"]["cpu"] = "500m"
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job, sort_keys=False))
    assert all(step.stage != "validation" for step in _trace(fleet, manifest, "prod-us").steps)


def test_time_sliced_pool_checks_its_share(fleet: Fleet) -> None:
    path = _trace(fleet, REPO / "docs/examples/notebook-statefulset.yaml", "prod-us")
    pool = path.pod_sets[0].pool
    assert fleet.pools[pool].sharing == "time-sliced"
    assert "one replica's share (25% of the card's memory) must be free" in path.pod_sets[0].steps[-1].text


def test_a_jobsets_child_jobs_go_through_admission(fleet: Fleet) -> None:
    path = _trace(fleet, HERE / "workpath" / "distributed-jobset.yaml", "prod-us")
    children = [s for s in path.steps if s.stage == "admission" and s.text.startswith("child Job ")]
    assert [s.ok for s in children] == [True, True], path.summary()
    assert "jobset-controller-manager" in children[0].text


def test_a_policy_refusing_the_child_jobs_blocks_the_jobset(tmp_path: Path) -> None:
    """The JobSet passes, its child Jobs (no queue label, constructJob) do not: blocked at the child Job."""
    repo = copy_repo(REPO, tmp_path / "repo")
    policy = repo / "policies" / "admission" / "gpu-jobs.yaml"
    policy.write_text(
        policy.read_text().replace(
            "!variables.namesGpu || variables.jobSetChild ||", "!variables.namesGpu ||"
        )
    )
    fleet = pipeline.load_fleet(repo)
    blocked = _trace(fleet, HERE / "workpath" / "distributed-jobset.yaml", "prod-us").blocked
    assert blocked is not None and blocked.stage == "admission", blocked
    assert blocked.text.startswith("child Job ") and "gpu-jobs-require-queue" in blocked.text
    assert (
        "no pod is ever created" in blocked.text and blocked.where.path == "policies/admission/gpu-jobs.yaml"
    )


def _limit_range(default_request_cpu: str) -> list:
    from gpupolicy.model import K8sObject

    body = {
        "apiVersion": "v1",
        "kind": "LimitRange",
        "metadata": {"name": "defaults", "namespace": "t"},
        "spec": {"limits": [{"type": "Container", "defaultRequest": {"cpu": default_request_cpu}}]},
    }
    return [K8sObject("v1", "LimitRange", "defaults", "t", body, "lr.yaml")]


def test_a_pod_with_only_a_cpu_limit_is_defaulted_in_the_api_servers_order() -> None:
    """SetDefaults_Pod (kubernetes pkg/apis/core/v1/defaults.go) copies the limit into the missing request at
    decode, before LimitRanger: a defaultRequest above the limit does not apply (issue 33, defect 5)."""
    from gpupolicy.workpath import pods

    spec = {"containers": [{"name": "c", "image": "i", "resources": {"limits": {"cpu": "250m"}}}]}
    ranges = _limit_range("500m")
    stored, _written, refusals = pods.default_pod_spec(spec, ranges, order=pods.API_SERVER_ORDER)
    assert refusals == [] and stored["containers"][0]["resources"]["requests"] == {"cpu": "250m"}
    _stored, _written, refusals = pods.default_pod_spec(spec, ranges, order=pods.KUEUE_ORDER)
    assert [r.message for r in refusals] and refusals[0].message.startswith("container c requests 500m cpu")


def test_explain_defaults_a_pod_as_the_api_server_and_a_job_template_as_kueue(tmp_path: Path) -> None:
    """A LimitRange defaultRequest of 500m cpu and a container with only `limits: {cpu: 250m}`: the Pod is
    admitted (SetDefaults_Pod first); the Job is refused by Kueue, and explain says it is Kueue."""
    repo = copy_repo(REPO, tmp_path / "repo")
    fleet = pipeline.load_fleet(repo)
    cluster = fleet.clusters["prod-us"]
    namespace = sorted(cluster.namespaces)[0]
    ranges = _limit_range("500m")
    cluster.objects.append(
        ranges[0].__class__(
            "v1",
            "LimitRange",
            "defaults",
            namespace,
            {**ranges[0].body, "metadata": {"name": "defaults", "namespace": namespace}},
            "lr.yaml",
        )
    )
    container = {"name": "c", "image": "i", "resources": {"limits": {"cpu": "250m"}}}
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p", "namespace": namespace},
        "spec": {"containers": [container]},
    }
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j", "namespace": namespace},
        "spec": {"template": {"spec": {"containers": [container], "restartPolicy": "Never"}}},
    }
    pod_steps = workpath.trace(fleet, cluster, pod, lambda _path: None).pod_sets[0].steps
    assert pod_steps[0].stage == "defaulting" and pod_steps[0].ok, pod_steps[0]
    job_steps = workpath.trace(fleet, cluster, job, lambda _path: None).pod_sets[0].steps
    assert not job_steps[0].ok and job_steps[0].text.startswith("Kueue marks the workload inadmissible")


def test_explain_refuses_an_unknown_full_flavor(capsys: pytest.CaptureFixture) -> None:
    code = cli.main(
        [
            "explain",
            str(REPO / "docs/examples/cpu-only-job.yaml"),
            "--full",
            "no-such-flavor",
            "--repo",
            str(REPO),
        ]
    )
    assert code == 2 and "no ResourceFlavor named no-such-flavor" in capsys.readouterr().err


def test_explain_lists_every_admission_blocker_at_once(fleet: Fleet, tmp_path: Path) -> None:
    """Missing queue label AND missing startup check: both denials are steps, not only the first."""
    job = yaml.safe_load((REPO / "docs/examples/training-job.yaml").read_text())
    spec = job["spec"]["template"]["spec"]
    del spec["initContainers"], spec["volumes"]
    job["metadata"].pop("labels", None)
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job))
    path = _trace(fleet, manifest, "prod-us")
    denied = {s.text.split(":")[0] for s in path.steps if s.stage == "admission" and not s.ok}
    assert {
        "the workload is denied by gpu-jobs-require-queue",
        "the workload is denied by gpu-jobs-require-startup-check",
    } <= denied, path.summary()


def test_a_missing_local_queue_names_the_ones_the_namespace_has(fleet: Fleet, tmp_path: Path) -> None:
    job = yaml.safe_load((REPO / "docs/examples/cpu-only-job.yaml").read_text())
    job["metadata"]["labels"]["kueue.x-k8s.io/queue-name"] = "no-such-queue"
    manifest = tmp_path / "job.yaml"
    manifest.write_text(yaml.safe_dump(job))
    cluster = fleet.clusters["prod-us"]
    blocked = _trace(fleet, manifest, "prod-us").blocked
    namespace = job["metadata"]["namespace"]
    have = sorted(q.name for q in cluster.local_queues if q.namespace == namespace)
    assert blocked is not None and blocked.stage == "queue", blocked
    assert have and f"namespace {namespace} has LocalQueues {', '.join(have)}" in blocked.text


def test_a_team_without_local_queue_is_reported_at_its_namespace_not_a_made_up_queue(tmp_path: Path) -> None:
    fleet = pipeline.load_fleet(copy_repo(REPO, tmp_path / "repo"))
    cluster = fleet.clusters["prod-us"]
    namespace = next(n for n in cluster.namespaces.values() if n.team)
    cluster.local_queues[:] = [q for q in cluster.local_queues if q.namespace != namespace.name]
    case = matrix._case(fleet, cluster, namespace, "CPU-only Job")
    assert case.problem and "none" not in case.problem and "has no LocalQueue" in case.problem, case
    assert case.where is not None and case.where.path == namespace.obj.origin


def test_every_kind_the_workload_path_maps_is_an_integration_kueue_has():
    """workpath.kueue.FRAMEWORKS names integrations; WL015 refuses a name Kueue does not register, so a
    workload kind mapped to such a name could never be managed."""
    from gpupolicy.domain.kueue_configuration import BUILT_IN_FRAMEWORKS
    from gpupolicy.workpath.kueue import DEFAULT_FRAMEWORKS, FRAMEWORKS

    assert set(FRAMEWORKS.values()) | set(DEFAULT_FRAMEWORKS) <= set(BUILT_IN_FRAMEWORKS)


def test_wl015s_page_lists_every_integration_kueue_has():
    from gpupolicy.domain.kueue_configuration import BUILT_IN_FRAMEWORKS
    from gpupolicy.rules import wl015_kueue_configuration_refused as wl015

    assert all(f"`{name}`" in wl015.__doc__ for name in BUILT_IN_FRAMEWORKS)
