"""Kubernetes label matching, shared by the fleet model, the rules and the admission simulator.

A metav1.LabelSelector holds `matchLabels` (key -> value, all must be on the object) and `matchExpressions`
(`{key, operator, values}` with operator In, NotIn, Exists or DoesNotExist); every term must hold. Selector
values compare as strings, as the API server stores them. The callers decide what an absent selector means:
the admission API matches everything, a ClusterQueue's absent namespaceSelector matches nothing.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any


def labels_match(wanted: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """Every key=value of `wanted` (matchLabels, a nodeSelector) is on `labels`; an empty map matches."""
    return all(labels.get(key) == str(value) for key, value in wanted.items())


def label_selector_matches(selector: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """A LabelSelector mapping against a label map; {} matches everything. A malformed selector (the schema
    stage reports it) matches nothing, as the API server would reject the object."""
    match_labels = selector.get("matchLabels") or {}
    expressions = selector.get("matchExpressions") or []
    if not isinstance(match_labels, Mapping) or not isinstance(expressions, list):
        return False
    if not labels_match(match_labels, labels):
        return False
    return all(_expression_holds(e, labels) for e in expressions if isinstance(e, dict))


def _expression_holds(expression: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    key = str(expression.get("key", ""))
    operator = expression.get("operator")
    raw_values = expression.get("values") or []
    values = [str(v) for v in raw_values] if isinstance(raw_values, list) else []
    if operator == "In":
        return key in labels and labels[key] in values
    if operator == "NotIn":
        return key not in labels or labels[key] not in values
    if operator == "Exists":
        return key in labels
    if operator == "DoesNotExist":
        return key not in labels
    return False  # an unknown operator is a schema error; it matches nothing, as the API server rejects it


def node_requirement_holds(requirement: Mapping[str, Any], labels: Mapping[str, Any]) -> bool:
    """A NodeSelectorRequirement (required node affinity): the label selector's operators, plus Gt and Lt,
    which
    compare a single integer value (k8s.io/component-helpers scheduling/corev1/nodeaffinity)."""
    operator = requirement.get("operator")
    if operator not in ("Gt", "Lt"):
        return _expression_holds(requirement, labels)
    key = str(requirement.get("key", ""))
    values = requirement.get("values")
    if key not in labels or not isinstance(values, list) or len(values) != 1:
        return False
    try:
        have, bound = int(str(labels[key])), int(str(values[0]))
    except ValueError:
        return False
    return have > bound if operator == "Gt" else have < bound
