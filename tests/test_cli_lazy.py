"""The command line imports only the command that runs (issue 19): `--help` pays for no command and none of
the pipeline, and the registry it reads names before importing (`commands.COMMANDS`) lists every module."""

from __future__ import annotations

import json
import pkgutil
import subprocess
import sys

from gpupolicy import cli, commands


def test_every_module_in_commands_is_registered_with_its_own_help() -> None:
    modules = sorted(
        info.name.removesuffix("_")
        for info in pkgutil.iter_modules(commands.__path__)
        if not info.name.startswith("_")
    )
    assert sorted(commands.COMMANDS) == modules, "add the new command's line to commands.COMMANDS"
    for name, help_text in commands.COMMANDS.items():
        module = cli.command_module(name)
        assert module.NAME == name and module.HELP == help_text
        assert callable(module.add_arguments) and callable(module.run)


def _modules_after(argv: list[str]) -> set[str]:
    code = (
        "import json, sys\nfrom gpupolicy import cli\n"
        f"try:\n    cli.main({argv!r})\nexcept SystemExit:\n    pass\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('gpupolicy'))))"
    )
    proc = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return set(json.loads(proc.stdout.strip().splitlines()[-1]))


def test_help_imports_no_command_and_not_the_pipeline() -> None:
    loaded = _modules_after(["--help"])
    assert not {m for m in loaded if m.startswith("gpupolicy.commands.")}
    assert "gpupolicy.pipeline" not in loaded and "gpupolicy.pipeline.render.kustomize" not in loaded


def test_a_command_imports_its_own_module_only() -> None:
    loaded = _modules_after(["rules", "CAP001"])
    assert {m for m in loaded if m.startswith("gpupolicy.commands.")} == {"gpupolicy.commands.rules"}
    assert "gpupolicy.pipeline" not in loaded


def test_a_command_help_and_a_usage_error_still_work(capsys) -> None:
    assert cli.main(["validate", "--help"]) == 0
    assert "--changed-since" in capsys.readouterr().out
    assert cli.main(["validat"]) == 2
    assert "invalid choice" in capsys.readouterr().err
    assert cli.main(["--version"]) == 0
