"""A MIG layout cannot be placed on one GPU.

## Why it matters
A GPU has 7 compute slices (4 on A30 and RTX PRO 6000) and 8 memory slots (4), and each profile may start only
at certain slots: on an A100 or H100 a `3g` instance starts at slot 0 or 4 and takes four slots, a `4g` starts
only at 0, a `2g` at 0, 2 or 4. So counting compute slices is not enough: `3g.40gb x2 + 1g.10gb` takes 7
compute slices but needs 9 memory slots. Only one instance may take the media engines (`+me`), and each
profile has a maximum count per GPU. mig-parted finds out on the node, after the merge: the MIG manager marks
it `nvidia.com/mig.config.state=failed` and the node keeps its old layout (or none). The rule places every
instance with the exact solver (`gpupolicy.domain.mig.place`) on the GPU model of every pool that selects the
layout and on every model its `device-filter` names, and quotes the solver's reason.

## Bad example
```yaml
mig-configs:
  two-halves-and-one:
    - devices: all
      mig-enabled: true
      mig-devices:
        "3g.40gb": 2
        "1g.10gb": 1
```

## Fix
Choose a combination the placement rules allow (`gpupolicy mig check FILE --gpu A100-80GB` draws the slots):
`3g.40gb: 2` alone, or `3g.40gb: 1` with `2g.20gb: 1` and `1g.10gb: 2` (the all-balanced layout).
"""

from collections.abc import Iterator

from ..findings import Finding, Severity, at
from ..model import Fleet
from .mig_common import config_location, layout_problems, used_by

ID = "MIG002"
SEVERITY = Severity.ERROR
SUMMARY = "MIG layout cannot be placed on one GPU"


def check(fleet: Fleet) -> Iterator[Finding]:
    for item in layout_problems(fleet, ("unplaceable",)):
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster=item.cluster,
            message=item.problem.message,
            hint=f"layout {item.problem.layout} is {used_by(item)}; `gpupolicy mig check <file> --gpu "
            f"{item.problem.gpu}` shows which placements exist",
            **at(config_location(fleet, item.entry, *item.problem.path)),
        )
