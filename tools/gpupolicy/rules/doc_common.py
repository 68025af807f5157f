"""What the DOC rules share: the decision log of the fleet's repository, read once per run."""

from __future__ import annotations

from pathlib import Path

from ..decisions import Decision, load_log
from ..model import Fleet


def decision_log(fleet: Fleet) -> list[Decision]:
    return fleet.memo("decision-log", lambda: load_log(Path(fleet.root)))
