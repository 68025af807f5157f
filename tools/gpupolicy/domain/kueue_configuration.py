"""The Kueue Configuration the fleet runs: the `controllerManagerConfigYaml` of the Kueue chart's values, one
file shared by every cluster (policies/kueue/values.yaml). What a controller reads of it is decided where it
is used (workpath/kueue.py: integrations and namespaces; simulate/readiness.py: waitForPodsReady;
simulate/fairsharing.py: fairSharing); what Kueue refuses to start with is `refusals` (rule WL015)."""

from __future__ import annotations

import difflib
import re
import reprlib
from collections.abc import Callable, Iterable
from typing import Any

from ..findings import Location
from ..infra.yamlload import parse_source
from ..model.selectors import label_selector_matches

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


def field_locator(documents: Iterable[Any]) -> Callable[[str], Location | None]:
    """Where a field (as `refusals` names it: `integrations.frameworks[2]`) is written in the values file: the
    embedded Configuration's own line of it, counted from the line after its key, as the chart's `|-` block
    scalar puts it; the key's line where the text is a single line or the field is not written. The text is
    parsed once, however many fields are asked for."""
    doc = next((d for d in documents if d.path == KUEUE_VALUES), None)
    if doc is None or not isinstance(doc.data, dict):
        return lambda field: None
    key_line = doc.line_of(CONFIG_PATH)
    text = (doc.data.get(CONFIG_PATH[0]) or {}).get(CONFIG_PATH[1])
    loaded = parse_source(text.encode(), KUEUE_VALUES) if isinstance(text, str) and "\n" in text else None
    if loaded is None or not (loaded.ok and loaded.documents):
        return lambda field: Location(KUEUE_VALUES, key_line)
    embedded = loaded.documents[0]

    def locate(field: str) -> Location:
        path = tuple(int(part) if part.isdigit() else part for part in re.findall(r"[^.\[\]]+", field))
        return Location(KUEUE_VALUES, key_line + embedded.line_of(path))

    return locate


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
# `validateIntegrations`: each of `integrations.frameworks` must be an integration Kueue registers
# (jobframework.GetIntegration: the FrameworkName of each package under pkg/controller/jobs, all of them
# built into the binary), none named twice; each of `externalFrameworks` must read Kind.version.group
# (apimachinery schema.ParseKindArg finds a kind, version and group only in a name with two dots or more).
BUILT_IN_FRAMEWORKS = (
    "batch/job",
    "deployment",
    "jobset.x-k8s.io/jobset",
    "kubeflow.org/jaxjob",
    "kubeflow.org/mpijob",
    "kubeflow.org/paddlejob",
    "kubeflow.org/pytorchjob",
    "kubeflow.org/tfjob",
    "kubeflow.org/xgboostjob",
    "leaderworkerset.x-k8s.io/leaderworkerset",
    "pod",
    "ray.io/raycluster",
    "ray.io/rayjob",
    "ray.io/rayservice",
    "sparkoperator.k8s.io/sparkapplication",
    "statefulset",
    "trainer.kubeflow.org/trainjob",
    "workload.codeflare.dev/appwrapper",
)
# `validateManagedJobsNamespaceSelector`: the selector may not match kube-system nor Kueue's own namespace
# (`namespace`, defaulted to the one Kueue runs in, kueue-system: apis/config/v1beta2/defaults.go), each
# told by its kubernetes.io/metadata.name label alone; apimachinery's ValidateLabelSelector refuses an
# unknown operator, In or NotIn without values, and Exists or DoesNotExist with some.
PROTECTED_NAMESPACES = ("kube-system",)
DEFAULT_NAMESPACE = "kueue-system"
SELECTOR_OPERATORS = {"In": True, "NotIn": True, "Exists": False, "DoesNotExist": False}  # -> takes values


_REPR = reprlib.Repr()
_REPR.maxstring = _REPR.maxother = 80  # a value a pull request wrote, shown without its megabytes


def _shown(value: Any) -> str:
    return _REPR.repr(value)


def refusals(config: Any) -> list[tuple[str, str]]:
    """(field, why) for every value of `config` (the Configuration as a mapping) that Kueue's validation
    refuses, among `fairSharing`, `waitForPodsReady`, `integrations` and `managedJobsNamespaceSelector`; []
    when it would start."""
    if not isinstance(config, dict):
        return []
    v1beta1 = str(config.get("apiVersion", "")).endswith("/v1beta1")
    gates = config.get("featureGates") if isinstance(config.get("featureGates"), dict) else {}
    pods_ready = None if gates.get("DisableWaitForPodsReady") is True else config.get("waitForPodsReady")
    return (
        _fair_sharing_refusals(config.get("fairSharing"), v1beta1)
        + _pods_ready_refusals(pods_ready, v1beta1)
        + _integration_refusals(config.get("integrations"))
        + _namespace_selector_refusals(config.get("managedJobsNamespaceSelector"), config.get("namespace"))
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
        return [("fairSharing.preemptionStrategies", f"{_shown(strategies)} is not one of {sets}")]
    return []


def _pods_ready_refusals(block: Any, v1beta1: bool) -> list[tuple[str, str]]:
    if not isinstance(block, dict) or (v1beta1 and block.get("enable") is not True):
        return []
    found = [
        (f"waitForPodsReady.{name}", f"{_shown(block[name])} is negative")
        for name in ("timeout", "recoveryTimeout")
        if isinstance(block.get(name), str) and block[name].startswith("-")
    ]
    strategy = block.get("requeuingStrategy")
    if isinstance(strategy, dict):
        timestamp = strategy.get("timestamp")
        if timestamp is not None and timestamp not in REQUEUING_TIMESTAMPS:
            why = f"{_shown(timestamp)} is not Creation or Eviction"
            found.append(("waitForPodsReady.requeuingStrategy.timestamp", why))
        for name in ("backoffLimitCount", "backoffBaseSeconds", "backoffMaxSeconds"):
            value = strategy.get(name)
            if isinstance(value, int) and not isinstance(value, bool) and value < 0:
                found.append((f"waitForPodsReady.requeuingStrategy.{name}", f"{value} is negative"))
    return found


def _integration_refusals(block: Any) -> list[tuple[str, str]]:
    if not isinstance(block, dict):
        return []  # defaulted
    found: list[tuple[str, str]] = []
    frameworks = block.get("frameworks") if isinstance(block.get("frameworks"), list) else []
    named: set[str] = set()
    for index, name in enumerate(frameworks):
        where = f"integrations.frameworks[{index}]"
        if name not in BUILT_IN_FRAMEWORKS:
            found.append((where, f"{_shown(name)} is not an integration Kueue has{_did_you_mean(name)}"))
        elif name in named:
            found.append((where, f"{name!r} is named twice"))
        else:
            named.add(name)
    external = block.get("externalFrameworks") if isinstance(block.get("externalFrameworks"), list) else []
    for index, name in enumerate(external):
        if not isinstance(name, str) or name.count(".") < 2:
            why = f"{_shown(name)} is not Kind.version.group"
            found.append((f"integrations.externalFrameworks[{index}]", why))
    return found


def _namespace_selector_refusals(selector: Any, namespace: Any) -> list[tuple[str, str]]:
    if not isinstance(selector, dict):
        return []  # defaulted to every namespace but kube-system and Kueue's own
    where = "managedJobsNamespaceSelector"
    expressions = selector.get("matchExpressions") or []
    if not isinstance(expressions, list) or not isinstance(selector.get("matchLabels") or {}, dict):
        return [(where, "matchLabels must be a mapping and matchExpressions a list")]
    malformed = [why for expression in expressions if (why := _malformed(expression))]
    if malformed:
        return [(where, why) for why in malformed]
    kueue_namespace = namespace if isinstance(namespace, str) and namespace else DEFAULT_NAMESPACE
    return [
        (where, f"matches the {_shown(name)} namespace, which Kueue must never manage")
        for name in (*PROTECTED_NAMESPACES, kueue_namespace)
        if label_selector_matches(selector, {"kubernetes.io/metadata.name": name})
    ]


def _malformed(expression: Any) -> str:
    if not isinstance(expression, dict):
        return f"{_shown(expression)} is not a label selector requirement"
    operator, values = expression.get("operator"), expression.get("values") or []
    if operator not in SELECTOR_OPERATORS:
        return f"operator {_shown(operator)} is not In, NotIn, Exists or DoesNotExist"
    if SELECTOR_OPERATORS[operator] != bool(values):
        return f"operator {operator} {'needs' if SELECTOR_OPERATORS[operator] else 'takes no'} values"
    return ""


def _did_you_mean(name: Any) -> str:
    close = difflib.get_close_matches(str(name), BUILT_IN_FRAMEWORKS, n=1)
    return f" (did you mean {close[0]!r}?)" if close else " (the rule's page lists those it has)"
