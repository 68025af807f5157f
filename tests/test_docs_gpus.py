"""The GPU catalog page says, for every catalog model, what adding a pool of it needs: the product labels, the
PCI IDs, the driver minimums and every MIG profile with its geometry (before, a B200 pool's profile names and
PCI ID could only be learnt from error messages)."""

from __future__ import annotations

import re

import pytest
from support import REPO

from gpupolicy import pipeline
from gpupolicy.docsgen import Context
from gpupolicy.docsgen import gpus as gpu_page
from gpupolicy.domain import catalog


@pytest.fixture(scope="module")
def page() -> str:
    fleet = pipeline.run(REPO, rules=False).fleet
    return gpu_page.pages(Context(root=REPO, fleet=fleet))["gpus.md"]


def _section(page: str, key: str) -> str:
    """The text under `## KEY {...}` up to the next heading of that level."""
    sections = {text.split(" ", 1)[0]: text for text in re.split(r"^## ", page, flags=re.M)[1:]}
    return sections[key]


@pytest.mark.parametrize("model", list(catalog.GPUS.values()), ids=lambda m: m.key)
def test_every_model_has_its_labels_ids_drivers_and_profiles(page: str, model: catalog.GPUModel) -> None:
    section = _section(page, model.key)
    assert all(f"`{label}`" in section for label in model.product_labels)
    assert all(f"`{pci}`" in section for pci in model.pci_device_ids)
    assert f"driver at least | {model.min_driver} |" in section
    for profile in model.mig_profiles.values():
        row = (
            f"| `{profile.name}` | `{catalog.resource_name(profile, 'mixed')}` | {profile.compute_slices} "
            f"/ {profile.memory_slices} | {' '.join(map(str, profile.placements))} | {profile.max_count} |"
        )
        assert row in section, f"{model.key}: no row for {profile.name}"
    assert ("MIG profiles" in section) == bool(model.mig_profiles)


def test_the_summary_names_the_pools_of_each_model(page: str) -> None:
    """On whatever fleet this repository holds: each model's row names its pools, a model no pool has none."""
    fleet = pipeline.load_fleet(REPO)
    pools = [pool for cluster in fleet.clusters.values() for pool in cluster.pools]
    assert pools
    for model in catalog.GPUS.values():
        named = sorted(p.name for p in pools if p.gpu_model == model.key)
        row = next(line for line in page.splitlines() if line.startswith(f"| [{model.key}]"))
        assert row.endswith(f"| {', '.join(named) or '-'} |"), row
