"""The GPU startup check: the init container every team GPU pod runs first, and its per-pool settings table.

The check itself is `policies/startup-check/check.sh` (POSIX sh, run with the GPU Operator's own image, which
every GPU node already pulls: it carries busybox sh on a glibc base, and nvidia-smi comes from the driver
through the container toolkit's `utility` capability). The component ships it with `pools.conf`, one line per
pool, which must say what each `pool.yaml` `spec.startupCheck` says: `table_lines` writes those lines and
`read_table` reads them back (rule POOL005 compares the shipped table with pool.yaml). Decision 0051.

Why an init container sees the pod's own devices: the kubelet's device manager keeps the devices of an
ordinary init container in `devicesToReuse` and allocates each app container from that set first
(kubernetes/kubernetes pkg/kubelet/cm/devicemanager/manager.go, `Allocate` and `devicesToAllocate`:
"Allocates from reusableDevices list first"); a sidecar (restartable init container) takes its devices out of
the set. So the check asks for, per GPU resource, the sum over the app containers and sidecars: it is given
every device they will get, and the pod's effective request (max of init and app) does not grow.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from decimal import Decimal, InvalidOperation
from typing import Any

from ..model import Pool
from .gpu_resources import is_gpu_device_resource

CONTAINER_NAME = "gpu-startup-check"
CONFIGMAP_NAME = "gpu-startup-check"
MOUNT_PATH = "/etc/gpu-startup-check"
# The GPU Operator's own image (validator, operator): glibc distroless with busybox sh (NVIDIA/gpu-operator
# docker/Dockerfile); every GPU node already has it. Same tag as the fleet's operator
# (clusters/*/cluster.yaml).
IMAGE = "nvcr.io/nvidia/gpu-operator:v26.7.0"
COLUMNS = (
    "pool",
    "sharing",
    "product",
    "skip",
    "retries",
    "backoffSeconds",
    "maxMemoryUsedPercent",
    "sharePercent",
)


def product(gpu_model: str) -> str:
    """The word nvidia-smi's device name carries for a catalog model: `A100-80GB` -> `A100` ("NVIDIA
    A100-SXM4-80GB"), `L4` -> `L4` ("NVIDIA L4", not "NVIDIA L40S": the script matches whole words)."""
    return gpu_model.split("-", 1)[0]


def table_fields(pool: Pool) -> tuple[str, ...]:
    """The pool's line of pools.conf, field by field (COLUMNS)."""
    check = pool.startup_check
    return (
        pool.name,
        pool.sharing,
        product(pool.gpu_model),
        "true" if check.skip else "false",
        str(check.retries),
        str(check.backoff_seconds),
        str(check.max_memory_used_percent),
        str(pool.memory_share_percent),
    )


def line_family(fields: tuple[str, ...]) -> tuple[str, bool]:
    """What the check on a node can tell a line of pools.conf by: the product word and MIG or not (check.sh
    matches the device name's product word and whether it is a MIG device; other columns are settings)."""
    return fields[2], fields[1] == "mig"


def read_table(text: str) -> dict[str, tuple[str, ...]]:
    """pools.conf as pool -> fields; comment and blank lines are skipped."""
    table = {}
    for line in text.splitlines():
        fields = tuple(line.split())
        if fields and not fields[0].startswith("#"):
            table[fields[0]] = fields
    return table


def _amount(value: Any) -> Decimal:
    try:
        return Decimal(str(value))
    except (InvalidOperation, ValueError):
        return Decimal(0)


def _limits_or_requests(container: Mapping) -> dict[str, Decimal]:
    """A container's GPU amounts: extended resources are set in limits (requests default to them)."""
    resources = container.get("resources") if isinstance(container.get("resources"), Mapping) else {}
    merged: dict[str, Decimal] = {}
    for key in ("requests", "limits"):
        amounts = resources.get(key) if isinstance(resources.get(key), Mapping) else {}
        merged.update(
            {name: _amount(value) for name, value in amounts.items() if is_gpu_device_resource(name)}
        )
    return merged


def _containers(spec: Mapping, key: str) -> list[Mapping]:
    return [c for c in spec.get(key) or [] if isinstance(c, Mapping)]


def devices_to_check(pod_spec: Mapping) -> dict[str, Decimal]:
    """Per GPU resource, what the check must request: the sum over app containers and sidecars."""
    total: dict[str, Decimal] = {}
    sidecars = [c for c in _containers(pod_spec, "initContainers") if c.get("restartPolicy") == "Always"]
    for container in [*_containers(pod_spec, "containers"), *sidecars]:
        for name, amount in _limits_or_requests(container).items():
            total[name] = total.get(name, Decimal(0)) + amount
    return {name: amount for name, amount in total.items() if amount > 0}


def problems(pod_spec: Mapping) -> list[str]:
    """Why a GPU pod's spec does not run the check as it must; empty when it does (or needs none)."""
    wanted = devices_to_check(pod_spec)
    if not wanted:
        return []
    inits = _containers(pod_spec, "initContainers")
    names = [c.get("name") for c in inits]
    if CONTAINER_NAME not in names:
        return [f"no init container {CONTAINER_NAME}: the pod's GPUs are not checked before it starts"]
    found = []
    if names[0] != CONTAINER_NAME:
        found.append(
            f"init container {CONTAINER_NAME} is not the first init container (it must run before "
            f"{names[0]} touches the GPUs)"
        )
    asked = _limits_or_requests(inits[names.index(CONTAINER_NAME)])
    if asked != wanted:
        found.append(
            f"init container {CONTAINER_NAME} requests {_show(asked)} but the pod's containers "
            f"request {_show(wanted)}: it must ask for the same devices to be given them"
        )
    return found


def _show(amounts: Mapping[str, Decimal]) -> str:
    return ", ".join(f"{name}: {amount.normalize()}" for name, amount in sorted(amounts.items())) or "no GPU"


def init_container(amounts: Mapping[str, Any]) -> dict:
    """The check's init container, asking for these GPU amounts (what `devices_to_check` says); the same
    container as in docs/examples/ and docs/operations/startup-check.md."""
    return {
        "name": CONTAINER_NAME,
        "image": IMAGE,
        "command": ["sh", f"{MOUNT_PATH}/check.sh"],
        "env": [{"name": "NVIDIA_DRIVER_CAPABILITIES", "value": "utility"}],
        "resources": {
            "requests": {"cpu": "10m", "memory": "32Mi", **amounts},
            "limits": {"memory": "32Mi", **amounts},
        },
        "securityContext": {
            "runAsNonRoot": True,
            "runAsUser": 65534,
            "allowPrivilegeEscalation": False,
            "capabilities": {"drop": ["ALL"]},
            "seccompProfile": {"type": "RuntimeDefault"},
        },
        "volumeMounts": [{"name": CONFIGMAP_NAME, "mountPath": MOUNT_PATH, "readOnly": True}],
    }


def with_check(pod_spec: dict) -> dict:
    """The pod spec with the check in place (first init container, ConfigMap volume); unchanged without
    GPUs."""
    wanted = devices_to_check(pod_spec)
    if not wanted:
        return pod_spec
    amounts = {name: int(amount) for name, amount in wanted.items()}
    return {
        **pod_spec,
        "initContainers": [init_container(amounts), *(pod_spec.get("initContainers") or [])],
        "volumes": [
            *(pod_spec.get("volumes") or []),
            {"name": CONFIGMAP_NAME, "configMap": {"name": CONFIGMAP_NAME}},
        ],
    }


def table_lines(pools: Iterable[Pool]) -> list[str]:
    """pools.conf's lines for these pools, in name order, columns aligned."""
    return aligned_lines(table_fields(p) for p in pools)


def aligned_lines(rows: Iterable[tuple[str, ...]]) -> list[str]:
    """The column header and these rows (COLUMNS each), in pool name order, columns aligned."""
    rows = [COLUMNS, *sorted(rows)]
    widths = [max(len(row[i]) for row in rows) for i in range(len(COLUMNS))]
    return [
        ("# " if row is COLUMNS else "  ")
        + "  ".join(f.ljust(w) for f, w in zip(row, widths, strict=True)).rstrip()
        for row in rows
    ]


def table_with(text: str, lines: Mapping[str, tuple[str, ...]]) -> str:
    """pools.conf's text with these pools' lines (pool -> fields) put in, the others kept, the comments above
    the column header kept and the columns aligned again (`aligned_lines`). Refuses (ValueError) a table
    without the column header, with a line of another width or a comment below the header, rather than
    guess."""
    header = "# " + " ".join(COLUMNS)
    kept, rows, seen_header = [], dict(read_table(text)), False
    for line in text.splitlines():
        if " ".join(line.split()) == header:
            seen_header = True
        elif line.lstrip().startswith("#"):
            if seen_header:  # a note among the lines: realigning would move it away from its line
                raise ValueError("a comment below the column header")
            kept.append(line)
    rows.update(lines)
    if not seen_header or any(len(fields) != len(COLUMNS) for fields in rows.values()):
        raise ValueError(f"not a table of {len(COLUMNS)} columns under the header `{header}`")
    return "\n".join([*kept, *aligned_lines(rows.values())]) + "\n"


# MutatingAdmissionPolicy, per Kubernetes minor version: (API version the release carries, served and enabled
# with the defaults?). From kubernetes/kubernetes staging/src/k8s.io/apiserver/pkg/features/kube_features.go
# (feature gate MutatingAdmissionPolicy: 1.32 alpha default false, 1.34 beta default false) and
# pkg/controlplane/instance.go (admissionregistration v1alpha1 and v1beta1 are in the lists of group versions
# disabled by default). Versions not listed are not known here and get the validating policy.
MUTATING_POLICY = {
    "1.32": ("admissionregistration.k8s.io/v1alpha1", False),
    "1.33": ("admissionregistration.k8s.io/v1alpha1", False),
    "1.34": ("admissionregistration.k8s.io/v1beta1", False),
}


def mechanism(kubernetes_version: str) -> str:
    """How a cluster of this version gets the check into every team GPU pod: `mutate` where a
    MutatingAdmissionPolicy is served and enabled by default, else `require` (the validating policy refuses a
    GPU pod without it; the examples and the component carry it)."""
    _, enabled = MUTATING_POLICY.get(kubernetes_version, ("", False))
    return "mutate" if enabled else "require"
