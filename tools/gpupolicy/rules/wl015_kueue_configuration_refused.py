"""Kueue would refuse the repository's Kueue Configuration and not start.

## Why it matters
Kueue's controller validates its Configuration when it starts and exits when a value is refused
(kubernetes-sigs/kueue v0.19.2 `cmd/kueue/main.go`, `pkg/config/validation.go` `Validate`). With Kueue down,
no workload is admitted anywhere in the fleet: every GPU job stays suspended, and the webhooks Kueue serves
may refuse new Jobs outright. Argo CD or Flux rolls the values out to every cluster at once, so one typo in
`policies/kueue/values.yaml` stops the whole fleet's queueing. This rule checks the blocks the toolkit reads
as Kueue validates them:
- a v1beta2 `fairSharing` must list `preemptionStrategies` (v1beta2 gives it no default; v1beta1 defaults it
  with `enable: true`), as `[LessThanOrEqualToFinalShare]`, `[LessThanInitialShare]` or both in that order;
- `waitForPodsReady` takes no negative `timeout`, `recoveryTimeout` or backoff, and a requeuing `timestamp`
  of `Creation` or `Eviction`;
- each of `integrations.frameworks` must be an integration Kueue registers, named once: `batch/job`,
  `deployment`, `jobset.x-k8s.io/jobset`, `kubeflow.org/jaxjob`, `kubeflow.org/mpijob`,
  `kubeflow.org/paddlejob`, `kubeflow.org/pytorchjob`, `kubeflow.org/tfjob`, `kubeflow.org/xgboostjob`,
  `leaderworkerset.x-k8s.io/leaderworkerset`, `pod`, `ray.io/raycluster`, `ray.io/rayjob`,
  `ray.io/rayservice`, `sparkoperator.k8s.io/sparkapplication`, `statefulset`,
  `trainer.kubeflow.org/trainjob`, `workload.codeflare.dev/appwrapper`; each of
  `integrations.externalFrameworks` must read `Kind.version.group`;
- `managedJobsNamespaceSelector` must not match `kube-system` nor Kueue's own namespace (`namespace`,
  default `kueue-system`), each told by its `kubernetes.io/metadata.name` label, and its expressions must
  be well formed (`In`/`NotIn` with values, `Exists`/`DoesNotExist` without).
`gpupolicy simulate` and `recommend` refuse to replay such a Configuration: Kueue would run nothing.

Not checked: the rest of `Validate` (MultiKueue, admission fair sharing, certificates, resource
transformations, device class mappings, TLS, the visibility server, custom metric labels), an external
framework that names the same kind as a built-in one, and unknown fields, which Kueue's strict decoding
refuses too.

## Bad example
```yaml
# policies/kueue/values.yaml, managerConfig.controllerManagerConfigYaml
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
fairSharing: {}                     # v1beta2: preemptionStrategies must be specified
```

## Fix
```yaml
fairSharing:
  preemptionStrategies: [LessThanOrEqualToFinalShare, LessThanInitialShare]
```
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain import kueue_configuration
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "WL015"
SEVERITY = Severity.ERROR
SUMMARY = "Kueue would refuse its Configuration and not start"


def check(fleet: Fleet) -> Iterator[Finding]:
    config, where = kueue_configuration.read(fleet.documents)
    locate = kueue_configuration.field_locator(fleet.documents)
    for field, why in kueue_configuration.refusals(config):
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            message=f"Kueue Configuration {field}: {why}; Kueue refuses it and does not start",
            hint="fix the value as pkg/config/validation.go requires (the rule's page lists them)",
            **at(locate(field) or where),
        )
