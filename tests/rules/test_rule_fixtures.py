"""Every rule fires on each of its bad fixtures and stays silent on each of its good ones.

A fixture is a folder under tests/rules/<ID>/good/ or bad/ whose files are laid over the base repository
(tests/fixtures/minirepo, or the folder named in the fixture's `base` file). A file `<path>.delete` removes
<path> from the copy. An optional `expect.yaml` lists findings that must be among the rule's findings:
`[{path: clusters/mini/queues.yaml, line: 18, message: "substring"}]`, optionally with `hint` (a substring
of the hint) and `hint_lacks` (a substring the hint must not hold, such as the value already set). An optional `crash` file names a
registered rule whose check is made to raise for that fixture: no repository content should crash a rule, so
this is how INTERNAL (the finding of a crashed check) gets its bad fixture. No other fixture may crash a check.
"""

from __future__ import annotations

import dataclasses
import shutil
from pathlib import Path

import pytest
import yaml

from gpupolicy import docsgen, pipeline
from gpupolicy.rules import all_rules

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
DEFAULT_BASE = REPO / "tests" / "fixtures" / "minirepo"
SPECIAL = {"expect.yaml", "base", "README.md", "crash"}


def _fixtures(kind: str) -> list[Path]:
    return sorted(p for p in HERE.glob(f"*/{kind}/*") if p.is_dir())


def build_fixture_repo(fixture: Path, target: Path) -> Path:
    base_file = fixture / "base"
    base = (REPO / base_file.read_text().strip()) if base_file.is_file() else DEFAULT_BASE
    shutil.copytree(base, target, symlinks=True)
    for source in sorted(fixture.rglob("*")):
        rel = source.relative_to(fixture)
        if source.is_dir() or rel.as_posix() in SPECIAL:
            continue
        destination = target / rel
        if source.name.endswith(".delete"):
            doomed = destination.with_name(source.name[: -len(".delete")])
            shutil.rmtree(doomed) if doomed.is_dir() else doomed.unlink(missing_ok=True)
            continue
        destination.parent.mkdir(parents=True, exist_ok=True)
        if source.is_symlink():
            destination.unlink(missing_ok=True)
            destination.symlink_to(source.readlink())
        else:
            shutil.copyfile(source, destination)
    return target


def _rule_id(fixture: Path) -> str:
    return fixture.parents[1].name


def _findings_of(fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> list:
    repo = build_fixture_repo(fixture, tmp_path / "repo")
    crash_file = fixture / "crash"
    if crash_file.is_file():
        _make_rule_raise(crash_file.read_text().strip(), monkeypatch)
    result = pipeline.run(repo, pages=docsgen.page_drift)  # as `validate` runs it
    if _rule_id(fixture) != "INTERNAL":
        assert not result.crashes, result.crashes
    return [f for f in result.findings if f.rule == _rule_id(fixture)]


def _make_rule_raise(rule_id: str, monkeypatch: pytest.MonkeyPatch) -> None:
    def check(fleet):
        raise ValueError(f"{rule_id} made to crash by the fixture")
        yield  # a generator, like every rule's check

    rules = all_rules()  # the cached registry the pipeline reads
    monkeypatch.setitem(rules, rule_id, dataclasses.replace(rules[rule_id], check=check))


@pytest.mark.parametrize("fixture", _fixtures("bad"), ids=lambda p: f"{p.parents[1].name}/bad/{p.name}")
def test_rule_fires_on_bad_fixture(fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = _findings_of(fixture, tmp_path, monkeypatch)
    assert found, f"{_rule_id(fixture)} did not fire on {fixture.name}"
    expect_file = fixture / "expect.yaml"
    for expected in yaml.safe_load(expect_file.read_text()) if expect_file.is_file() else []:
        assert any(_matches(f, expected) for f in found), f"no finding like {expected} in {found}"


@pytest.mark.parametrize("fixture", _fixtures("good"), ids=lambda p: f"{p.parents[1].name}/good/{p.name}")
def test_rule_silent_on_good_fixture(fixture: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    found = _findings_of(fixture, tmp_path, monkeypatch)
    assert not found, f"{_rule_id(fixture)} fired on a good fixture: {found}"


def _matches(finding, expected: dict) -> bool:
    return (finding.path == expected.get("path", finding.path)
            and finding.line == expected.get("line", finding.line)
            and expected.get("message", "") in finding.message
            and expected.get("hint", "") in finding.hint
            and ("hint_lacks" not in expected or expected["hint_lacks"] not in finding.hint))


def test_every_rule_has_good_and_bad_fixtures() -> None:
    missing = []
    for rule_id in all_rules():
        for kind in ("good", "bad"):
            folder = HERE / rule_id / kind
            if not folder.is_dir() or not any(p.is_dir() for p in folder.iterdir()):
                missing.append(f"{rule_id}/{kind}")
    assert not missing, f"rules without fixtures: {', '.join(missing)}"
