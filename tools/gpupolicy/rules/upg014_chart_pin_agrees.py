'''The GPU Operator chart version a cluster installs differs from its cluster.yaml `gpuOperatorVersion`.

## Why it matters
Every rule about the operator (supported drivers and Kubernetes versions, UPG007; the exporter's label
spelling, WL009; CDI defaults, SEC001; MIG minimums, MIG005) reads `spec.gpuOperatorVersion` from the
cluster's `cluster.yaml`. What Argo CD or Flux actually installs is the chart version in the rendered
HelmRelease (`spec.chart.spec.version`) or Application (`targetRevision` of the gpu-operator chart source),
pinned per cluster by `clusters/<name>/gpu-operator-chart.yaml`. When the two differ, the checks approve a
release the cluster does not run, and a staged operator rollout (`gpupolicy upgrade promote`, which edits
both) would report a stage as upgraded while the cluster kept its old chart.

## Bad example
```yaml
# clusters/test-us/cluster.yaml
spec:
  gpuOperatorVersion: v26.7.0
# clusters/test-us/gpu-operator-chart.yaml
- op: replace
  path: /spec/chart/spec/version
  value: v26.3.3          # the cluster still installs 26.3.3
```

## Fix
Make the pin and `gpuOperatorVersion` the same release; for a rollout, let `gpupolicy upgrade
promote|rollback` write both.
'''

from collections.abc import Iterator

from ..findings import Finding, Severity
from ..model import Fleet
from ..upgrade.plans import chart_installs, chart_pin_path

ID = "UPG014"
SEVERITY = Severity.ERROR
SUMMARY = "The operator chart a cluster installs differs from its cluster.yaml gpuOperatorVersion"


def check(fleet: Fleet) -> Iterator[Finding]:
    for name, cluster in sorted(fleet.clusters.items()):
        declared = cluster.facts.gpu_operator_version
        for install in chart_installs(cluster):
            if install.version == declared:
                continue
            location = fleet.locate_file(cluster.facts.path, "spec", "gpuOperatorVersion")
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                path=location.path,
                line=location.line,
                cluster=name,
                message=f"cluster {name} installs GPU Operator chart "
                f"{install.version or '(no version)'} ({install.obj.ref()} {install.patch_path}) but "
                f"cluster.yaml says gpuOperatorVersion {declared}",
                hint=f"pin the same release in {chart_pin_path(cluster)} and cluster.yaml (a "
                "gpu-operator "
                "plan's promote/rollback writes both)",
            )
