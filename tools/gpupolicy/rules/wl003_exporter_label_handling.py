"""A ServiceMonitor or PodMonitor lets Prometheus label free GPUs with the exporter's own pod.

## Why it matters
dcgm-exporter, run with pod mapping on (`--kubernetes`, env `DCGM_EXPORTER_KUBERNETES=true`, which the GPU
Operator sets in `assets/state-dcgm-exporter/0800_daemonset.yaml`), adds `pod`, `namespace` and `container`
labels — the workload holding the GPU — to each series of an allocated GPU, and nothing to the series of a
free one (NVIDIA/dcgm-exporter `internal/pkg/transformation/kubernetes.go`, `PodMapper.Process`; the label
names are `podAttribute`, `namespaceAttribute`, `containerAttribute` in
`internal/pkg/transformation/const.go`; with `--use-old-namespace` they are `pod_name`, `pod_namespace`,
`container_name` instead, which collide with nothing).

The Prometheus Operator gives every ServiceMonitor and PodMonitor target labels of its own: `namespace`, `pod`
and `container` of the scraped pod (prometheus-operator `pkg/prometheus/promcfg.go`,
`generateServiceMonitorConfig` and `generatePodMonitorConfig`: `__meta_kubernetes_namespace`,
`__meta_kubernetes_pod_name`, `__meta_kubernetes_pod_container_name`), and it writes the endpoint's
`honorLabels` to `honor_labels` (`AddHonorLabels`; the Prometheus `overrideHonorLabels` setting forces false).
Prometheus then merges the two label sets per sample (prometheus/prometheus `scrape/scrape.go`,
`mutateSampleLabels`): with `honor_labels: true` it keeps the exposed labels **and adds every target label the
sample does not carry**. So the series of a free GPU get `pod="nvidia-dcgm-exporter-…"`,
`namespace="gpu-operator"`: every alert or panel that reads `pod!=""` as "held by a workload" — the
`GPUAllocatedButIdle` alert, the "held" panels — counts every GPU as allocated and pages about every idle
free GPU. With `honor_labels: false` the exposed labels are renamed `exported_pod`, `exported_namespace`,
`exported_container` and the target's own are set on every series.

With `honorLabels: true` only a target relabeling (`relabelings`) can tell the two apart, by removing the
target's `pod`, `namespace` and `container` before the merge; metric relabelings run after it, when a
workload's pod and the exporter's pod look alike. This rule reports an endpoint with `honorLabels: true` that
selects an exporter of the list below and leaves any of those target labels in place (no `labeldrop` matching
it, no `replace` that empties it).

Exporters that attach pod labels (the set is explicit; add one here with its source):

| exporter | selected by | labels it attaches |
|---|---|---|
| dcgm-exporter (GPU Operator) | `app: nvidia-dcgm-exporter` (Service and pods,
`assets/state-dcgm-exporter/0400_service.yaml`) | `pod`, `namespace`, `container` |
| dcgm-exporter (GPU Operator, DRA) | `app: nvidia-dcgm-exporter-dra`
(`manifests/state-dcgm-exporter/0500_service.yaml`) | `pod`, `namespace`, `container` |
| dcgm-exporter (its own Helm chart) | `app.kubernetes.io/name: dcgm-exporter`
(`deployment/templates/_helpers.tpl`) | `pod`, `namespace`, `container` |

## Bad example
```yaml
kind: ServiceMonitor
spec:
  selector:
    matchLabels: {app: nvidia-dcgm-exporter}
  endpoints:
    - port: gpu-metrics
      honorLabels: true       # free GPUs get pod/namespace of the exporter pod
```

## Fix
Keep `honorLabels: false` (the default of dcgm-exporter's chart and of the GPU Operator's own ServiceMonitor)
and move the exporter's labels back with metric relabelings, which also leave free GPUs without any pod label:
```yaml
      honorLabels: false
      metricRelabelings:
        - {sourceLabels: [exported_pod], targetLabel: pod, regex: (.*), replacement: $1, action: replace}
        - {sourceLabels: [exported_namespace], targetLabel: namespace, regex: (.*), replacement: $1, action:
          replace}
        - {sourceLabels: [exported_container], targetLabel: container, regex: (.*), replacement: $1, action:
          replace}
        - {regex: exported_(pod|namespace|container), action: labeldrop}
```
(an empty replacement deletes the label: prometheus/prometheus `model/relabel/relabel.go`, `Replace`). Or, to
keep `honorLabels: true`, drop the target's labels in `relabelings`:
`{action: labeldrop, regex: pod|namespace|container}` (the exporter pod is still named by `instance`).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from ..domain.observability import locate
from ..findings import Finding, Severity, at
from ..model import Fleet, K8sObject

ID = "WL003"
SEVERITY = Severity.ERROR
SUMMARY = (
    "A monitor of an exporter that attaches pod labels honours labels without separating the exporter's own"
)


@dataclass(frozen=True)
class PodLabelExporter:
    name: str
    identities: tuple[tuple[str, str], ...]  # a label key=value on its Service and pods that names it
    labels: tuple[str, ...]  # the workload labels it attaches to a series


POD_LABEL_EXPORTERS: tuple[PodLabelExporter, ...] = (
    PodLabelExporter(
        "dcgm-exporter",
        (
            ("app", "nvidia-dcgm-exporter"),
            ("app", "nvidia-dcgm-exporter-dra"),
            ("app.kubernetes.io/name", "dcgm-exporter"),
        ),
        ("pod", "namespace", "container"),
    ),
)
# Target labels the Prometheus Operator sets on every ServiceMonitor / PodMonitor target (promcfg.go).
OPERATOR_TARGET_LABELS = ("namespace", "pod", "container")
ENDPOINTS_FIELD = {"ServiceMonitor": "endpoints", "PodMonitor": "podMetricsEndpoints"}


def check(fleet: Fleet) -> Iterator[Finding]:
    for cluster in fleet.clusters.values():
        for kind, field in ENDPOINTS_FIELD.items():
            for obj in cluster.of_kind(kind, "monitoring.coreos.com"):
                exporter = selected_exporter(obj.spec.get("selector"))
                if exporter is None:
                    continue
                endpoints = obj.spec.get(field)
                for index, endpoint in enumerate(endpoints if isinstance(endpoints, list) else []):
                    if not isinstance(endpoint, dict) or endpoint.get("honorLabels") is not True:
                        continue
                    leaked = leaked_target_labels(endpoint.get("relabelings"), exporter)
                    if leaked:
                        yield _finding(fleet, cluster.name, obj, field, index, exporter, leaked)


def selected_exporter(selector: Any) -> PodLabelExporter | None:
    """The exporter of POD_LABEL_EXPORTERS a monitor's selector names (matchLabels or an `In` expression)."""
    if not isinstance(selector, dict):
        return None
    match_labels = selector.get("matchLabels") if isinstance(selector.get("matchLabels"), dict) else {}
    expressions = (
        selector.get("matchExpressions") if isinstance(selector.get("matchExpressions"), list) else []
    )
    for exporter in POD_LABEL_EXPORTERS:
        for key, value in exporter.identities:
            if str(match_labels.get(key, "")) == value:
                return exporter
            for expression in expressions:
                if (
                    isinstance(expression, dict)
                    and expression.get("key") == key
                    and expression.get("operator") == "In"
                    and value in [str(v) for v in expression.get("values") or []]
                ):
                    return exporter
    return None


def leaked_target_labels(relabelings: Any, exporter: PodLabelExporter) -> list[str]:
    """Target labels that collide with the exporter's and that no relabeling removes before the merge."""
    colliding = [label for label in OPERATOR_TARGET_LABELS if label in exporter.labels]
    configs = [c for c in relabelings if isinstance(c, dict)] if isinstance(relabelings, list) else []
    return [label for label in colliding if not any(_removes(config, label) for config in configs)]


def _removes(config: dict, label: str) -> bool:
    action = str(config.get("action") or "replace").lower()
    regex = str(config.get("regex") if config.get("regex") is not None else "(.*)")
    if action == "labeldrop":
        try:
            return re.fullmatch(regex, label) is not None  # Prometheus anchors relabel regexes
        except re.error:
            return False
    if action == "replace" and config.get("targetLabel") == label:
        return str(config.get("replacement", "$1")) == ""  # an empty value deletes the label
    return False


def _finding(
    fleet: Fleet,
    cluster: str,
    obj: K8sObject,
    field: str,
    index: int,
    exporter: PodLabelExporter,
    leaked: list[str],
) -> Finding:
    names = ", ".join(leaked)
    return Finding(
        rule=ID,
        severity=SEVERITY,
        cluster=cluster,
        message=f"{obj.ref()} scrapes {exporter.name}, which labels a GPU's series with the "
        f"{'/'.join(exporter.labels)} of the workload holding it and a free GPU's with none, but "
        f"{field}[{index}] sets honorLabels: true and keeps the target's own {names}: Prometheus "
        "adds "
        "them to every free GPU's series (the exporter pod), so every GPU looks allocated "
        "(GPUAllocatedButIdle fires for free GPUs)",
        hint="set honorLabels: false and move exported_pod/exported_namespace/exported_container back to "
        "pod/namespace/container with metricRelabelings (policies/observability/servicemonitors/"
        f"dcgm-exporter.yaml), or drop the target's {names} in relabelings (action: labeldrop)",
        **at(locate(fleet, obj, "spec", field, index, "honorLabels")),
    )
