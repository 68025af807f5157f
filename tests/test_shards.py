"""Sharded CI (issue 14): `validate --shard K/N` over a generated fleet, merged with `report merge`, reports
what one run over every cluster reports: the same findings (a shared file's finding naming the clusters of
several shards), the same waived findings, EXC003 for the exception no shard used, and fleet-level findings (a
loose manifest, a pool in no cluster, a pool in two clusters of different shards) exactly once, and a finding
about
the whole fleet that each shard can only propose (an upgrade-plan selector naming no pool) once."""

from __future__ import annotations

import importlib.util
import json
import re
import subprocess
import sys
from pathlib import Path

import guardfleet
import pytest

from gpupolicy.cli import main
from gpupolicy.pipeline.shards import Shard, parse_shard, source_ids

REPO = Path(__file__).resolve().parents[1]
SHARDS = 4

NAMESPACE_CHECK = """\
apiVersion: gpupolicy/v1
kind: Check
id: ACME-NS001
severity: warning
summary: Namespaces carry a cost label
match: {kinds: [Namespace]}
expression: "has(object.metadata.labels) && 'acme.example/cost' in object.metadata.labels"
message: namespace without acme.example/cost
"""

EXCEPTIONS = """\
apiVersion: gpupolicy/v1
kind: Exceptions
exceptions:
  - rule: ACME-NS001
    path: policies/teams/team-0001/**
    reason: team 0001 is charged centrally this quarter
    owner: finance
    expires: "2099-01-01"
  - rule: ACME-NS001
    path: policies/teams/team-9999/**
    reason: no such team, so this exception accepts nothing
    owner: finance
    expires: "2099-01-01"
"""


PLAN = """\
apiVersion: gpupolicy/v1
kind: RolloutPlan
metadata:
  name: driver-next
  description: >-
    A plan whose second selector names no pool: true of the whole fleet, which no shard sees alone.
spec:
  component: driver
  from: "580.173.02"
  to: "595.91.07"
  owner: platform
  stages:
    - name: test
      phase: test
      planned: "2026-12-10"
      minimumSoak: 72h
      approvers: [platform]
      select:
        - cluster: c000
        - pools: [no-such-pool]
  rollback:
    target: "580.173.02"
    criteria:
      maxXidErrors: 0
"""


def _generate(root: Path) -> None:
    spec = importlib.util.spec_from_file_location("generate_fleet", REPO / "bench" / "generate_fleet.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    module.generate(root, clusters=4, pools=8, teams=6, teams_per_cluster=3)


@pytest.fixture(scope="module")
def fleet(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The bench fleet at 4 clusters, with findings of every kind a merge must get right."""
    root = tmp_path_factory.mktemp("sharded") / "fleet"
    _generate(root)
    (root / "policies" / "checks").mkdir()
    # shared files, many clusters
    (root / "policies" / "checks" / "namespaces.yaml").write_text(NAMESPACE_CHECK)
    # one used, one used by no shard; within the 90-day bound, owned by an owner CODEOWNERS names (decision
    # 0062)
    (root / "policies" / "exceptions.yaml").write_text(
        EXCEPTIONS.replace("2099-01-01", guardfleet.in_days(30))
    )
    (root / "docs").mkdir(exist_ok=True)
    (root / "docs" / "CODEOWNERS").write_text("/policies/exceptions.yaml  @example-org/finance\n")
    (root / "policies" / "stray").mkdir()
    (root / "policies" / "stray" / "cm.yaml").write_text(  # a loose manifest no cluster includes
        "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: stray\ndata:\n  a: 1\n"
    )
    (root / "policies" / "upgrades").mkdir()
    (root / "policies" / "upgrades" / "driver-next.yaml").write_text(PLAN)  # UPG003 about the whole fleet
    orphan = root / "pools" / "orphan-pool"
    orphan.mkdir()
    (orphan / "pool.yaml").write_text(
        (root / "pools" / "c000-h100-0000" / "pool.yaml")
        .read_text()
        .replace("name: c000-h100-0000", "name: orphan-pool")
    )
    overlay = root / "clusters" / "c000" / "kustomization.yaml"  # c002's pool also in c000 (another shard)
    overlay.write_text(
        overlay.read_text().replace(
            "  - ../../pools/c000-a100-mig-0001\n",
            "  - ../../pools/c000-a100-mig-0001\n  - ../../pools/c002-a100-mig-0004\n",
        )
    )
    return root


def _run(capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    code = main(list(args))
    return code, capsys.readouterr().out


def _shard_reports(
    fleet: Path, folder: Path, capsys: pytest.CaptureFixture, count: int = SHARDS
) -> list[Path]:
    paths = []
    for index in range(1, count + 1):
        path = folder / f"shard-{index}.json"
        code, _ = _run(
            capsys,
            "validate",
            "--repo",
            str(fleet),
            "--shard",
            f"{index}/{count}",
            "--format",
            "json",
            "-o",
            str(path),
        )
        assert code in (0, 1)
        paths.append(path)
    return paths


def test_merged_shards_equal_the_full_run(fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    full_code, full_text = _run(capsys, "validate", "--repo", str(fleet), "--format", "json")
    full = json.loads(full_text)
    rules = {f["rule"] for f in full["findings"]}
    assert {"ACME-NS001", "EXC003", "POOL002", "SCHEMA001"} <= rules  # the cases below are really there
    # proposed by every shard (none loads every cluster), kept by the merge (shards._agreed)
    assert any(
        f["rule"] == "UPG003" and "no pool named no-such-pool" in f["message"] for f in full["findings"]
    )
    assert any("," in f["cluster"] for f in full["findings"])
    assert len(full["waived"]) == 1

    reports = _shard_reports(fleet, tmp_path, capsys)
    shards = [json.loads(path.read_text())["shard"] for path in reports]
    assert sorted(c for s in shards for c in s["clusters"]) == ["c000", "c001", "c002", "c003"]
    merged_code, merged_text = _run(
        capsys, "report", "--repo", str(fleet), "merge", *map(str, reports), "--format", "json"
    )
    merged = json.loads(merged_text)
    assert merged["findings"] == full["findings"]
    assert merged["waived"] == full["waived"]
    assert {k: v for k, v in merged["summary"].items() if k != "seconds"} == {
        k: v for k, v in full["summary"].items() if k != "seconds"
    }
    assert merged_code == full_code == 1

    _, full_sarif = _run(capsys, "validate", "--repo", str(fleet), "--format", "sarif")
    _, merged_sarif = _run(
        capsys, "report", "--repo", str(fleet), "merge", *map(str, reports), "--format", "sarif"
    )
    assert merged_sarif == full_sarif


def test_fleet_level_findings_come_from_the_first_shard_only(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    reports = [json.loads(p.read_text()) for p in _shard_reports(fleet, tmp_path, capsys)]
    pool002 = [[f["message"] for f in r["findings"] if f["rule"] == "POOL002"] for r in reports]
    assert pool002[1:] == [[], [], []]
    assert sorted(pool002[0]) == [
        "pool c002-a100-mig-0004 is included by 2 clusters (c000, c002); its GPUs are counted in each",
        "pool orphan-pool is included by no cluster overlay",
    ]
    assert [[f["path"] for f in r["findings"] if f["rule"] == "SCHEMA001"] for r in reports] == [
        ["policies/stray/cm.yaml"],
        [],
        [],
        [],
    ]
    # every shard's candidate is the exception it did not use; only the merge knows none used it
    assert all(r["shard"]["unused_exceptions"] for r in reports)
    assert not any(f["rule"] == "EXC003" for r in reports for f in r["findings"])


def test_the_split_is_by_cluster_name_and_deterministic() -> None:
    names = ["c003", "c000", "c002", "c001", "c004"]
    assert [Shard(k, 2).clusters(names) for k in (1, 2)] == [["c000", "c002", "c004"], ["c001", "c003"]]
    assert Shard(3, 8).clusters(names) == ["c002"] and Shard(6, 8).clusters(names) == []
    assert parse_shard(" 2/4 ") == Shard(2, 4)


@pytest.mark.parametrize("text", ["0/4", "5/4", "2", "a/b", "1/0", "1/-4", "1/4/2"])
def test_a_malformed_shard_is_a_usage_error(text: str, fleet: Path, capsys: pytest.CaptureFixture) -> None:
    assert main(["validate", "--repo", str(fleet), "--shard", text]) == 2
    assert "expected K/N" in capsys.readouterr().err


def test_a_shard_without_clusters_writes_an_empty_report(fleet: Path, capsys: pytest.CaptureFixture) -> None:
    code = main(["validate", "--repo", str(fleet), "--shard", "6/8", "--format", "json"])
    output = capsys.readouterr()
    report = json.loads(output.out)
    assert (
        code == 0
        and report["findings"] == []
        and report["shard"]
        == {
            "index": 6,
            "count": 8,
            "clusters": [],
            "unused_exceptions": [],
            "proposed": [],
            "source": {"commit": None, "tree": None, "dirty": None},
        }
    )  # the fixture is no git checkout
    assert "shard 6/8 has no cluster" in output.err


def test_merge_refuses_an_incomplete_or_mixed_split(
    fleet: Path, tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    reports = _shard_reports(fleet, tmp_path, capsys, count=2)
    assert main(["report", "--repo", str(fleet), "merge", str(reports[0])]) == 2
    assert "shard(s) 2/2 missing" in capsys.readouterr().err
    assert main(["report", "--repo", str(fleet), "merge", str(reports[0]), str(reports[0])]) == 2
    assert "shard 1/2 twice" in capsys.readouterr().err
    sarif = tmp_path / "report.sarif"
    sarif.write_text('{"version": "2.1.0", "runs": []}')
    assert main(["report", "--repo", str(fleet), "merge", str(sarif)]) == 2
    assert "not the JSON report of a shard" in capsys.readouterr().err
    assert main(["validate", "--repo", str(fleet), "--shard", "1/2", "--cluster", "c000"]) == 2
    assert "does not combine" in capsys.readouterr().err


@pytest.fixture(scope="module")
def two_shards(fleet: Path, tmp_path_factory: pytest.TempPathFactory) -> list[dict]:
    """The JSON reports of a 1/2, 2/2 split of the fixture fleet, to edit into hostile ones."""
    folder = tmp_path_factory.mktemp("two-shards")
    reports = []
    for index in (1, 2):
        path = folder / f"shard-{index}.json"
        assert main(
            ["validate", "--repo", str(fleet), "--shard", f"{index}/2", "--format", "json", "-o", str(path)]
        ) in (0, 1)
        reports.append(json.loads(path.read_text()))
    return reports


def _write(folder: Path, reports: list[dict]) -> list[str]:
    paths = []
    for index, report in enumerate(reports, start=1):
        path = folder / f"shard-{index}.json"
        path.write_text(json.dumps(report))
        paths.append(str(path))
    return paths


def _merge(fleet: Path, folder: Path, reports: list[dict], capsys: pytest.CaptureFixture) -> tuple[int, str]:
    code = main(["report", "--repo", str(fleet), "merge", *_write(folder, reports)])
    return code, capsys.readouterr().err


@pytest.mark.parametrize(
    ("field", "value", "message"),
    [
        ("count", [1], r"shard\.count: \[1\] is not of type 'integer'"),  # crashed: unhashable type 'list'
        (
            "clusters",
            None,
            r"shard\.clusters: None is not of type 'array'",
        ),  # crashed: NoneType is not iterable
        ("index", "1", r"shard\.index: '1' is not of type 'integer'"),
        ("source", None, r"shard\.source: None is not of type 'object'"),
    ],
)
def test_a_malformed_shard_report_is_a_named_refusal(
    field: str,
    value: object,
    message: str,
    fleet: Path,
    two_shards: list[dict],
    tmp_path: Path,
    capsys: pytest.CaptureFixture,
) -> None:
    broken = json.loads(json.dumps(two_shards))
    broken[1]["shard"][field] = value
    code, err = _merge(fleet, tmp_path, broken, capsys)
    assert code == 2 and "shard-2.json: not the JSON report of a shard" in err
    assert re.search(message, err), err
    assert "internal error" not in err.lower()


def test_a_finding_without_its_fields_or_a_bad_expiry_is_refused(
    fleet: Path, two_shards: list[dict], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    broken = json.loads(json.dumps(two_shards))
    broken[0]["findings"].append(
        {
            "rule": "CAP001",
            "severity": "fatal",
            "message": "m",
            "path": "p",
            "line": 1,
            "cluster": "",
            "hint": "",
        }
    )
    code, err = _merge(fleet, tmp_path, broken, capsys)
    assert code == 2 and f"findings[{len(broken[0]['findings']) - 1}].severity: 'fatal' is not one of" in err
    broken = json.loads(json.dumps(two_shards))
    broken[0]["waived"].append(
        {
            **two_shards[0]["findings"][0],
            "exception": {
                "rule": "CAP001",
                "selector": "*",
                "reason": "r",
                "owner": "o",
                "expires": "2026-13-45",
                "source": "x:1",
                "inline": False,
            },
        }
    )
    code, err = _merge(fleet, tmp_path, broken, capsys)
    assert code == 2 and "expiry is not a date: '2026-13-45'" in err


def _source(commit: str, tree: str, dirty: bool = False) -> dict:
    return {"commit": commit * 40, "tree": tree * 40, "dirty": dirty}


def test_merge_refuses_shards_of_different_commits(
    fleet: Path, two_shards: list[dict], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    """Before reports carried their commit, a shard kept from another commit merged unseen (exit 1 or 0)."""
    stale = json.loads(json.dumps(two_shards))
    stale[0]["shard"]["source"], stale[1]["shard"]["source"] = _source("a", "b"), _source("c", "d")
    code, err = _merge(fleet, tmp_path, stale, capsys)
    assert code == 2 and "the shards validated different trees" in err and "commit aaaaaaaaaaaa" in err
    dirty = json.loads(json.dumps(two_shards))
    dirty[0]["shard"]["source"] = dirty[1]["shard"]["source"] = _source("a", "b", dirty=True)
    code, err = _merge(fleet, tmp_path, dirty, capsys)
    assert code == 2 and "uncommitted changes" in err


def _git(root: Path, *args: str) -> str:
    return subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=root,
        check=True,
        capture_output=True,
        text=True,
    ).stdout.strip()


def _one_commit(root: Path) -> Path:
    root.mkdir(exist_ok=True)
    _git(root, "init", "-q")
    (root / "a.yaml").write_text("a: 1\n")
    _git(root, "add", "a.yaml")
    _git(root, "commit", "-qm", "one")
    return root


def test_source_ids_name_the_commit_tree_and_dirtiness(tmp_path: Path) -> None:
    assert source_ids(tmp_path) == {"commit": None, "tree": None, "dirty": None}
    _one_commit(tmp_path)
    assert source_ids(tmp_path) == {
        "commit": _git(tmp_path, "rev-parse", "HEAD"),
        "tree": _git(tmp_path, "rev-parse", "HEAD^{tree}"),
        "dirty": False,
    }
    (tmp_path / "b.yaml").write_text("b: 1\n")  # untracked files are content too
    assert source_ids(tmp_path)["dirty"] is True


def test_merge_refuses_shards_of_another_commit_than_the_checkout(
    two_shards: list[dict], tmp_path: Path, capsys: pytest.CaptureFixture
) -> None:
    checkout = _one_commit(tmp_path / "checkout")
    reports = json.loads(json.dumps(two_shards))
    for report in reports:
        report["shard"]["source"] = _source("a", "b")
    assert main(["report", "--repo", str(checkout), "merge", *_write(tmp_path, reports)]) == 2
    assert "merge in a checkout of the commit the shards ran on" in capsys.readouterr().err
    for report in reports:
        report["shard"]["source"] = source_ids(checkout)
    assert main(["report", "--repo", str(checkout), "merge", *_write(tmp_path, reports)]) in (0, 1)
