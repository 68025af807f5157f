"""The GPU startup check as a step of the workload path: after the runtime, before the pod's own containers.

The kubelet runs init containers first, one at a time; the check's init container is given the devices the app
containers will reuse (kubernetes/kubernetes pkg/kubelet/cm/devicemanager/manager.go, `devicesToReuse`), and
it applies the settings of the pool the pod landed on (`pool.yaml` `spec.startupCheck`, decision 0051).
"""

from __future__ import annotations

from ..domain.startupcheck import CONTAINER_NAME, devices_to_check, problems
from ..findings import Location
from ..model import Fleet, Pool


def startup_step(fleet: Fleet, pool: Pool, spec: dict) -> tuple[bool, str, Location | None]:
    """(ok, text, where) of the startup-check step of a pod that lands on `pool`. A pod without the check is
    not
    blocked here (the admission policy refuses it in team namespaces); the step says its devices go
    unchecked."""
    where = fleet.locate_file(pool.path, "spec", "startupCheck")
    wanted = devices_to_check(spec)
    if not wanted:
        return True, "no GPU requested: nothing to check", None
    found = problems(spec)
    if found:
        return (
            True,
            f"not checked before start ({found[0]}); a busy device fails the app container instead",
            None,
        )
    check = pool.startup_check
    devices = ", ".join(f"{amount.normalize()} {name}" for name, amount in sorted(wanted.items()))
    if check.skip:
        return (
            True,
            f"init container {CONTAINER_NAME} is given {devices}; pool {pool.name} skips the check",
            where,
        )
    if pool.memory_share_percent:
        test = f"one replica's share ({pool.memory_share_percent}% of the card's memory) must be free"
    else:
        test = f"at most {check.max_memory_used_percent}% of each device's memory may be in use"
    waits = ", ".join(f"{check.backoff_seconds * n}s" for n in range(1, check.retries + 1)) or "none"
    return (
        True,
        (
            f"init container {CONTAINER_NAME} is given {devices} before the containers start; pool "
            f"{pool.name}: {test}; {check.retries} retries (waits: {waits})"
        ),
        where,
    )
