"""Subcommands of `gpupolicy`: one module each, with NAME, HELP, add_arguments(parser) and run(args) -> int.

Adding one: add its line to COMMANDS, the one home of its help text (the command line imports a command's
module only when that command runs, so it needs the name and help before), and write `commands/<name>.py` with
`HELP = COMMANDS[NAME]`; tests/test_cli_lazy.py fails while a module is missing here.
"""

# Commands that write into the repository: they finish an interrupted edit first (transaction.recover); every
# other command only reports one and stops, since a validator never changes the tree (decision 0066).
WRITING_COMMANDS = frozenset({"docs", "import", "new", "recommend", "recover", "schemas", "upgrade"})
FORMAT_HELP = "text for people (the default) or json for scripts"  # the --format choice most commands offer

COMMANDS = {  # name (= module name) -> its HELP, in the order `gpupolicy --help` lists them
    "audit": "audit a cluster snapshot: pool drift, GPU requests per queue, idle GPUs, pending work; export "
    "a trace",
    "cache": "show the size of the render and parse caches, prune entries unused for N days, or clear them",
    "diff": "compare two revisions of the fleet (default: merge base with main against the working tree)",
    "docs": "generate the fleet pages of the runbook site (docs/generated/) and the queue files' header "
    "blocks; --check fails when one is stale",
    "explain": "trace a workload manifest through admission, quotas, Kueue, node fit and the GPU Operator, "
    "per cluster",
    "import": "inventory a running cluster (--snapshot DIR or --context NAME) and write its cluster, pool, "
    "team and queue files, open questions marked, and a node-by-node migration plan under operator "
    "management",
    "inspect": "print the fleet model: pools with capacity and the part no quota holds, cluster queues with "
    "their GPU quotas, priorities",
    "mig": "check mig-parted layouts: profiles per GPU model, exact slot placement, strategy fit",
    "new": "add a pool, a team or a cluster with every edit it needs (files, layouts, pools.conf, overlays, "
    "rollout-plan stage, queues, quotas), validated on a copy first, written all or nothing",
    "recover": "finish or undo an edit of several files that was interrupted (a killed promote, docs, "
    "--apply)",
    "render": "render clusters/<name>/ overlays with kubectl kustomize (in parallel, with origin "
    "annotations)",
    "report": "combine the shards' JSON reports of `validate --shard K/N` into one report (any format)",
    "recommend": "search quotas, borrowing/lending, cohorts, time-slicing replicas, whether inference pools "
    "share their cards, and MIG layouts with the simulator; propose (or --apply) the best "
    "policy",
    "rules": "list every rule (ID, severity, summary) or print one rule's documentation",
    "schemas": "import CustomResourceDefinitions (kubectl get crd -o yaml) as schemas for validation",
    "simulate": "what-if replay of a workload trace against a cluster's queues, pools and preemption vs a "
    "baseline",
    "upgrade": "staged driver / GPU Operator upgrades: status, promote the next stage, roll back the last "
    "one",
    "validate": "validate the whole repository (render, strict load, schemas, fleet rules)",
}


def number_in(kind, what: str, accepts, bound: str):
    """An argparse `type` for a number option: `kind(text)` (int or float) where `accepts` it; else an error
    saying the text is not `what`, or the `bound` it breaks."""
    import argparse

    def parse(text: str):
        try:
            value = kind(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{text!r} is not {what}") from None
        if not accepts(value):
            raise argparse.ArgumentTypeError(bound)
        return value

    return parse
