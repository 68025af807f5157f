"""Audit on the recorded snapshot fixture against the hand-built pools and the real repository's pools."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from fractions import Fraction
from pathlib import Path

import pytest

from gpupolicy.audit import (
    AuditError,
    IdleGPU,
    PendingWorkload,
    audit,
    export_jobs,
    format_gpus,
    load_snapshot,
    parse_prometheus,
    pod_gpus,
    report_json,
    snapshot_time,
)
from gpupolicy.model import Pool, Taint

FIXTURE = Path(__file__).parent / "fixtures" / "snapshot-test-us"
NOW = datetime(2025, 6, 1, 12, tzinfo=UTC)
TAINT = (Taint("nvidia.com/gpu", "present", "NoSchedule"),)


def pools() -> dict[str, Pool]:
    def pool(name, model, per_node, nodes, **labels):
        return Pool(
            name,
            f"pools/{name}/pool.yaml",
            model,
            per_node,
            {"z": nodes},
            "exclusive",
            {"gpupolicy.io/pool": name, **labels},
            TAINT,
        )

    return {
        "test-h100": pool("test-h100", "H100-80GB", 8, 2),
        "test-a100-mig": pool("test-a100-mig", "A100-80GB", 8, 1),
        "test-l4-shared": pool("test-l4-shared", "L4", 4, 1),
    }


def test_audit_fixture():
    report = audit(load_snapshot(FIXTURE), pools(), NOW)
    assert report.nodes_per_pool == {"(no pool label)": 1, "test-a100-mig": 1, "test-h100": 2}
    assert report.nodes_without_pool == ["cpu-0"]
    assert report.gpus_by_namespace == {"nlp": 12, "research": Fraction(1, 7), "serving": 1, "vision": 2}
    assert report.gpus_by_queue["nlp/nlp"] == 12
    assert report.unqueued_pods == ["serving/api-0"]
    assert report.idle_gpus == [IdleGPU("vision", "train-1", "0", "h100-1", 0.0)]
    assert report.pending == [PendingWorkload("nlp/job-train-2", "nlp", 5.0)]
    drift = sorted(i.message for i in report.issues if i.kind == "pool-drift")
    assert any("h100-1" in m and "NVIDIA-A100-SXM4-80GB" in m for m in drift)
    assert any("h100-1" in m and "taint" in m for m in drift)
    assert any("test-l4-shared: 0 node(s)" in m for m in drift)
    assert not any("h100-0" in m or "mig-0" in m for m in drift)


def test_export_trace_jobs():
    jobs = export_jobs(load_snapshot(FIXTURE), NOW)
    assert [j.id for j in jobs][0] == "nlp/train-2"  # the oldest pod is the trace origin
    train = next(j for j in jobs if j.id == "nlp/train-0")
    assert train.gpus == 8 and train.submit == 7200 and train.duration == 3 * 3600 - 30
    assert next(j for j in jobs if j.id == "research/notebook-0").fractional


def test_pod_gpus_counts_mig_as_sevenths():
    pod = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/mig-3g.40gb": "2"}}}]}}
    assert pod_gpus(pod) == pytest.approx(6 / 7)


def test_pod_gpus_counts_mig_on_the_pods_gpu():
    """A30 and RTX PRO 6000 have 4 compute slices: a 2g instance is half a card, a 1g.24gb a quarter there
    (and a seventh on an H100 NVL, which offers the same name)."""
    a30 = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/mig-2g.12gb": "1"}}}]}}
    assert pod_gpus(a30) == pytest.approx(1 / 2) == pytest.approx(pod_gpus(a30, "A30"))
    shared_name = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/mig-1g.24gb": "1"}}}]}}
    assert pod_gpus(shared_name, "H100-94GB") == pytest.approx(1 / 7)
    assert pod_gpus(shared_name, "RTX-PRO-6000") == pytest.approx(1 / 4)
    unknown = {"spec": {"containers": [{"resources": {"limits": {"nvidia.com/mig-9g.1gb": "1"}}}]}}
    assert pod_gpus(unknown, "A100-80GB") == 1  # not a profile: a whole card


def test_bad_json_names_file_and_line(tmp_path):
    (tmp_path / "nodes.json").write_text('{"items": [\n  {,}\n]}')
    (tmp_path / "pods.json").write_text('{"items": []}')
    with pytest.raises(AuditError, match=r"nodes.json:2"):
        load_snapshot(tmp_path)


def test_missing_pods_file(tmp_path):
    (tmp_path / "nodes.json").write_text(json.dumps({"items": []}))
    with pytest.raises(AuditError, match="pods.json: missing"):
        load_snapshot(tmp_path)


def test_bad_prometheus_line(tmp_path):
    path = tmp_path / "dcgm.prom"
    path.write_text("# HELP x\nDCGM_FI_DEV_GPU_UTIL{gpu=\"0\"} 5\nnot a sample line at all {\n")
    with pytest.raises(AuditError, match=r"dcgm.prom:3"):
        parse_prometheus(path)


def test_without_now_pending_age_is_measured_from_the_snapshot_not_today():
    """The fixture's newest timestamp is a pod started at 10:00:05; the workload was created at 07:00."""
    snapshot = load_snapshot(FIXTURE)
    assert snapshot_time(snapshot) == datetime(2025, 6, 1, 10, 0, 5, tzinfo=UTC)
    assert audit(snapshot, pools()).pending[0].age_hours == pytest.approx(3 + 5 / 3600)


@pytest.mark.parametrize(
    ("share", "text"),
    [(Fraction(12), "12"), (Fraction(1, 7), "1/7"), (Fraction(17, 7), "2 3/7"), (Fraction(1, 2), "1/2")],
)
def test_gpu_shares_are_whole_gpus_and_slices(share, text):
    assert format_gpus(share) == text


def test_json_report_is_keyed_objects_with_exact_shares():
    report = audit(load_snapshot(FIXTURE), pools(), NOW)
    data = json.loads(json.dumps(report_json(report, NOW)))
    assert data["snapshot_time"] == "2025-06-01T12:00:00Z"
    assert data["gpus_by_namespace"]["research"] == {"gpus": 0.142857, "exact": "1/7"}
    assert data["idle_gpus"] == [
        {"namespace": "vision", "pod": "train-1", "gpu": "0", "node": "h100-1", "utilization_percent": 0.0}
    ]
    assert data["pending"] == [{"workload": "nlp/job-train-2", "queue": "nlp", "age_hours": 5.0}]
    assert data["nodes_without_pool"] == ["cpu-0"]


@pytest.mark.parametrize(
    ("nodes", "message"),
    [
        (
            '{"items": [null]}',
            r"nodes.json: not `kubectl get \.\.\. -o json` output .*items\[0\]: None is not " r"of type",
        ),
        ('{"items": [7]}', r"items\[0\]: 7 is not of type 'object'"),
    ],
)
def test_a_snapshot_file_that_is_not_a_list_of_objects_is_a_named_refusal(tmp_path, nodes, message):
    """`{"items": [null]}` crashed with AttributeError (an internal error) before the schema check."""
    (tmp_path / "nodes.json").write_text(nodes)
    (tmp_path / "pods.json").write_text('{"items": []}')
    with pytest.raises(AuditError, match=message):
        load_snapshot(tmp_path)


def test_a_snapshot_file_over_the_byte_bound_is_refused(tmp_path):
    from gpupolicy import audit

    (tmp_path / "nodes.json").write_text('{"items": []}' + " " * 100)
    with pytest.raises(AuditError, match=r"nodes.json: over 50 bytes"):
        audit._bounded_text(tmp_path / "nodes.json", limit=50)
