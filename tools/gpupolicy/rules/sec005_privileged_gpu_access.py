"""A workload in a team namespace runs privileged or mounts GPU device nodes from the host.

## Why it matters
A privileged container sees every device of the node, so every GPU, whatever it requested; a `hostPath` on
`/dev/nvidia*` (or on `/dev`, or `/`) does the same without even being privileged. Either one breaks GPU
isolation between teams and defeats Kueue quotas. Only GPU Operator operands in system namespaces need this.

## Bad example
```yaml
spec:
  containers:
    - name: train
      securityContext: {privileged: true}
  volumes:
    - name: gpu
      hostPath: {path: /dev/nvidia0}
```

## Fix
Remove `privileged: true` and the device `hostPath`; request `nvidia.com/gpu` and let the device plugin mount
the allocated GPU.
"""

from __future__ import annotations

import posixpath
from collections.abc import Iterator

from ..domain.workloads import Workload, containers, pod_specs, workloads
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "SEC005"
SEVERITY = Severity.ERROR
SUMMARY = "No privileged containers or /dev/nvidia* hostPath in team namespaces"


def reaches_gpu_devices(path: str) -> bool:
    """True when a host path is /dev/nvidia*, or a directory that contains the device nodes."""
    normal = posixpath.normpath("/" + path.lstrip("/")) if path else "/"
    return normal in ("/", "/dev", "/run") or normal.startswith(("/dev/nvidia", "/run/nvidia"))


def check(fleet: Fleet) -> Iterator[Finding]:
    for workload in workloads(fleet):
        if not workload.in_team_namespace():
            continue
        for path, spec, _meta in pod_specs(workload):
            yield from _privileged(fleet, workload, path, spec)
            yield from _host_paths(fleet, workload, path, spec)


def _privileged(fleet: Fleet, workload: Workload, path: tuple, spec: dict) -> Iterator[Finding]:
    for field, index, container in containers(spec):
        context = (
            container.get("securityContext") if isinstance(container.get("securityContext"), dict) else {}
        )
        if context.get("privileged") is True:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=workload.cluster.name if workload.cluster else "",
                message=f"{workload.ref()} container {container.get('name', index)} is "
                "privileged: it "
                "sees every GPU of the node",
                hint="drop privileged: true; request nvidia.com/gpu instead",
                **at(workload.locate(fleet, *path, field, index, "securityContext", "privileged")),
            )


def _host_paths(fleet: Fleet, workload: Workload, path: tuple, spec: dict) -> Iterator[Finding]:
    volumes = spec.get("volumes") if isinstance(spec.get("volumes"), list) else []
    for index, volume in enumerate(volumes):
        host = volume.get("hostPath") if isinstance(volume, dict) else None
        if isinstance(host, dict) and reaches_gpu_devices(str(host.get("path", ""))):
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=workload.cluster.name if workload.cluster else "",
                message=f"{workload.ref()} volume {volume.get('name', index)} mounts host path "
                f"{host.get('path')}, which reaches the GPU device nodes",
                hint="remove the hostPath; the device plugin mounts the allocated GPU",
                **at(workload.locate(fleet, *path, "volumes", index, "hostPath", "path")),
            )
