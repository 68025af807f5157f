"""The Kueue Configuration the fleet runs: the `controllerManagerConfigYaml` of the Kueue chart's values, one
file shared by every cluster (policies/kueue/values.yaml). What a controller reads of it is decided where it
is used (workpath/kueue.py: integrations and namespaces; simulate/readiness.py: waitForPodsReady;
simulate/fairsharing.py: fairSharing); what Kueue refuses to start with is `refusals` (rule WL015)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from ..findings import Location
from ..infra.yamlload import parse_source

KUEUE_VALUES = "policies/kueue/values.yaml"
CONFIG_PATH = ("managerConfig", "controllerManagerConfigYaml")


def read(documents: Iterable[Any]) -> tuple[dict | None, Location | None]:
    """(the Configuration as a mapping, where it is written), or (None, None) without one: Kueue's defaults.

    The embedded YAML is parsed with the strict loader, so its size and depth are bounded like any file's."""
    doc = next((d for d in documents if d.path == KUEUE_VALUES), None)
    if doc is None or not isinstance(doc.data, dict):
        return None, None
    text = (doc.data.get(CONFIG_PATH[0]) or {}).get(CONFIG_PATH[1])
    if not isinstance(text, str):
        return None, None
    loaded = parse_source(text.encode(), KUEUE_VALUES)
    config = loaded.documents[0].data if loaded.ok and loaded.documents else None
    if not isinstance(config, dict):
        return None, None
    return config, Location(KUEUE_VALUES, doc.line_of(CONFIG_PATH))


# What Kueue refuses to start with, of the blocks the toolkit reads: cmd/kueue/main.go exits when
# pkg/config/validation.go `Validate` fails (kubernetes-sigs/kueue v0.19.2). `validateFairSharing`: a v1beta2
# `fairSharing` must list its strategies (v1beta2 gives them no default; v1beta1 defaults them when
# `enable: true`), as one of these sets. `validateWaitForPodsReady`: no negative timeout or backoff, and a
# requeuing timestamp of Creation or Eviction.
FAIR_SHARING_STRATEGY_SETS = (
    ("LessThanOrEqualToFinalShare",),
    ("LessThanInitialShare",),
    ("LessThanOrEqualToFinalShare", "LessThanInitialShare"),
)
REQUEUING_TIMESTAMPS = ("Creation", "Eviction")


def refusals(config: Any) -> list[tuple[str, str]]:
    """(field, why) for every value of `config` (the Configuration as a mapping) that Kueue's validation
    refuses, among `fairSharing` and `waitForPodsReady`; [] when it would start."""
    if not isinstance(config, dict):
        return []
    v1beta1 = str(config.get("apiVersion", "")).endswith("/v1beta1")
    gates = config.get("featureGates") if isinstance(config.get("featureGates"), dict) else {}
    pods_ready = None if gates.get("DisableWaitForPodsReady") is True else config.get("waitForPodsReady")
    return _fair_sharing_refusals(config.get("fairSharing"), v1beta1) + _pods_ready_refusals(
        pods_ready, v1beta1
    )


def _fair_sharing_refusals(block: Any, v1beta1: bool) -> list[tuple[str, str]]:
    if not isinstance(block, dict) or (v1beta1 and block.get("enable") is not True):
        return []  # off (a v1beta1 block without `enable: true` converts to none)
    strategies = block.get("preemptionStrategies")
    if not strategies:
        if v1beta1:
            return []  # defaulted to both strategies (apis/config/v1beta1/defaults.go)
        return [("fairSharing.preemptionStrategies", "must be specified (v1beta2 gives it no default)")]
    if not isinstance(strategies, list) or tuple(strategies) not in FAIR_SHARING_STRATEGY_SETS:
        sets = " or ".join(f"[{', '.join(s)}]" for s in FAIR_SHARING_STRATEGY_SETS)
        return [("fairSharing.preemptionStrategies", f"{strategies!r} is not one of {sets}")]
    return []


def _pods_ready_refusals(block: Any, v1beta1: bool) -> list[tuple[str, str]]:
    if not isinstance(block, dict) or (v1beta1 and block.get("enable") is not True):
        return []
    found = [
        (f"waitForPodsReady.{name}", f"{block[name]!r} is negative")
        for name in ("timeout", "recoveryTimeout")
        if isinstance(block.get(name), str) and block[name].startswith("-")
    ]
    strategy = block.get("requeuingStrategy")
    if isinstance(strategy, dict):
        timestamp = strategy.get("timestamp")
        if timestamp is not None and timestamp not in REQUEUING_TIMESTAMPS:
            found.append(
                ("waitForPodsReady.requeuingStrategy.timestamp", f"{timestamp!r} is not Creation or Eviction")
            )
        for name in ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"):
            value = strategy.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value < 0:
                found.append((f"waitForPodsReady.requeuingStrategy.{name}", f"{value} is negative"))
    return found
