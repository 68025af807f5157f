"""A question `gpupolicy import` could not answer from the cluster is still open.

## Why it matters
`gpupolicy import` writes what a running cluster says: its GPU nodes as pools, its Kueue queues, its team
namespaces. What the cluster does not say (the environment, a node's zone, how a pool shares its GPUs when no
label tells, which team owns a queue, its tier) it does not guess: it writes a placeholder value with a
`# QUESTION(import): ...` line above it. Until someone answers and removes the line, the placeholder is
not a decision, and the policy built on it (reserves, preemption, quotas) is not one either.

## Bad example
```yaml
# QUESTION(import): which tier is ClusterQueue infer? counted as production in the migration plan; set the
# gpupolicy.io/tier label
apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: infer
```

## Fix
Answer the question in the file (set the label, the zone, the access mode ...) and delete the
`# QUESTION(import):` line. `gpupolicy validate` lists what is left to decide.
"""

from collections.abc import Iterator
from pathlib import Path, PurePosixPath

from ..findings import Finding, Severity
from ..model import Fleet

ID = "IMP001"
SEVERITY = Severity.ERROR
SUMMARY = "An open question of gpupolicy import"
MARK = "# QUESTION(import):"
PLANS = "imports/*/*.yaml"  # the migration plans: read by no other stage
MAX_BYTES = 4 * 1024 * 1024  # every file here is a hand-sized manifest; YAML004 refuses bigger ones


def check(fleet: Fleet) -> Iterator[Finding]:
    root = Path(fleet.root)
    # a plan is reported by the run that covers its cluster (each shard of `validate --shard` once)
    plans = {p.relative_to(root).as_posix() for p in root.glob(PLANS) if p.parent.name in fleet.clusters}
    paths = {doc.path for doc in fleet.documents} | plans
    for rel in sorted(paths):
        path = root / rel
        if path.is_symlink() or not path.is_file() or path.stat().st_size > MAX_BYTES:
            continue  # YAML008 and YAML004 report these; nothing of them was loaded
        try:
            text = path.read_text(encoding="utf-8")
        except (OSError, UnicodeDecodeError):
            continue  # YAML003 reports it
        if MARK not in text:
            continue
        parts = PurePosixPath(rel).parts
        cluster = parts[1] if len(parts) > 2 and parts[0] in ("clusters", "imports") else ""
        for number, line in enumerate(text.splitlines(), 1):
            if MARK in line:
                yield Finding(rule=ID, severity=SEVERITY, cluster=cluster, path=rel, line=number,
                              message=f"open question: {line.split(MARK, 1)[1].strip()}",
                              hint="answer it in the file and delete the `# QUESTION(import):` line")
