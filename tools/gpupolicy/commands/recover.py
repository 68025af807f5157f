"""gpupolicy recover: finish or undo a multi-file edit a killed process left half done (decision 0066).

Every writing command does this first by itself; `recover` is the same step alone, for after a crash."""

from __future__ import annotations

import argparse

from . import COMMANDS

NAME = "recover"
HELP = COMMANDS[NAME]


def add_arguments(parser: argparse.ArgumentParser) -> None:
    del parser  # no options: the journal says what to do


def run(args: argparse.Namespace) -> int:
    del args  # the command line recovered before calling us (cli._recover_first); say that all is well
    print("no interrupted edit left")
    return 0
