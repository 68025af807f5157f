"""A cluster's admission chain: its ValidatingAdmissionPolicies and bindings, evaluated with CEL (`cel`),
built once per run and shared by the rules that review requests against it (SEC003, SEC009, WL011, WL012) and
by
`gpupolicy explain` (workpath)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from . import cel

if TYPE_CHECKING:
    from ..model import Cluster, Fleet


def chain_of(fleet: Fleet, cluster: Cluster) -> cel.AdmissionChain:
    """The cluster's admission chain, built once per run; its verdicts are kept between runs when the run
    keeps them (`Fleet.admission_reviews`)."""
    return cluster.memo(
        "admission_chain",
        lambda: cel.AdmissionChain.from_objects(
            (o.body for o in cluster.objects if o.kind in (cel.POLICY_KIND, cel.BINDING_KIND)),
            fleet.admission_reviews,
        ),
    )
