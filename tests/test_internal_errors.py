"""A check that crashes is an error, never "ok": an INTERNAL finding in every output format, exit 2; and every
command turns an unexpected exception, or a hostile input, into a clean message and exit 1 or 2, never a
traceback (issue 13, items 5 and 6)."""

from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path
from xml.etree import ElementTree

import pytest
from support import MINIREPO, REPO, copy_repo

from gpupolicy import pipeline
from gpupolicy.cli import main
from gpupolicy.rules import all_rules

sys.path.insert(0, str(REPO / "tests" / "rules"))  # the rule fixtures' builder, as test_hostile imports it
from test_rule_fixtures import build_fixture_repo  # noqa: E402

UPGRADES = REPO / "tests" / "fixtures" / "upgrades"
DASHBOARD_FIXTURE = REPO / "tests" / "rules" / "OBS004" / "bad" / "not-json"
SNAPSHOT = REPO / "tests" / "simulate" / "fixtures" / "snapshot-test-us"
FORMATS = ("text", "json", "sarif", "junit", "github")


def _run(argv: list[str], capsys) -> tuple[int, str, str]:
    code = main(argv)
    out, err = capsys.readouterr()
    assert "Traceback" not in out + err, f"traceback printed:\n{out[-2000:]}\n{err[-2000:]}"
    return code, out, err


def _crash_rule(monkeypatch: pytest.MonkeyPatch, rule_id: str, after: int = 0) -> None:
    """Make a registered rule raise, after reporting `after` findings of its own."""
    original = all_rules()[rule_id]

    def check(fleet):
        for index, finding in enumerate(original.check(fleet)):
            if index >= after:
                break
            yield finding
        cluster = next(iter(fleet.clusters.values()))
        queue = next(iter(cluster.cluster_queues.values()))  # in a local: the crash names what it checked
        raise ValueError(f"boom on {queue.name}")

    monkeypatch.setitem(all_rules(), rule_id, dataclasses.replace(original, check=check))


@pytest.fixture
def minirepo(tmp_path: Path) -> Path:
    return copy_repo(MINIREPO, tmp_path / "repo")


# --- a crashing rule is a finding in every format ----------------------------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_crashing_rule_is_an_internal_finding_in_every_format(fmt, minirepo, monkeypatch, capsys) -> None:
    _crash_rule(monkeypatch, "CAP001")
    code, out, err = _run(["validate", "--repo", str(minirepo), "--format", fmt], capsys)
    assert code == 2, "a crashed check means the tool could not do its whole job"
    assert "rule CAP001 crashed: ValueError: boom on alpha" in err
    _assert_internal_in(fmt, out)


def _assert_internal_in(fmt: str, out: str) -> None:
    message = "rule CAP001 crashed: ValueError: boom on alpha while checking ClusterQueue alpha"
    if fmt == "text":
        assert f"clusters/mini/queues.yaml:1: error INTERNAL: {message} [mini]" in out
        verdict = out.splitlines()[-1]
        assert verdict.startswith("INCOMPLETE (1 check(s) crashed") and not verdict.startswith("ok")
    elif fmt == "json":
        data = json.loads(out)
        internal = [f for f in data["findings"] if f["rule"] == "INTERNAL"]
        assert internal and internal[0]["message"] == message and internal[0]["severity"] == "error"
        assert internal[0]["path"] == "clusters/mini/queues.yaml" and "report" in internal[0]["hint"]
        assert data["summary"]["crashed"] == 1 and data["summary"]["errors"] >= 1
    elif fmt == "sarif":
        run = json.loads(out)["runs"][0]
        assert any(r["ruleId"] == "INTERNAL" and message in r["message"]["text"] for r in run["results"])
        assert "INTERNAL" in [rule["id"] for rule in run["tool"]["driver"]["rules"]]
        assert run["invocations"] == [{"executionSuccessful": False}]
    elif fmt == "junit":
        suites = ElementTree.fromstring(out.split("\n", 1)[1])
        errors = suites.findall(".//error")
        assert suites.get("errors") == "1" and [e.get("type") for e in errors] == ["INTERNAL"]
        assert message in errors[0].get("message")
    else:
        assert any(
            line.startswith("::error file=clusters/mini/queues.yaml,line=1,title=INTERNAL::")
            and message in line
            for line in out.splitlines()
        )


def test_one_crash_hides_no_other_finding(minirepo, monkeypatch) -> None:
    clean = {(f.rule, f.path, f.line) for f in pipeline.run(minirepo).findings}
    _crash_rule(monkeypatch, "SEC003")  # the one rule that fires on the minirepo
    crashed = pipeline.run(minirepo)
    assert {f.rule for f in crashed.internal} == {"INTERNAL"} and len(crashed.internal) == 1
    assert clean - {("SEC003", "clusters/mini/kustomization.yaml", 4)} <= {
        (f.rule, f.path, f.line) for f in crashed.findings
    }


def test_findings_reported_before_the_crash_are_kept(minirepo, monkeypatch) -> None:
    _crash_rule(monkeypatch, "SEC003", after=1)
    result = pipeline.run(minirepo)
    assert {"SEC003", "INTERNAL"} <= {f.rule for f in result.findings}
    assert result.crashes == [
        "rule SEC003 crashed: ValueError: boom on alpha while checking ClusterQueue alpha"
    ]


def test_crashing_stage_is_an_internal_finding(minirepo, monkeypatch, capsys) -> None:
    def broken_build(*args, **kwargs):
        raise KeyError("spec")

    monkeypatch.setattr(pipeline, "build_cluster", broken_build)
    code, out, _err = _run(["validate", "--repo", str(minirepo), "--format", "json"], capsys)
    assert code == 2
    internal = [f for f in json.loads(out)["findings"] if f["rule"] == "INTERNAL"]
    assert internal[0]["message"].startswith("stage model crashed: KeyError: 'spec'")
    assert internal[0]["path"] == "clusters/mini/cluster.yaml" and internal[0]["cluster"] == "mini"


def test_generators_refuse_an_incomplete_model(minirepo, monkeypatch, capsys) -> None:
    monkeypatch.setattr(pipeline, "build_cluster", lambda *args, **kwargs: 1 / 0)
    code, _out, err = _run(["docs", "--check", "--repo", str(minirepo)], capsys)
    assert code == 2 and "stage model crashed: ZeroDivisionError" in err and "incomplete" in err


# --- the CLI: any unexpected exception is exit 2 and one paragraph ---------------------------------------


def _explode(*args, **kwargs):
    raise RuntimeError("kaboom\nsecond line")


@pytest.mark.parametrize(
    "argv, command",
    [
        (["docs", "--check"], "docs"),
        (["inspect"], "inspect"),
        (["upgrade", "status"], "upgrade status"),
        (["diff", "--base", "HEAD"], "diff"),
    ],
)
def test_unexpected_exception_is_exit_two_with_one_paragraph(
    argv, command, tmp_path, monkeypatch, capsys
) -> None:
    repo = _git_repo(MINIREPO, tmp_path / "repo")
    monkeypatch.setattr(pipeline, "run", _explode)
    monkeypatch.delenv("GPUPOLICY_DEBUG", raising=False)
    code, _out, err = _run([*argv, "--repo", str(repo)], capsys)
    assert code == 2
    assert err.strip().splitlines()[-1] == (
        f"gpupolicy: internal error in {command}: RuntimeError: kaboom "
        "second "
        "line (please report; run with GPUPOLICY_DEBUG=1 for the "
        "traceback)"
    )


def test_validate_crash_still_writes_the_report(minirepo, tmp_path, monkeypatch, capsys) -> None:
    monkeypatch.setattr(pipeline, "run", _explode)
    report = tmp_path / "out.sarif"
    code, _out, err = _run(
        ["validate", "--repo", str(minirepo), "--format", "sarif", "--output", str(report)], capsys
    )
    assert code == 2 and "crashed: RuntimeError: kaboom" in err
    results = json.loads(report.read_text())["runs"][0]["results"]
    assert [r["ruleId"] for r in results] == ["INTERNAL"]


def test_debug_env_prints_the_traceback(minirepo, monkeypatch, capsys) -> None:
    monkeypatch.setattr(pipeline, "run", _explode)
    monkeypatch.setenv("GPUPOLICY_DEBUG", "1")
    assert main(["docs", "--check", "--repo", str(minirepo)]) == 2
    assert "Traceback" in capsys.readouterr().err


def test_console_script_exit_code_is_two_not_one(minirepo) -> None:
    """Through the real entry point: an uncaught exception would exit 1 (Python's code), which CI reads as
    error findings."""
    broken = minirepo / "clusters" / "mini" / "queues.yaml"
    broken.write_text(broken.read_text().replace("nominalQuota: 16", "nominalQuota: 1e400"))
    proc = subprocess.run(
        [sys.executable, "-m", "gpupolicy", "validate", "--repo", str(minirepo)],
        capture_output=True,
        text=True,
        check=False,
        timeout=120,
    )
    assert proc.returncode == 1 and "Traceback" not in proc.stderr  # a finding now, not a crash
    assert "CAP016" in proc.stdout and "INTERNAL" not in proc.stdout  # 1e400 is past int64: refused


# --- hostile inputs: a finding with file and line, or exit 2 with a message --------------------------------


def _git_repo(source: Path, target: Path, fixture: Path | None = None) -> Path:
    repo = build_fixture_repo(fixture, target) if fixture else copy_repo(source, target)
    git = ["git", "-C", str(repo), "-c", "user.email=t@t", "-c", "user.name=t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "base"], check=True)
    return repo


def _replace(path: Path, old: str, new: str) -> None:
    text = path.read_text()
    assert old in text, f"{old!r} not in {path}"
    path.write_text(text.replace(old, new, 1))


def _hostile_quota(repo: Path) -> None:
    _replace(repo / "clusters/mini/queues.yaml", "nominalQuota: 16", "nominalQuota: 1e400")


def _hostile_date(repo: Path) -> None:
    plan = repo / "policies/upgrades/plan.yaml"
    text = plan.read_text()
    planned = text[text.index("planned: ") :].split("\n", 1)[0]
    plan.write_text(text.replace(planned, 'planned: "2026-02-30"', 1))


def _hostile_dashboard(repo: Path) -> None:
    (repo / "clusters/mini/obs/gpu.json").write_text('{"panels": ' + "[" * 5000 + "]" * 5000 + "}")


def _hostile_keys(repo: Path) -> None:
    _replace(repo / "pools/mini-a100/pool.yaml", "zones: {local-1a: 2}", "zones: {1: 2, local-1a: 2}")


HOSTILE = {  # name: (base, fixture laid over it, mutation, the finding validate must report)
    "float-overflow-quota": (MINIREPO, None, _hostile_quota, ("CAP016", "clusters/mini/queues.yaml", 18)),
    "date-that-does-not-exist": (UPGRADES, None, _hostile_date, ("UPG001", "policies/upgrades/plan.yaml", 0)),
    "deeply-nested-dashboard": (
        MINIREPO,
        DASHBOARD_FIXTURE,
        _hostile_dashboard,
        # the generator's file (issue 14)
        ("OBS004", "clusters/mini/obs/gpu.json", 0),
    ),
    "non-string-key-in-pool": (MINIREPO, None, _hostile_keys, ("SCHEMA005", "pools/mini-a100/pool.yaml", 7)),
}


@pytest.fixture(params=sorted(HOSTILE))
def hostile(request, tmp_path: Path) -> tuple[Path, tuple]:
    base, fixture, mutate, expected = HOSTILE[request.param]
    repo = _git_repo(base, tmp_path / "repo", fixture)
    mutate(repo)
    return repo, expected


def test_validate_reports_the_hostile_input_at_its_line(hostile, capsys) -> None:
    repo, (rule, path, line) = hostile
    code, out, _err = _run(["validate", "--repo", str(repo), "--format", "json"], capsys)
    findings = json.loads(out)["findings"]
    assert code == 1 and not [f for f in findings if f["rule"] == "INTERNAL"]
    assert any(
        f["rule"] == rule and f["path"] == path and (not line or f["line"] == line) for f in findings
    ), json.dumps(findings, indent=1)[:3000]


@pytest.mark.parametrize(
    "argv",
    [["diff", "--base", "HEAD"], ["docs", "--check"], ["upgrade", "status"], ["inspect"]],
    ids=lambda argv: " ".join(argv),
)
def test_other_commands_survive_the_hostile_input(argv, hostile, capsys) -> None:
    repo, _expected = hostile
    code, _out, err = _run([*argv, "--repo", str(repo)], capsys)
    assert code in (0, 1, 2)
    assert "internal error" not in err, err


def test_simulate_survives_a_float_overflow_quota(tmp_path, capsys) -> None:
    repo = copy_repo(MINIREPO, tmp_path / "repo")
    _hostile_quota(repo)
    code, _out, err = _run(
        ["simulate", "--repo", str(repo), "--no-plots", "--out", str(tmp_path / "out"), "--limit", "50"],
        capsys,
    )
    assert code in (0, 1) and "internal error" not in err, err


# --- traces ---------------------------------------------------------------------------------------------

TRACE_HEAD = b"job_id,submit,duration,gpus,team\n"


@pytest.mark.parametrize(
    "body, message",
    [
        (b"j1,0,100,1,ok\n" * 3000 + b"j2,0,100,1,caf\xe9\n", ":3002: not UTF-8 (column 'team')"),
        (b"j1,0,100,1," + b"x" * 200_000 + b"\n", ":2: not a CSV row: field larger than field limit"),
        (b"j1,0,100,1," + b"x" * 5_000 + b"\n", ":2: a field of 5,000 characters (at most 1,024)"),
        (b"j1,0," + b"9" * 5_000 + b",1,a\n", ":2: a field of 5,000 characters"),
    ],
    ids=["non-utf8", "over-csv-limit", "overlong-field", "huge-number"],
)
def test_hostile_trace_is_a_clean_error_with_file_and_row(body, message, tmp_path, capsys) -> None:
    trace = tmp_path / "trace.csv"
    trace.write_bytes(TRACE_HEAD + body)
    code, _out, err = _run(
        [
            "simulate",
            "--repo",
            str(MINIREPO),
            "--trace",
            str(trace),
            "--no-plots",
            "--out",
            str(tmp_path / "out"),
        ],
        capsys,
    )
    assert code == 2 and f"{trace}{message}" in err, err


# --- audit snapshots ------------------------------------------------------------------------------------


def _snapshot(tmp_path: Path, name: str, edit) -> Path:
    folder = copy_repo(SNAPSHOT, tmp_path / "snapshot")
    data = json.loads((folder / name).read_text())
    edit(data["items"])
    (folder / name).write_text(json.dumps(data))
    return folder


def _set(item: dict, path: tuple, value) -> None:
    for key in path[:-1]:
        item = item[key]
    item[path[-1]] = value


@pytest.mark.parametrize(
    "name, edit, message",
    [
        (
            "pods.json",
            lambda items: _set(items[0], ("metadata",), ["a", "list"]),
            "pods.json: items[0].metadata: expected a mapping, got list",
        ),
        (
            "pods.json",
            lambda items: _set(
                items[0], ("spec", "containers", 0, "resources"), {"limits": {"nvidia.com/gpu": "eight"}}
            ),
            "items[0].spec.containers[0].resources.limits.nvidia.com/gpu: expected a number of devices",
        ),
        (
            "pods.json",
            lambda items: _set(
                items[0], ("spec", "containers", 0, "resources"), {"limits": {"nvidia.com/gpu": "1e400"}}
            ),
            "nvidia.com/gpu: expected a number of devices from 0 to 1,000,000, got '1e400'",
        ),
        (
            "nodes.json",
            lambda items: _set(items[0], ("metadata", "labels"), {"gpupolicy.io/pool": 7}),
            "nodes.json: items[0].metadata.labels.gpupolicy.io/pool: expected a string, got 7",
        ),
        (
            "workloads.json",
            lambda items: _set(items[-1], ("metadata", "creationTimestamp"), "2025-02-30T00:00:00Z"),
            "workloads.json: items[1].metadata.creationTimestamp: expected an RFC 3339 time",
        ),
        (
            "workloads.json",
            lambda items: _set(items[-1], ("status", "conditions"), "Admitted"),
            "workloads.json: items[1].status.conditions: expected a list, got 'Admitted'",
        ),
    ],
    ids=[
        "list-for-metadata",
        "word-for-gpus",
        "overflowing-gpus",
        "number-for-label",
        "no-such-date",
        "string-for-list",
    ],
)
def test_wrong_shaped_snapshot_names_file_and_field(name, edit, message, tmp_path, capsys) -> None:
    folder = _snapshot(tmp_path, name, edit)
    code, _out, err = _run(
        ["audit", "--repo", str(MINIREPO), "--snapshot", str(folder), "--now", "2025-06-01T12:00:00Z"], capsys
    )
    assert code == 2 and message in err, err


def test_snapshot_json_that_python_cannot_read_is_a_clean_error(tmp_path, capsys) -> None:
    folder = copy_repo(SNAPSHOT, tmp_path / "snapshot")
    (folder / "nodes.json").write_text('{"items": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, _out, err = _run(["audit", "--repo", str(MINIREPO), "--snapshot", str(folder)], capsys)
    assert code == 2 and "nodes.json: cannot read" in err


def test_pending_age_is_never_a_made_up_zero(tmp_path, capsys) -> None:
    folder = _snapshot(
        tmp_path, "workloads.json", lambda items: items[-1]["metadata"].pop("creationTimestamp")
    )
    code, out, _err = _run(
        ["audit", "--repo", str(MINIREPO), "--snapshot", str(folder), "--now", "2025-06-01T12:00:00Z"], capsys
    )
    assert code == 1 and "unknown time" in out and "0.0 h" not in out


@pytest.mark.parametrize("now", ["2025-02-30T00:00:00Z", "yesterday"])
def test_audit_now_must_be_a_real_time(now, capsys) -> None:
    code, _out, err = _run(
        ["audit", "--repo", str(MINIREPO), "--snapshot", str(SNAPSHOT), "--now", now], capsys
    )
    assert code == 2 and f"--now {now!r} is not a valid ISO time" in err


def test_audit_now_without_a_zone_is_utc(capsys) -> None:
    code, out, _err = _run(
        ["audit", "--repo", str(MINIREPO), "--snapshot", str(SNAPSHOT), "--now", "2025-06-01T12:00:00"],
        capsys,
    )
    assert code == 1 and "nlp/job-train-2 (queue nlp): 5.0 h" in out


@pytest.mark.parametrize(
    "fmt, expected",
    [
        ("markdown", "INCOMPLETE: 1 check(s) crashed on the head"),
        ("junit", '<error message="rule CAP001 crashed'),
        ("github", "title=INTERNAL::rule CAP001 crashed"),
    ],
)
def test_diff_shows_a_crash_on_both_sides_and_exits_two(fmt, expected, tmp_path, monkeypatch, capsys) -> None:
    repo = _git_repo(MINIREPO, tmp_path / "repo")
    _crash_rule(monkeypatch, "CAP001")  # crashes on the base and on the head: not "introduced", still shown
    code, out, _err = _run(["diff", "--base", "HEAD", "--repo", str(repo), "--format", fmt], capsys)
    assert code == 2 and expected in out, out[-3000:]


# --- quantities beyond int64 ------------------------------------------------------------------------------


@pytest.mark.parametrize("quota", ["1e5000", "9223372036854775808", "8Ei"])
def test_quota_beyond_int64_is_a_finding_and_every_command_finishes(quota, tmp_path, capsys) -> None:
    """1e5000 was a 5,001-digit int in the model, which inspect and docs could not print (Python's int max
    str digits): exit 2. Now the quantity is refused (CAP016) and every command ends with 0 or 1."""
    repo = _git_repo(MINIREPO, tmp_path / "repo")
    _replace(repo / "clusters/mini/queues.yaml", "nominalQuota: 16", f'nominalQuota: "{quota}"')
    code, out, _err = _run(["validate", "--repo", str(repo), "--format", "json"], capsys)
    findings = json.loads(out)["findings"]
    assert code == 1 and any(
        f["rule"] == "CAP016"
        and f["path"] == "clusters/mini/queues.yaml"
        and f["line"] == 18
        and "beyond" in f["message"]
        for f in findings
    ), findings
    for argv in (
        ["inspect"],
        ["inspect", "--format", "json"],
        ["docs", "--check"],
        ["diff", "--base", "HEAD"],
    ):
        code, _out, err = _run([*argv, "--repo", str(repo)], capsys)
        assert code in (0, 1) and "internal error" not in err, (argv, code, err)
