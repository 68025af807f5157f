"""The alert rules in policies/observability/alerts, checked and unit-tested with promtool.

promtool reads plain rule files, not PrometheusRule objects: each PrometheusRule's `spec` becomes
`<metadata.name>.rules.yaml` in a temporary directory next to copies of tests/alerts/*.test.yaml, which name
those files in `rule_files`. Unit tests run on a copy without annotations (they test when alerts fire; the
prose is checked by `promtool check rules` and the OBS rules).
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml

from gpupolicy.domain.observability import (
    alerts_in,
    dashboard_queries,
    lookup,
    metric_catalog,
    metric_names,
    parse_dcgm_csv,
    parse_runbook,
    promtool_rule_file,
    runbook_page_for_url,
    runbook_url,
)
from gpupolicy.infra.repopath import Reader
from gpupolicy.infra.siteconfig import read_site_url

REPO = Path(__file__).resolve().parents[1]
ALERTS_DIR = REPO / "policies" / "observability" / "alerts"
TESTS_DIR = REPO / "tests" / "alerts"
DCGM_CSV = REPO / "policies" / "gpu-operator" / "dcgm-metrics.csv"
PROMTOOL_DEFAULT = "/usr/bin/promtool"


def _prometheus_rules() -> list[dict]:
    bodies = []
    for path in sorted(ALERTS_DIR.glob("*.yaml")):
        for doc in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            if isinstance(doc, dict) and doc.get("kind") == "PrometheusRule":
                bodies.append(doc)
    return bodies


def _test_files() -> list[Path]:
    return sorted(TESTS_DIR.glob("*.test.yaml"))


def _rule_file_name(body: dict) -> str:
    return f"{body['metadata']['name']}.rules.yaml"


@pytest.fixture(scope="module")
def promtool() -> str:
    found = shutil.which("promtool") or (PROMTOOL_DEFAULT if Path(PROMTOOL_DEFAULT).exists() else None)
    if found:
        return found
    reason = "promtool not found on PATH or at /usr/bin/promtool (install the prometheus package)"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must run the alert unit tests")
    pytest.skip(reason)


def _write_rule_files(directory: Path, keep_annotations: bool) -> list[Path]:
    directory.mkdir(parents=True, exist_ok=True)
    written = []
    for body in _prometheus_rules():
        target = directory / _rule_file_name(body)
        target.write_text(
            yaml.safe_dump(promtool_rule_file(body, keep_annotations), sort_keys=False), encoding="utf-8"
        )
        written.append(target)
    return written


@pytest.fixture(scope="module")
def unit_test_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    directory = tmp_path_factory.mktemp("promtool-unit")
    _write_rule_files(directory, keep_annotations=False)
    for test_file in _test_files():
        shutil.copy(test_file, directory / test_file.name)
    return directory


def _run(command: list[str], cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


def test_the_repository_ships_alert_rules_and_tests() -> None:
    assert _prometheus_rules(), f"no PrometheusRule in {ALERTS_DIR}"
    assert _test_files(), f"no promtool unit tests in {TESTS_DIR}"


def test_extracted_rule_file_names_are_unique() -> None:
    names = [_rule_file_name(body) for body in _prometheus_rules()]
    assert len(names) == len(set(names)), f"two PrometheusRules share a metadata.name: {sorted(names)}"


def test_promtool_check_rules(promtool: str, tmp_path: Path) -> None:
    files = _write_rule_files(tmp_path, keep_annotations=True)
    result = _run([promtool, "check", "rules", *map(str, files)], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("test_file", _test_files(), ids=lambda p: p.name)
def test_promtool_unit_tests(promtool: str, unit_test_dir: Path, test_file: Path) -> None:
    result = _run([promtool, "test", "rules", test_file.name], unit_test_dir)
    assert result.returncode == 0, result.stdout + result.stderr


def test_unit_tests_name_only_extracted_rule_files() -> None:
    known = {_rule_file_name(body) for body in _prometheus_rules()}
    for test_file in _test_files():
        listed = yaml.safe_load(test_file.read_text(encoding="utf-8")).get("rule_files") or []
        unknown = sorted(set(listed) - known)
        assert not unknown, f"{test_file.name} names rule files no PrometheusRule produces: {unknown}"


def _expectations() -> dict[str, set[str]]:
    """alert name -> {"fires", "quiet"}: which outcomes some unit test asserts."""
    seen: dict[str, set[str]] = {}
    for test_file in _test_files():
        for case in yaml.safe_load(test_file.read_text(encoding="utf-8")).get("tests") or []:
            for check in case.get("alert_rule_test") or []:
                outcome = "fires" if check.get("exp_alerts") else "quiet"
                seen.setdefault(check["alertname"], set()).add(outcome)
    return seen


def test_every_alert_is_proven_to_fire_and_to_stay_quiet() -> None:
    seen = _expectations()
    alerts = [alert.name for body in _prometheus_rules() for alert in alerts_in(body)]
    gaps = [
        f"{name}: never asserted to {need}"
        for name in alerts
        for need in ("fires", "quiet")
        if need not in seen.get(name, set())
    ]
    assert not gaps, "\n".join(gaps)


def test_every_alert_links_its_own_runbook_page() -> None:
    site_url, problem = read_site_url(Reader(REPO))
    assert site_url, problem
    for body in _prometheus_rules():
        for alert in alerts_in(body):
            assert alert.runbook_url == runbook_url(site_url, alert.name), alert.name
            page = runbook_page_for_url(site_url, alert.runbook_url)
            assert page and (REPO / page).is_file(), f"{alert.name}: no page {page}"


def test_every_metric_an_alert_reads_has_a_provider() -> None:
    catalog = metric_catalog(parse_dcgm_csv(DCGM_CSV.read_text(encoding="utf-8")))
    missing = [
        f"{alert.name}: {metric}"
        for body in _prometheus_rules()
        for alert in alerts_in(body)
        for metric in metric_names(alert.expr)
        if lookup(catalog, metric) is None
    ]
    assert not missing, "metrics nobody exports:\n" + "\n".join(missing)


# --- the helpers the checks above rely on -------------------------------------------------------------


@pytest.mark.parametrize(
    ("expr", "expected"),
    [
        ("up", ["up"]),
        ('up{job="a"} == 0', ["up"]),
        ("sum by (cluster_queue) (rate(x_bucket[5m]))", ["x_bucket"]),
        ("sum(rate(x_total[5m])) without (pod, node)", ["x_total"]),
        ("a * on (node) group_left (label_pool) b", ["a", "b"]),
        ("a * ignoring(gpu) group_right b", ["a", "b"]),
        ("a and on() b unless c or d", ["a", "b", "c", "d"]),
        ('label_replace(up, "node", "$1", "instance", "(.*)")', ["up"]),
        ('count_values("xid", DCGM_FI_DEV_XID_ERRORS)', ["DCGM_FI_DEV_XID_ERRORS"]),
        ("x offset 1h > 1e3 and y @ start()", ["x", "y"]),
        ("max_over_time((count by (h) (t))[6h:5m])", ["t"]),
        ('{__name__="m", job="j"}', ["m"]),
        ('a{l="}not_a_metric{"} + b', ["a", "b"]),
        ("a # b is a comment\n+ c", ["a", "c"]),
        ("rate(a[$__rate_interval]) > $threshold", ["a"]),
        ("x BY (y)", ["x"]),
        ("histogram_quantile(0.95, sum by (le) (rate(h_bucket[1h]))) > inf", ["h_bucket"]),
        ("floor(x / 32) % 4 > 0x10", ["x"]),
        ("a + a", ["a"]),
    ],
)
def test_metric_names(expr: str, expected: list[str]) -> None:
    assert metric_names(expr) == expected


def test_dcgm_csv_parser_reports_bad_lines_with_their_numbers() -> None:
    config = parse_dcgm_csv(
        "# comment\n"
        "DCGM_FI_DEV_GPU_TEMP, gauge, GPU temperature (in C).\n"
        "DCGM_FI_DRIVER_VERSION, label, Driver Version\n"
        "DCGM_FI_DEV_GPU_TEMP, gauge, again\n"
        "NOT_A_FIELD, gauge, x\n"
        "DCGM_FI_DEV_FB_USED, histogram, x\n"
        "DCGM_FI_DEV_FB_FREE\n"
    )
    assert [c.field for c in config.counters] == ["DCGM_FI_DEV_GPU_TEMP", "DCGM_FI_DRIVER_VERSION"]
    assert config.metrics == {"DCGM_FI_DEV_GPU_TEMP"}  # label fields become labels, not metrics
    assert [line for line, _ in config.problems] == [4, 5, 6, 7]
    assert "listed twice (first on line 2)" in config.problems[0][1]


def test_the_shipped_dcgm_csv_parses_cleanly() -> None:
    config = parse_dcgm_csv(DCGM_CSV.read_text(encoding="utf-8"))
    assert not config.problems, config.problems
    assert "DCGM_FI_DEV_ECC_DBE_VOL_TOTAL" in config.metrics


def test_runbook_sections_ignore_code_fences() -> None:
    page = parse_runbook("# Alert\n## Meaning\ntext\n```\n## Impact\n```\n## Diagnosis\n")
    assert page.title == "Alert"
    assert page.sections == ("Meaning", "Diagnosis")
    assert page.missing_sections() == ["Impact", "Mitigation"]


@pytest.mark.parametrize(
    ("url", "page"),
    [
        ("https://gpu-platform.example.com/runbooks/GPUFallenOffBus/", "docs/runbooks/GPUFallenOffBus.md"),
        ("https://gpu-platform.example.com/runbooks/GPUFallenOffBus", "docs/runbooks/GPUFallenOffBus.md"),
        (
            "https://gpu-platform.example.com/runbooks/GPUFallenOffBus/#impact",
            "docs/runbooks/GPUFallenOffBus.md",
        ),
        ("https://elsewhere.example.com/runbooks/GPUFallenOffBus/", None),
        ("https://gpu-platform.example.com/runbooks/a/b/", None),
        ("https://gpu-platform.example.com/runbooks/", None),
    ],
)
def test_runbook_page_for_url(url: str, page: str | None) -> None:
    assert runbook_page_for_url("https://gpu-platform.example.com/", url) == page
    assert runbook_page_for_url("", url) is None  # no site_url: no URL is a page of the site


DASHBOARDS_DIR = REPO / "policies" / "observability" / "dashboards"
_GRAFANA_VARIABLE = re.compile(r"\$\{?(\w+)\}?")


def _as_plain_promql(expr: str) -> str:
    """Grafana variables replaced by values Prometheus accepts: intervals by 5m, selectors by `.*`."""
    return _GRAFANA_VARIABLE.sub(lambda m: "5m" if m.group(1).startswith("__") else ".*", expr)


def test_dashboard_queries_are_valid_promql(promtool: str, tmp_path: Path) -> None:
    rules = []
    for path in sorted(DASHBOARDS_DIR.glob("*.json")):
        for index, query in enumerate(dashboard_queries(json.loads(path.read_text(encoding="utf-8")))):
            rules.append(
                {
                    "record": f"dashboard:{path.stem.replace('-', '_')}:{index}",
                    "expr": _as_plain_promql(query.expr),
                }
            )
    assert rules, f"no dashboard queries in {DASHBOARDS_DIR}"
    rule_file = tmp_path / "dashboards.rules.yaml"
    rule_file.write_text(
        yaml.safe_dump({"groups": [{"name": "dashboards", "rules": rules}]}), encoding="utf-8"
    )
    result = _run([promtool, "check", "rules", str(rule_file)], tmp_path)
    assert result.returncode == 0, result.stdout + result.stderr
