"""`gpupolicy mig check`: fixture files drive the cases (good/ pass, bad/ list `# expect: <line>: <text>`)."""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import pytest

from gpupolicy.commands import mig as mig_command

FIXTURES = Path(__file__).parent / "fixtures" / "mig"
SHARED = Path(__file__).resolve().parents[1] / ".." / "shared"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    parser = argparse.ArgumentParser(prog="gpupolicy mig")
    mig_command.add_arguments(parser)
    code = mig_command.run(parser.parse_args(list(argv)))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def expectations(path: Path) -> list[tuple[int, str]]:
    found = re.findall(r"^# expect: (\d+): (.+)$", path.read_text(), flags=re.MULTILINE)
    return [(int(line), text) for line, text in found]


def test_module_interface() -> None:
    assert mig_command.NAME == "mig" and mig_command.HELP


@pytest.mark.parametrize("path", sorted((FIXTURES / "good").glob("*.yaml")), ids=lambda p: p.name)
def test_good_files_pass(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    code, out, err = run(capsys, "check", str(path))
    assert code == 0, out + err
    assert "0 error(s)" in out and "#" in out  # a placement diagram was drawn


@pytest.mark.parametrize("path", sorted((FIXTURES / "bad").glob("*.yaml")), ids=lambda p: p.name)
def test_bad_files_fail_with_file_and_line(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    expected = expectations(path)
    assert expected, f"{path.name} declares no '# expect:' line"
    code, out, _ = run(capsys, "check", str(path))
    assert code == 1
    for line, text in expected:
        assert f"{path}:{line}: {text}" in out, out


@pytest.mark.parametrize("path", sorted((FIXTURES / "invalid").glob("*.yaml")), ids=lambda p: p.name)
def test_unreadable_files_exit_2_without_traceback(capsys: pytest.CaptureFixture[str], path: Path) -> None:
    code, out, err = run(capsys, "check", str(path))
    assert code == 2 and not out
    assert str(path) in err and "Traceback" not in err


def test_yaml_findings_name_the_line(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "invalid" / "duplicate-layout.yaml"
    _, _, err = run(capsys, "check", str(path))
    assert f"{path}:6: duplicate key 'a'" in err


def test_missing_file_and_unknown_gpu_exit_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    code, _, err = run(capsys, "check", str(tmp_path / "nope.yaml"))
    assert code == 2 and "cannot read: No such file or directory" in err
    code, _, err = run(capsys, "check", str(tmp_path))
    assert code == 2 and "is a folder, not a file" in err
    # a device never ends: it used to be read whole, into memory, for ever
    code, _, err = run(capsys, "check", "/dev/zero")
    assert code == 2 and "/dev/zero: is a device or socket, not a file to read" in err
    code, _, err = run(capsys, "check", str(FIXTURES / "good" / "fleet-style.yaml"), "--gpu", "H100")
    assert code == 2 and "unknown GPU model H100" in err and "H100-80GB" in err


def test_gpu_option_checks_a_layout_against_a_named_model(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    config = tmp_path / "a100-40.yaml"
    config.write_text(
        "version: v1\nmig-configs:\n  seven:\n    - devices: all\n      mig-enabled: true\n"
        "      mig-devices:\n        \"1g.10gb\": 7\n"
    )
    code, out, _ = run(capsys, "check", str(config))
    assert code == 0 and "no device-filter: every catalog GPU offering its profiles" in out
    # 1g.10gb is also A100-40GB's double-memory slice, where only four fit: a guess, so only info.
    assert f"{config}:6: info: seven[0]: 7 x 1g.10gb cannot be placed on one A100-40GB" in out
    assert "fits A100-80GB, H100-80GB" in out
    code, out, _ = run(capsys, "check", str(config), "--gpu", "A100-40GB")
    assert code == 1
    assert (
        f"{config}:6: error: seven[0]: 7 x 1g.10gb cannot be placed on one A100-40GB: 7 x 1g.10gb asked, "
        "at most 4 fit" in out
    )
    code, out, _ = run(capsys, "check", str(config), "--gpu", "A30")
    assert code == 1 and "1g.10gb is not a MIG profile of A30" in out


def test_single_strategy_needs_one_profile_type(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "good" / "fleet-style.yaml"
    code, out, _ = run(capsys, "check", str(path), "--strategy", "single")
    assert code == 1
    assert f"{path}:26: error: all-balanced on H100-80GB: the single MIG strategy" in out
    assert f"{path}:41: error: half-and-half on H100-80GB" in out and "MIG-disabled GPUs" in out
    assert "all-1g.10gb on" not in out


def test_json_output(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(capsys, "check", str(FIXTURES / "good" / "fleet-style.yaml"), "--format", "json")
    report = json.loads(out)
    assert code == 0 and report["valid"] and report["errors"] == 0
    balanced = next(layout for layout in report["layouts"] if layout["name"] == "all-balanced")
    assert balanced["line"] == 26 and set(balanced["gpus"]) == {"H100-80GB", "A100-80GB", "A30"}
    a30 = next(entry for entry in balanced["entries"] if entry["gpu"] == "A30")
    assert a30["placement"] == {"2g.12gb": [0], "1g.6gb": [2, 3]}

    code, out, _ = run(capsys, "check", str(FIXTURES / "bad" / "two-4g.yaml"), "--format", "json")
    report = json.loads(out)
    assert code == 1 and not report["valid"]
    assert [(p["line"], p["kind"]) for p in report["problems"]] == [(8, "unplaceable")]


def test_configmap_lines_point_into_the_file(capsys: pytest.CaptureFixture[str]) -> None:
    path = FIXTURES / "good" / "configmap.yaml"
    code, out, _ = run(capsys, "check", str(path))
    assert code == 0
    assert f"{path}:10: layout all-1g.18gb" in out and f"{path}:15: layout h200-mixed" in out


@pytest.mark.parametrize("name", ["0400_configmap.yaml", "config-default.yaml", "config.yaml"])
def test_nvidia_default_config_has_no_findings(capsys: pytest.CaptureFixture[str], name: str) -> None:
    """NVIDIA's own default layouts must pass; runs only where a copy sits under ../shared."""
    copies = sorted(SHARED.glob(f"**/{name}")) if SHARED.is_dir() else []
    copies = [copy for copy in copies if "mig-configs" in copy.read_text(errors="replace")]
    if not copies:
        pytest.skip(f"no copy of NVIDIA's {name} under ../shared")
    for copy in copies:
        code, out, _ = run(capsys, "check", str(copy))
        assert code == 0 and " error:" not in out and " warning:" not in out, out
