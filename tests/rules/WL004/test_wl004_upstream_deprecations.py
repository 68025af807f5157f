"""WL004's table of deprecated monitor fields is exactly what the upstream Prometheus Operator CRDs mark
"Deprecated:" (read from ../shared/crds, the CRD copies the carried schemas are checked against)."""

from __future__ import annotations

import pytest
import yaml
from support import SHARED

from gpupolicy.rules.wl004_deprecated_monitor_fields import DEPRECATED, KINDS, deprecated_fields

CRDS = SHARED / "crds" / "prometheus-operator"


@pytest.mark.skipif(not CRDS.is_dir(), reason="../shared/crds is not available")
def test_deprecated_table_matches_the_upstream_crds() -> None:
    found = []
    for path in sorted(CRDS.glob("*.yaml")):
        for crd in yaml.safe_load_all(path.read_text(encoding="utf-8")):
            found.extend(entry for entry in deprecated_fields(crd) if entry[0] in KINDS)
    assert sorted(found) == sorted(DEPRECATED)


def test_deprecated_fields_reads_description_paragraphs() -> None:
    crd = {"spec": {"names": {"kind": "Widget"}, "versions": [{"name": "v1", "served": True, "schema": {
        "openAPIV3Schema": {"properties": {"spec": {"properties": {
            "old": {"description": "old does a thing.\n\nDeprecated: use\n`new` instead."},
            "new": {"description": "Not Deprecated: at all."},
            "list": {"items": {"properties": {"x": {"description": "x\n\nDeprecated: gone."}}}}}}}}}}]}}
    assert deprecated_fields(crd) == [("Widget", ("spec", "list", "[]", "x"), "Deprecated: gone."),
                                      ("Widget", ("spec", "old"), "Deprecated: use `new` instead.")]
