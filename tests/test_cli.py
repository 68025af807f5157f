"""The command line as a user meets it: exit codes, formats, clear errors, and nothing written."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from support import MINIREPO, REPO, copy_repo, fleet_repo

from gpupolicy.cli import main


def _tree_hash(root: Path) -> str:
    digest = hashlib.sha256()
    for path in sorted(root.rglob("*")):
        digest.update(path.relative_to(root).as_posix().encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


@pytest.mark.reference_fleet
def test_shipped_repo_exits_zero_with_json_summary(capsys) -> None:
    assert main(["validate", "--repo", str(REPO), "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert set(data["summary"]) == {
        "errors",
        "warnings",
        "crashed",
        "waived",
        "disabled",
        "rerated",
        "objects",
        "clusters",
        "unrendered_clusters",
        "seconds",
    }
    assert data["summary"]["unrendered_clusters"] == []
    assert data["summary"]["errors"] == 0 and data["summary"]["clusters"] >= 3
    assert data["summary"]["objects"] >= 100


def test_text_report_ends_with_a_verdict(capsys) -> None:
    main(["validate", "--repo", str(MINIREPO), "--cluster", "mini"])
    assert capsys.readouterr().out.splitlines()[-1].startswith(("ok:", "FAILED:"))


def test_typo_gives_exit_one_with_file_and_line(tmp_path: Path, capsys) -> None:
    repo = copy_repo(MINIREPO, tmp_path / "r")
    queues = repo / "clusters/mini/queues.yaml"
    queues.write_text(queues.read_text().replace("nominalQuota", "nominalQuata"))
    before = _tree_hash(repo)
    assert main(["validate", "--repo", str(repo), "--format", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert any(
        f["rule"] == "SCHEMA002"
        and f["path"] == "clusters/mini/queues.yaml"
        and f["line"] == 18
        and "nominalQuata" in f["message"]
        for f in findings
    )
    assert _tree_hash(repo) == before, "a validator must not write to the repository"


def test_unknown_cluster_is_a_usage_error(capsys) -> None:
    assert main(["validate", "--repo", str(MINIREPO), "--cluster", "nope"]) == 2
    assert "no such cluster: nope" in capsys.readouterr().err


def test_not_a_repository(tmp_path: Path, capsys, monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert main(["validate"]) == 2
    assert "not inside a policy repository" in capsys.readouterr().err


def test_missing_kubectl_is_exit_two(monkeypatch, capsys) -> None:
    from gpupolicy.pipeline.render import kustomize

    monkeypatch.setattr(kustomize.sys, "executable", "/nonexistent/python")
    monkeypatch.setenv("PATH", "/nonexistent")
    assert main(["validate", "--repo", str(MINIREPO), "--no-cache"]) == 2
    assert "kubectl not found" in capsys.readouterr().err


@pytest.mark.parametrize("command", ["validate", "render", "inspect", "rules"])
def test_every_command_has_help(command: str, capsys) -> None:
    assert main([command, "--help"]) == 0
    assert "--repo" in capsys.readouterr().out


def test_rules_lists_and_documents(capsys) -> None:
    assert main(["rules"]) == 0
    listing = capsys.readouterr().out
    assert "YAML002" in listing and "SCHEMA002" in listing
    assert main(["rules", "yaml007"]) == 0
    assert "## Why it matters" in capsys.readouterr().out
    assert main(["rules", "NOPE999"]) == 2


def test_render_writes_only_where_asked(tmp_path: Path) -> None:
    out = tmp_path / "out"
    assert main(["render", "--repo", str(MINIREPO), "--out", str(out)]) == 0
    text = (out / "mini.yaml").read_text()
    assert "kind: ClusterQueue" in text and "config.kubernetes.io/origin" in text


def test_render_refuses_an_out_that_is_no_folder_and_never_writes_into_a_fifo(tmp_path: Path, capsys) -> None:
    """`--out /dev/full` was an internal error (FileExistsError); a FIFO where a cluster's file goes blocked
    the write until some reader came."""
    not_folder = tmp_path / "file"
    not_folder.write_text("x")
    assert main(["render", "--repo", str(MINIREPO), "--out", str(not_folder)]) == 2
    assert f"--out {not_folder}: is not a folder" in capsys.readouterr().err
    out = tmp_path / "out"
    out.mkdir()
    os.mkfifo(out / "mini.yaml")
    assert main(["render", "--repo", str(MINIREPO), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert "is a FIFO, not a regular file; nothing was changed" in err and "internal error" not in err


def test_inspect_json_has_capacity(capsys) -> None:
    assert main(["inspect", "--repo", str(MINIREPO), "--format", "json"]) == 0
    cluster = json.loads(capsys.readouterr().out)["clusters"][0]
    assert cluster["pools"][0]["capacity"] == {"nvidia.com/gpu": 16}
    assert cluster["clusterQueues"][0]["quotas"][0]["nominal"] == 16


def test_console_script_runs() -> None:
    exe = Path(sys.executable).parent / "gpupolicy"
    proc = subprocess.run(
        [str(exe), "validate", "--repo", str(MINIREPO), "--format", "json"], capture_output=True, text=True
    )
    assert proc.returncode in (0, 1), proc.stderr
    assert "Traceback" not in proc.stderr
    assert json.loads(proc.stdout)["summary"]["clusters"] == 1


def test_a_broken_pool_declaration_is_reported_once(tmp_path: Path, capsys) -> None:
    """A pool.yaml that does not load drops the pool from the model; its flavor and plan entries must not
    then be reported again as pointing at no pool (on the tests' own fleet, support.fleet_repo)."""
    repo = copy_repo(fleet_repo(), tmp_path / "r")
    pool = repo / "pools/us-h100-train/pool.yaml"
    pool.write_text(
        pool.read_text().replace("  accessMode: exclusive\n", "  accessMode: exclusive\n  accessMode: x\n")
    )
    assert main(["validate", "--repo", str(repo), "--format", "json"]) == 1
    findings = json.loads(capsys.readouterr().out)["findings"]
    assert [(f["rule"], f["path"]) for f in findings if f["severity"] == "error"] == [
        ("YAML002", "pools/us-h100-train/pool.yaml")
    ]
