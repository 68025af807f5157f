"""`gpupolicy import --snapshot` on a snapshot of cluster acme-east (tests/fixtures/import/acme-east: a
hand-installed A100 node, an L4 node configured by hand, mixed drivers, an existing Kueue setup), run on a
copy of the generated fork fleet (tests/forkfleet.py): the files written, validate's findings about the open
questions, the migration
plan with the capacity per step; bad input exits 2 and writes nothing."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from support import REPO, copy_repo, fleet_repo, run_gpupolicy

from gpupolicy import pipeline
from gpupolicy.findings import Severity

SNAPSHOT = REPO / "tests" / "fixtures" / "import" / "acme-east"


def run_import(repo: Path, *args: str) -> subprocess.CompletedProcess:
    return run_gpupolicy("import", "--repo", str(repo), *args)


def tree(repo: Path) -> dict[str, bytes]:
    return {p.relative_to(repo).as_posix(): p.read_bytes() for p in repo.rglob("*") if p.is_file()}


def errors(repo: Path) -> set[tuple[str, str, str]]:
    return {
        (f.rule, f.path, f.message)
        for f in pipeline.run(repo, use_cache=False).findings
        if f.severity == Severity.ERROR
    }


def test_import_writes_pools_teams_queues_and_the_plan(fork: Path) -> None:
    before = errors(fork)
    done = run_import(fork, "--snapshot", str(SNAPSHOT), "--name", "acme-east")
    assert done.returncode == 0, done.stderr
    assert "6 GPU node(s) in 2 pool(s); GPU Operator v26.7.0" in done.stdout
    assert "node a100-03: not under GPU Operator management" in done.stdout
    assert "node l4-03: label disagrees with its pool: replicas 2 (pool: 4)" in done.stdout
    assert "node l4-03: label disagrees with its pool: driver 570.172.08 (pool: 580.95.05)" in done.stdout

    a100 = yaml.safe_load((fork / "pools/a100/pool.yaml").read_text())["spec"]
    assert a100["gpu"] == {"model": "A100-80GB", "perNode": 8}
    assert a100["zones"] == {"us-east-1a": 2, "us-east-1b": 1} and a100["accessMode"] == "exclusive"
    assert a100["node"] == {"cpu": 96, "memory": "1056Gi"}
    l4 = yaml.safe_load((fork / "pools/l4/pool.yaml").read_text())["spec"]
    assert l4["accessMode"] == "time-sliced" and l4["timeSlicing"]["replicas"] == 4
    assert 'version: "580.95.05"' in (fork / "pools/a100/nvidiadriver.yaml").read_text()
    # the existing Kueue setup, flavors renamed to the pools (here the same names), status dropped
    research = yaml.safe_load((fork / "clusters/acme-east/queues/research.yaml").read_text())
    assert research["spec"]["cohortName"] == "shared" and "status" not in research
    assert research["metadata"]["labels"] == {"gpupolicy.io/tier": "training", "gpupolicy.io/team": "ml"}
    assert research["spec"]["resourceGroups"][0]["flavors"][0]["name"] == "a100"
    local = yaml.safe_load((fork / "policies/teams/web/localqueues.yaml").read_text())
    assert (local["metadata"]["name"], local["spec"]["clusterQueue"]) == ("infer-q", "inference")
    assert 'requests.nvidia.com/gpu: "24"' in (fork / "clusters/acme-east/team-quotas.yaml").read_text()
    overlay = (fork / "clusters/acme-east/kustomization.yaml").read_text()
    assert "  - ../../pools/a100\n  - ../../pools/l4\n" in overlay and "../../pools/fra-" not in overlay
    assert "  - ../../policies/teams/ml\n  - ../../policies/teams/web\n  - queues\n" in overlay
    conf = (fork / "policies/startup-check/pools.conf").read_text()
    assert any(
        line.split()[:2] == ["l4", "time-sliced"] and line.split()[-1] == "25" for line in conf.splitlines()
    )

    # validate: every question is an IMP001 error at its line; besides them only WL012 (the imported queues
    # cover no cpu/memory, a real gap of the cluster's Kueue setup); nothing else new
    added = errors(fork) - before
    questions = sorted((path, message) for rule, path, message in added if rule == "IMP001")
    asked = [
        line.strip()
        for line in done.stdout.splitlines()
        if line.startswith("  ") and ": " in line and line.strip().split(":")[0] in {p for p, _ in questions}
    ]
    assert len(questions) == 12 and len(asked) >= 12
    assert (
        "clusters/acme-east/queues/inference.yaml",
        "open question: which tier is ClusterQueue "
        "inference? counted as production in the migration plan; set the gpupolicy.io/tier label",
    ) in questions
    assert any(p == "pools/a100/pool.yaml" and "dedicated=ml:NoSchedule" in m for p, m in questions)
    assert any(p == "imports/acme-east/migration-plan.yaml" and "step 2" in m for p, m in questions)
    assert any(
        p == "clusters/acme-east/gpu-operator-values.yaml" and "copied from cluster fra-1" in m
        for p, m in questions
    )
    assert {rule for rule, _, _ in added} == {"IMP001", "WL012"}

    plan = yaml.safe_load((fork / "imports/acme-east/migration-plan.yaml").read_text())
    assert plan["kind"] == "MigrationPlan" and plan["spec"]["maxNodesOut"] == 1
    steps = [
        (s["node"], s["capacityDuring"], s["capacityAfter"], s["productionNeed"], s["verdict"])
        for s in plan["spec"]["steps"]
    ]
    gpu = "nvidia.com/gpu"
    assert steps == [
        ("a100-03", {gpu: 16}, {gpu: 24}, {}, "ok"),
        ("l4-03", {gpu: 32}, {gpu: 48}, {gpu: 24}, "no-reserve"),
    ]
    assert (
        "1. a100-03 (a100): during 16 nvidia.com/gpu; after 24 nvidia.com/gpu; production need nothing; ok"
    ) in done.stdout
    assert (
        "2. l4-03 (l4): during 32 nvidia.com/gpu; after 48 nvidia.com/gpu; production need 24 "
        "nvidia.com/gpu; "
        "no-reserve" in done.stdout
    )


def test_answering_a_question_removes_its_finding(fork: Path) -> None:
    assert run_import(fork, "--snapshot", str(SNAPSHOT), "--name", "acme-east").returncode == 0
    listed = fork / "imports/acme-east/questions.yaml"
    questions = yaml.safe_load(listed.read_text())["questions"]
    assert len(questions) == 12
    answered = [q for q in questions if q["path"] != "clusters/acme-east/queues/inference.yaml"]
    assert len(answered) == 11
    listed.write_text(yaml.safe_dump({"questions": answered}))
    left = [e for e in errors(fork) if e[0] == "IMP001"]
    assert len(left) == 11 and not [e for e in left if e[1] == "clusters/acme-east/queues/inference.yaml"]


def test_a_step_below_production_need_is_blocked(fork: Path, tmp_path: Path) -> None:
    snapshot = Path(shutil.copytree(SNAPSHOT, tmp_path / "snapshot"))
    queues = json.loads((snapshot / "clusterqueues.json").read_text())
    queues["items"][1]["spec"]["resourceGroups"][0]["flavors"][0]["resources"][0]["nominalQuota"] = 40
    (snapshot / "clusterqueues.json").write_text(json.dumps(queues))
    done = run_import(fork, "--snapshot", str(snapshot), "--name", "acme-east", "--dry-run")
    assert done.returncode == 0, done.stderr
    assert (
        "2. l4-03 (l4): during 32 nvidia.com/gpu; after 48 nvidia.com/gpu; production need 40 "
        "nvidia.com/gpu; "
        "blocked" in done.stdout
    )
    assert "step 2 takes online capacity below production's need (40 nvidia.com/gpu)" in done.stdout
    assert not (fork / "clusters/acme-east").exists()


def test_unreadable_snapshot_exits_2_and_writes_nothing(fork: Path, tmp_path: Path) -> None:
    snapshot = Path(shutil.copytree(SNAPSHOT, tmp_path / "snapshot"))
    (snapshot / "localqueues.json").write_text('{"kind": "List",\n "items": [\n')
    files = tree(fork)
    done = run_import(fork, "--snapshot", str(snapshot), "--name", "acme-east")
    assert done.returncode == 2
    assert f"{snapshot / 'localqueues.json'}:3: not JSON" in done.stderr and "Traceback" not in done.stderr
    missing = run_import(fork, "--snapshot", str(tmp_path / "nowhere"), "--name", "acme-east")
    assert missing.returncode == 2 and "not a directory" in missing.stderr
    assert tree(fork) == files


def test_import_refuses_a_cluster_the_repository_has(fork: Path) -> None:
    assert run_import(fork, "--snapshot", str(SNAPSHOT), "--name", "acme-east").returncode == 0
    files = tree(fork)
    again = run_import(fork, "--snapshot", str(SNAPSHOT), "--name", "acme-east")
    assert again.returncode == 2 and "exists already" in again.stderr
    assert tree(fork) == files


def test_context_goes_through_the_live_reader(fork: Path, tmp_path: Path) -> None:
    pytest.importorskip("kubernetes")
    done = run_import(
        fork, "--context", "nowhere", "--kubeconfig", str(tmp_path / "missing"), "--name", "acme-east"
    )
    assert done.returncode == 2 and "cannot use kubeconfig" in done.stderr
    assert not (fork / "clusters/acme-east").exists()


def test_validate_checks_the_plan_against_the_repository(fork: Path) -> None:
    """IMP002 recomputes each step from the repository: raising production's quota after the import makes the
    step that left CAP005's reserve (a warning) one that leaves production short (an error)."""
    assert run_import(fork, "--snapshot", str(SNAPSHOT), "--name", "acme-east").returncode == 0
    findings = [f for f in pipeline.run(fork, use_cache=False).findings if f.rule == "IMP002"]
    assert [(f.severity, f.line) for f in findings] == [(Severity.WARNING, 25)]
    assert "16 online < 24 nominal" in findings[0].message
    queue = fork / "clusters/acme-east/queues/inference.yaml"
    queue.write_text(queue.read_text().replace("nominalQuota: 24", "nominalQuota: 40"))
    findings = [f for f in pipeline.run(fork, use_cache=False).findings if f.rule == "IMP002"]
    assert [(f.severity, f.message) for f in findings] == [
        (
            Severity.ERROR,
            "step 2 drains l4-03 of pool l4: production short while it is out "
            "(nvidia.com/gpu 32 online < 40 nominal)",
        )
    ]


def test_open_questions_are_read_through_the_repository_reader(tmp_path: Path) -> None:
    """imports/<cluster>/questions.yaml is repository content: a FIFO there is refused (never read, so never a
    hang), and an entry that points outside the repository is refused, not reported as that path."""
    import os

    from support import MINIREPO, copy_repo

    repo = copy_repo(MINIREPO, tmp_path / "repo")
    (repo / "imports/mini").mkdir(parents=True)
    os.mkfifo(repo / "imports/mini/questions.yaml")
    findings = [f for f in pipeline.run(repo, use_cache=False).findings if f.rule == "IMP001"]
    assert [f.message.split(":")[0] for f in findings] == ["not read"], findings
    (repo / "imports/mini/questions.yaml").unlink()
    (repo / "imports/mini/questions.yaml").write_text(
        "questions:\n  - {path: ../../etc/passwd, line: 1, question: which team?}\n"
    )
    findings = [f for f in pipeline.run(repo, use_cache=False).findings if f.rule == "IMP001"]
    assert len(findings) == 1 and "outside the repository" in findings[0].message
    assert not findings[0].path.startswith(("/", ".."))


def test_a_cluster_modelled_on_an_argo_cd_cluster_gets_its_entry_folder(tmp_path: Path) -> None:
    """The model of the new overlay is the repository's first cluster. Where that one is Argo CD's (the tests'
    fleet: prod-eu), the overlay lists `- argocd`: the folder was not written and the overlay did not render
    (KUST003), and cluster.yaml said flux."""
    repo = copy_repo(fleet_repo(), tmp_path / "repo")
    before = errors(repo)
    done = run_import(repo, "--snapshot", str(SNAPSHOT), "--name", "acme-east")
    assert done.returncode == 0, done.stderr
    entry = repo / "clusters/acme-east/argocd"
    assert sorted(p.name for p in entry.iterdir()) == sorted(
        p.name for p in (repo / "clusters/prod-eu/argocd").iterdir()
    )
    assert "acme-east" in (entry / "applicationset.yaml").read_text()
    assert "  syncEngine: argocd\n" in (repo / "clusters/acme-east/cluster.yaml").read_text()
    added = {rule for rule, _, _ in errors(repo) - before}
    # the open questions, the queues' cpu/memory gap, and the driver rollout's stages that do not list the
    # imported pools yet: nothing about rendering
    assert added <= {"IMP001", "WL012", "UPG003"} and "IMP001" in added
