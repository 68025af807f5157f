"""Issue 29 in the pull-request comment: `diff` judges the head by the base's guardrail configuration and says
in its headline that the configuration changed; its guarantees ("quotas still fit the pools") count what the
base's configuration reports and what exceptions accept; content in the Markdown cannot open an HTML comment,
inject
HTML or break a table (one escaping helper, `mdescape`)."""

from __future__ import annotations

import json
from pathlib import Path

import guardfleet
import pytest
from support import git

from gpupolicy import diff, pipeline
from gpupolicy.cli import main
from gpupolicy.report import mdescape

CONFIG = "apiVersion: gpupolicy/v1\nkind: Config\n"


@pytest.fixture
def change(tmp_path: Path) -> Path:
    return guardfleet.commit_base(guardfleet.fleet(tmp_path / "repo"))


def _diff(repo: Path, capsys: pytest.CaptureFixture, *args: str) -> tuple[int, str]:
    code = main(["diff", "--repo", str(repo), "--base", "main", "--no-cache", *args])
    return code, capsys.readouterr().out


def test_a_change_that_disables_cap001_is_judged_by_the_base_and_says_so(
    change: Path, capsys: pytest.CaptureFixture
) -> None:
    guardfleet.raise_alpha(change, to=600)  # 3750% of the pool's 16 GPUs; the namespace quota follows
    team = change / "policies/base/team.yaml"
    team.write_text(
        team.read_text().replace('requests.nvidia.com/gpu: "8"', 'requests.nvidia.com/gpu: "600"')
    )
    (change / "gpupolicy.yaml").write_text(
        CONFIG + 'disable:\n  - {rule: CAP001, paths: ["**"], reason: "quotas are checked elsewhere"}\n'
    )
    code, text = _diff(change, capsys, "--format", "json")
    result = json.loads(text)
    assert code == 1
    assert result["headline"].startswith(
        "guardrail configuration changed (gpupolicy.yaml): its effect is deferred until merged"
    )
    assert "quotas still fit the pools" not in result["headline"]
    assert result["guardrail_changes"] == ["gpupolicy.yaml"]
    assert {"CAP001", "CFG003"} <= {f["rule"] for f in result["findings"]["introduced"]}
    _code, markdown = _diff(change, capsys)
    assert (
        "> **Guardrail configuration changed** in `gpupolicy.yaml`: this comparison applies the base's "
        "configuration" in markdown
    )


def test_a_waived_quota_over_capacity_is_no_guarantee(change: Path) -> None:
    base = pipeline.run(change)
    guardfleet.raise_alpha(change)
    team = change / "policies/base/team.yaml"  # the namespace quota follows: CAP001 is the head's only error
    team.write_text(team.read_text().replace('requests.nvidia.com/gpu: "8"', 'requests.nvidia.com/gpu: "24"'))
    (change / "policies/exceptions.yaml").write_text(
        "apiVersion: gpupolicy/v1\nkind: Exceptions\nexceptions:\n  - rule: CAP001\n"
        "    path: clusters/mini/queues.yaml\n    reason: alpha overcommits until the nodes arrive\n"
        f"    owner: platform-oncall\n    expires: '{guardfleet.in_days(30)}'\n"
    )
    head = pipeline.run(change)
    assert [item.finding.rule for item in head.waived] == ["CAP001"] and not head.errors
    result = diff.compare(
        base.fleet, head.fleet, base.findings, head.findings, "b", "h", ("CAP001", "CAP005"), head.waived
    )
    assert "quotas still fit the pools" not in result.headline


def test_content_cannot_hide_the_findings_or_inject_html(change: Path, capsys: pytest.CaptureFixture) -> None:
    pool = change / "pools/mini-a100/pool.yaml"
    pool.write_text(
        pool.read_text().replace(
            "  name: mini-a100\n",
            "  name: mini-a100\n  description: \"<!-- | <img src=x> **bold** `tick` [l](u)\"\n",
        )
    )
    guardfleet.raise_alpha(change)
    git(change, "add", "-A")
    git(change, "commit", "-q", "-m", "hostile description")
    code, markdown = _diff(change, capsys, "--head", "HEAD")
    assert code == 1
    assert "<!--" not in markdown and "<img" not in markdown
    assert "&lt;!-- \\| &lt;img src=x> \\*\\*bold\\*\\* \\`tick\\` \\[l\\](u)" in markdown
    assert "#### Findings" in markdown
    row = next(line for line in markdown.splitlines() if "&lt;!--" in line)
    assert row.count(" | ") == len(["pool", "field", "old", "new"]) - 1  # the description stayed in its cell


@pytest.mark.parametrize(
    ("value", "escaped"),
    [
        ("a|b", "a\\|b"),
        ("two\nlines", "two lines"),
        ("<!-- x -->", "&lt;!-- x -->"),
        ("R&D", "R&amp;D"),
        ("_x_ *y*", "\\_x\\_ \\*y\\*"),
        ("[t](javascript:x)", "\\[t\\](javascript:x)"),
    ],
)
def test_text_escapes(value: str, escaped: str) -> None:
    assert mdescape.text(value) == escaped


def test_code_spans_and_links() -> None:
    assert mdescape.code("a`b|c") == "``a`b\\|c``"
    assert mdescape.code("`x`") == "`` `x` ``"
    assert mdescape.text("# heading", line_start=True) == "\\# heading"
    assert mdescape.link("CAP001", "javascript:alert(1)") == "CAP001"
    assert (
        mdescape.link("CAP001", "https://x.example/rules/CAP001 (x)")
        == "[CAP001](https://x.example/rules/CAP001%20%28x%29)"
    )
    assert mdescape.html_text('<b a="1">') == "&lt;b a=&quot;1&quot;&gt;"
