"""What the DOC rules share: the decision log of the fleet's repository, read once by the load stage."""

from __future__ import annotations

from ..domain.decisions import Decision
from ..model import Fleet


def decision_log(fleet: Fleet) -> list[Decision]:
    return fleet.decision_log
