"""A pool's `nvidia.com/gpu.product` label names a different GPU than its `spec.gpu.model`.

## Why it matters
GPU Feature Discovery labels every node with `nvidia.com/gpu.product`, the NVML device name (spaces as `-`,
with `-MIG-<profile>` or `-SHARED` appended under the single MIG strategy or time-slicing). pool.yaml declares
the same hardware twice: `spec.gpu.model`, from which the toolkit checks MIG profiles, drivers and capacity,
and the node label, which is what selects the nodes. When they disagree one of them is wrong: the layouts, the
driver minimum and the capacity were checked for a GPU the nodes do not have, and mig-parted's `device-filter`
entries (keyed by the real GPU's PCI ID) may apply a different partition than the one reviewed. A label the
catalog does not know is reported as a warning: it may be a correct NVML name the catalog lacks, or a typo
that selects no node.

## Bad example
```yaml
spec:
  gpu: {model: H100-80GB, perNode: 8}
  nodeLabels:
    nvidia.com/gpu.product: NVIDIA-A100-SXM4-80GB
```

## Fix
Correct whichever is wrong: `spec.gpu.model` must be the catalog key of the GPU the labelled nodes carry
(`tools/gpupolicy/domain/catalog.py` lists the product labels of each model).
"""

from collections.abc import Iterator

from ..domain import catalog
from ..findings import Finding, Severity, at
from ..model import PRODUCT_LABEL, Fleet
from .mig_common import model_of, pool_location

ID = "MIG007"
SEVERITY = Severity.ERROR
SUMMARY = "nvidia.com/gpu.product label and spec.gpu.model name different GPUs"


def check(fleet: Fleet) -> Iterator[Finding]:
    for pool in fleet.pools.values():
        label = pool.node_labels.get(PRODUCT_LABEL)
        declared = model_of(pool)
        if not label or declared is None:
            continue  # no label to compare, or a model the catalog does not know (reported elsewhere)
        labelled = catalog.gpu_by_product_label(label)
        if labelled is not None and labelled.key == declared.key:
            continue
        where = at(pool_location(fleet, pool, "nodeLabels", PRODUCT_LABEL))
        clusters = ",".join(pool.clusters)
        if labelled is None:
            yield Finding(
                rule=ID,
                severity=Severity.WARNING,
                cluster=clusters,
                message=f"pool {pool.name}: {PRODUCT_LABEL}={label} is not a product label of {declared.key} "
                f"(known: {', '.join(declared.product_labels)})",
                hint="check the label against a node (kubectl get node -L nvidia.com/gpu.product)",
                **where,
            )
        else:
            yield Finding(
                rule=ID,
                severity=SEVERITY,
                cluster=clusters,
                message=f"pool {pool.name} declares gpu.model {declared.key}, but its nodes are labelled "
                f"{PRODUCT_LABEL}={label}, the product label of {labelled.key}",
                hint="make spec.gpu.model and the product label name the same GPU",
                **where,
            )
