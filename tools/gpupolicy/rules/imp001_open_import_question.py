"""A question `gpupolicy import` could not answer from the cluster is still open.

## Why it matters
`gpupolicy import` writes what a running cluster says: its GPU nodes as pools, its Kueue queues, its team
namespaces. What the cluster does not say (the environment, a node's zone, how a pool shares its GPUs when no
label tells, which team owns a queue, its tier) it does not guess: it writes a placeholder value with a
`# QUESTION(import): ...` line above it, and lists the question in `imports/<cluster>/questions.yaml`. Until
someone answers it, the placeholder is not a decision, and the policy built on it (reserves, preemption,
quotas) is not one either.

## Bad example
```yaml
# imports/acme-east/questions.yaml
questions:
  - path: clusters/acme-east/queues/inference.yaml
    line: 1 question: "which tier is ClusterQueue inference? counted as production in the migration plan; set
    the gpupolicy.io/tier label"
```

## Fix
Answer the question in its file (set the label, the zone, the access mode ...), delete the
`# QUESTION(import):` line there and the entry in `imports/<cluster>/questions.yaml`. `gpupolicy validate`
lists what is left to decide.
"""

from collections.abc import Iterator
from pathlib import Path

from ..findings import Finding, Severity
from ..infra import repopath
from ..infra.yamlload import parse_source
from ..model import Fleet

ID = "IMP001"
SEVERITY = Severity.ERROR
SUMMARY = "An open question of gpupolicy import"
QUESTIONS = "imports/*/questions.yaml"  # one home of the open questions; the files' comments point here
MAX_BYTES = 4 * 1024 * 1024


def check(fleet: Fleet) -> Iterator[Finding]:
    root = Path(fleet.root)
    for path in sorted(root.glob(QUESTIONS)):
        cluster = path.parent.name
        if cluster not in fleet.clusters:
            continue  # reported by the run that covers the cluster (each shard of `validate --shard` once)
        rel = path.relative_to(root).as_posix()
        try:  # the repository's reader: inside the repository, a regular file (no FIFO, no link out), bounded
            loaded = parse_source(repopath.read_file(root, rel, MAX_BYTES), rel)
        except repopath.Refused as exc:
            yield Finding(ID, SEVERITY, f"not read: {exc}", rel, 1, cluster)
            continue
        if not loaded.ok:  # the strict loader's own finding (syntax, duplicate key, alias bomb)
            yield Finding(
                ID,
                SEVERITY,
                f"cannot read the questions: {loaded.findings[0].message}",
                rel,
                loaded.findings[0].line,
                cluster,
            )
            continue
        data = loaded.documents[0].data if loaded.documents else None
        entries = data.get("questions") if isinstance(data, dict) else None
        if not isinstance(entries, list):
            yield Finding(
                ID, SEVERITY, "not a list of questions: `questions:` must be a list", rel, 1, cluster
            )
            continue
        for entry in entries:
            if not isinstance(entry, dict) or not entry.get("path") or not entry.get("question"):
                yield Finding(ID, SEVERITY, f"an entry without path or question: {entry!r}", rel, 1, cluster)
                continue
            try:  # a finding names a file of the repository, never one a questions file points outside
                where = repopath.normalize("", str(entry["path"]))
            except repopath.Refused as exc:
                yield Finding(
                    ID, SEVERITY, f"an entry names a path outside the repository: {exc}", rel, 1, cluster
                )
                continue
            line = entry.get("line") if isinstance(entry.get("line"), int) else 1
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=cluster,
                path=where,
                line=line,
                message=f"open question: {entry['question']}",
                hint=f"answer it in the file, then delete its `# QUESTION(import):` line and its "
                f"entry in {rel}",
            )
