"""Subcommands of `gpupolicy`: one module each, with NAME, HELP, add_arguments(parser) and run(args) -> int."""
