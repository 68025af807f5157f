"""Kueue's `waitForPodsReady`: an admitted workload whose pods are not all ready within the timeout is
evicted, its quota released, and requeued after a backoff.

Read against kubernetes-sigs/kueue v0.19.2 (the version the repository pins in policies/sync):
- apis/config/v1beta2/defaults.go: a v1beta2 Configuration always gets a `waitForPodsReady` (timeout 30 min,
  `blockAdmission` false, `requeuingStrategy` timestamp `Eviction`, backoff base 60 s, max 3600 s, no limit);
- pkg/util/waitforpodsready/waitforpodsready.go `Enabled`: on unless the
  `DisableWaitForPodsReady` feature gate is set (pkg/features/kube_features.go: "Temporary option while
  WaitForPodsReady is enabled by default");
- pkg/controller/core/workload_controller.go: the eviction on `PodsReadyTimeout` and `triggerDeactivation`
  past `backoffLimitCount`; pkg/workload/workload.go `UpdateRequeueState`: the n-th requeue waits
  60 s * 2^(n-1), capped.
A v1beta1 Configuration turns it on only with `waitForPodsReady.enable: true`.

The repository's Configuration (policies/kueue/values.yaml, domain/kueue_configuration.py) is what
`from_configuration` reads for a cluster's declared policy (simulate/policy.py `from_cluster`); where it sets
none of `waitForPodsReady`, Kueue's defaults above apply. The simulator's pods are ready when they
start (a pod that crashes at start is not ready); `recoveryTimeout` (ready pods that fail later) is not
modelled.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

DEFAULT_TIMEOUT = 30 * 60  # DefaultWaitForPodsReadyTimeout
DEFAULT_BACKOFF_BASE, DEFAULT_BACKOFF_MAX = 60, 3600  # DefaultRequeuingBackoffBaseSeconds / MaxSeconds
_DURATION = re.compile(r"(\d+(?:\.\d+)?)(h|m|s|ms)")
_UNIT_SECONDS = {"h": 3600, "m": 60, "s": 1, "ms": 0.001}


@dataclass(frozen=True)
class PodsReady:
    """`waitForPodsReady` as Kueue applies it, in seconds."""

    timeout: int = DEFAULT_TIMEOUT
    block_admission: bool = False
    backoff_base: int = DEFAULT_BACKOFF_BASE
    backoff_max: int = DEFAULT_BACKOFF_MAX
    backoff_limit: int | None = None  # requeues before the workload is deactivated; None: no limit
    eviction_timestamp: bool = True  # requeuingStrategy.timestamp Eviction: requeued behind its equals

    def backoff(self, count: int) -> int:
        """Seconds before the `count`-th requeue (UpdateRequeueState: base * 2^(count-1), capped; no
        jitter)."""
        return min(self.backoff_max, self.backoff_base * 2 ** max(count - 1, 0))


KUEUE_DEFAULT = PodsReady()


def duration_seconds(text: Any, default: int) -> int:
    """A Go duration such as `5m`, `1h30m` or `300s` in whole seconds; `default` for anything else."""
    if isinstance(text, int) and not isinstance(text, bool):
        return text if text >= 0 else default
    if not isinstance(text, str) or not text or _DURATION.sub("", text):
        return default
    return int(sum(float(n) * _UNIT_SECONDS[unit] for n, unit in _DURATION.findall(text)))


def from_configuration(config: Any) -> PodsReady | None:
    """The `waitForPodsReady` a Kueue Configuration (a mapping) gives, None when it is off."""
    if not isinstance(config, dict):
        return KUEUE_DEFAULT
    gates = config.get("featureGates")
    if isinstance(gates, dict) and gates.get("DisableWaitForPodsReady") is True:
        return None
    block = config.get("waitForPodsReady")
    v1beta1 = str(config.get("apiVersion", "")).endswith("/v1beta1")
    if not isinstance(block, dict):
        return None if v1beta1 else KUEUE_DEFAULT
    if v1beta1 and block.get("enable") is not True:
        return None
    strategy = block.get("requeuingStrategy") if isinstance(block.get("requeuingStrategy"), dict) else {}
    limit = strategy.get("backoffLimitCount")
    return PodsReady(
        timeout=duration_seconds(block.get("timeout"), DEFAULT_TIMEOUT) or DEFAULT_TIMEOUT,
        block_admission=block.get("blockAdmission") is True,
        backoff_base=_count(strategy.get("backoffBaseSeconds"), DEFAULT_BACKOFF_BASE),
        backoff_max=_count(strategy.get("backoffMaxSeconds"), DEFAULT_BACKOFF_MAX),
        backoff_limit=_count(limit, None, minimum=0),
        eviction_timestamp=strategy.get("timestamp", "Eviction") != "Creation",
    )


def _count(value: Any, default: int | None, minimum: int = 1) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and value >= minimum else default
