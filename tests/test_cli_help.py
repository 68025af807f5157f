"""`gpupolicy --help` is written for users: what it is for, where to start, the exit codes, and a help text
on every option of every command and sub-command."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator

from gpupolicy import cli


def _parsers(
    parser: argparse.ArgumentParser, path: str = "gpupolicy"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    yield path, parser
    for action in parser._actions:  # argparse keeps sub-commands here; there is no public accessor
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from _parsers(sub, f"{path} {name}")


def test_every_option_and_argument_of_every_command_says_what_it_does() -> None:
    silent = [
        f"{path}: {action.option_strings or action.dest}"
        for path, parser in _parsers(cli.build_parser())
        for action in parser._actions
        if not isinstance(action, argparse._SubParsersAction)
        and action.help != argparse.SUPPRESS
        and not (action.help or "").strip()
    ]
    assert silent == []


def test_the_top_level_help_speaks_to_users_and_lists_the_exit_codes(capsys) -> None:
    assert cli.main(["--help"]) == 0
    text = capsys.readouterr().out
    assert "gpupolicy.commands" not in text and "add_arguments" not in text
    codes = dict(re.findall(r"^  (\d+) +(.+)$", text.split("exit codes")[1], re.MULTILINE))
    assert set(codes) == {"0", "1", "2", "130"}
    assert "file and line" in codes["1"] and "usage error" in codes["2"]
    assert "gpupolicy validate" in text and "gpupolicy rules ID" in text


def test_the_exit_codes_listed_are_the_ones_main_returns(capsys) -> None:
    assert cli.main(["no-such-command"]) == 2
    assert cli.main([]) == 2
    capsys.readouterr()
