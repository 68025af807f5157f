"""Kubernetes taint/toleration matching on tolerations as written in YAML, shared by the rules that follow a
pool's taints to what must tolerate them (WL005: ResourceFlavors and NVIDIADrivers; WL007: the GPU Operator's
components, NFD worker included).

Matching is Kubernetes' own, `Toleration.ToleratesTaint` (kubernetes/kubernetes
`staging/src/k8s.io/api/core/v1/toleration.go`): an empty toleration effect matches every effect, otherwise
the effects must be equal; an empty key matches every key (with `Exists`), otherwise the keys must be equal;
operator `Exists` matches any value, `Equal` (or empty) needs the same value, `Lt`/`Gt` compare the values as
integers. Only `NoSchedule` and `NoExecute` taints keep a pod off a node (the scheduler's TaintToleration
filter).
"""

from __future__ import annotations

from ..model import Taint

BLOCKING_EFFECTS = ("NoSchedule", "NoExecute")


def tolerates(toleration: dict, taint: Taint) -> bool:
    """Kubernetes `Toleration.ToleratesTaint` (core/v1 toleration.go), on a toleration as written in YAML."""
    effect = str(toleration.get("effect") or "")
    if effect and effect != taint.effect:
        return False
    key = str(toleration.get("key") or "")
    if key and key != taint.key:
        return False
    operator = str(toleration.get("operator") or "")
    value = "" if toleration.get("value") is None else str(toleration.get("value"))
    if operator in ("", "Equal"):
        return value == taint.value
    if operator == "Exists":
        return True
    if operator in ("Lt", "Gt"):
        try:
            wanted, actual = int(value), int(taint.value)
        except ValueError:
            return False
        return actual < wanted if operator == "Lt" else actual > wanted
    return False


def show(taint: Taint) -> str:
    """A taint as `kubectl taint` spells it: key[=value]:effect."""
    value = f"={taint.value}" if taint.value else ""
    return f"{taint.key}{value}:{taint.effect}"
