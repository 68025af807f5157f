"""A pool declares a GPU model the catalog does not know.

## Why it matters
Every fact the rules check a pool against (memory, MIG profiles and placements, minimum drivers, PCI IDs for
mig-parted device filters) comes from the GPU catalog. A pool with an unknown or misspelt model silently
escapes the MIG, driver and upgrade checks, and its MIG capacity cannot be computed.

## Bad example
```yaml
spec:
  gpu: {model: H100, perNode: 8}   # the catalog key is H100-80GB
```

## Fix
Use a catalog key (`gpupolicy mig check --help` and the catalog page list them), or add the model to
`tools/gpupolicy/domain/catalog.py` with its public sources.
"""

from collections.abc import Iterator

from ..domain import catalog
from ..findings import Finding, Severity, at
from ..model import Fleet

ID = "POOL001"
SEVERITY = Severity.ERROR
SUMMARY = "A pool's GPU model is not in the catalog"


def check(fleet: Fleet) -> Iterator[Finding]:
    known = sorted(model.key for model in catalog.GPUS.values())
    for pool in fleet.pools.values():
        try:
            catalog.gpu(pool.gpu_model)
        except KeyError:
            yield Finding(
                ID,
                SEVERITY,
                f"pool {pool.name}: GPU model {pool.gpu_model!r} is not in the catalog",
                hint=f"known models: {', '.join(known)}",
                **at(fleet.locate_file(pool.path, "spec", "gpu", "model")),
            )
