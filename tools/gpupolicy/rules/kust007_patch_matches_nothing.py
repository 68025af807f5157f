"""A patch's target matches no object, so the patch changes nothing.

## Why it matters
kubectl kustomize applies a JSON6902 patch (in `patches:` with a `target`, or in `patchesJson6902`) or a
targeted strategic-merge patch to every object its target selects, and when the target selects nothing it says
nothing and renders the objects unpatched (observed with the pinned kubectl 1.37.1, kustomize v5.8.1: exit 0,
empty stderr; `tests/rules/KUST007/bad` renders such a patch). A quota cut, a taint or a priority change that
was reviewed as part of the pull request is then silently not deployed, typically after the object was
renamed.

A patch of a kustomization several clusters include (a shared Component, such as a sync engine's) is dead
only if it selects nothing in every one of them: the Argo CD component's patch for the GPU Operator's
objects selects nothing in a cluster with no pool yet, and is still needed by the clusters that have pools.

## Bad example
```yaml
# clusters/prod/kustomization.yaml
patches:
  - path: quota.yaml
    target: {kind: ClusterQueue, name: alpah}   # the queue is called alpha
```

## Fix
Fix the target (kind, group, version, name) so that it selects the objects the patch is meant for, or remove
the patch. The check is lenient (namespace and label selectors are not compared, and the name may match
anywhere in a prefixed name), so a finding is certain.
"""

from ..findings import Severity, stage_finding

ID = "KUST007"
SEVERITY = Severity.ERROR
SUMMARY = "A patch's target matches no object"
STAGE = "render"  # reported by the pipeline itself, from the rendered objects


finding = stage_finding(ID, SEVERITY)
