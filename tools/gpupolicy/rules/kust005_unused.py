"""A manifest is included by no cluster overlay.

## Why it matters
A manifest under clusters/, pools/ or policies/ that no overlay includes is never applied. Reviewers assume it
is live. It is still schema-checked so it cannot rot, but it should be wired in or deleted.

Two kinds of file are no overlay's input by design and are not reported: a cluster's Flux bootstrap folder
(`clusters/<name>/flux/`, applied by Flux's own Kustomization), and the install folder of a sync engine no
cluster declares (`policies/sync/argocd/` in a fork whose clusters all sync with Flux, kept for later).

## Bad example
```yaml
policies/teams/old-team/queue.yaml  # nobody includes it
```

## Fix
Add it to a kustomization, or delete it.
"""

from ..findings import Severity, stage_finding

ID = "KUST005"
SEVERITY = Severity.WARNING
SUMMARY = "A manifest is included by no cluster overlay"
STAGE = "render"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
