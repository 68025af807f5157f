"""Subcommands of `gpupolicy`: one module each, with NAME, HELP, add_arguments(parser) and run(args) -> int."""

FORMAT_HELP = "text for people (the default) or json for scripts"  # the --format choice most commands offer
