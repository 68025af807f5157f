"""The Kueue Configuration the fleet runs: the `controllerManagerConfigYaml` of the Kueue chart's values, one
file shared by every cluster (policies/kueue/values.yaml). What a controller reads of it is decided where it
is used (workpath/kueue.py: integrations and namespaces; simulate/readiness.py: waitForPodsReady)."""

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
