"""`--fail-nodes SPEC`: node failures to inject, e.g. `pool-a:2@3600` or `pool-a:2@1h+30m,pool-b:1@2h`.

`POOL:COUNT@TIME[+DOWNTIME]`: COUNT nodes of POOL fail at TIME and come back DOWNTIME later (never, when
omitted). Times are seconds, or a number with s, m, h or d.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

_UNITS = {"s": 1, "m": 60, "h": 3600, "d": 86400, "": 1}
_ITEM = re.compile(
    r"^(?P<pool>[a-z0-9][-a-z0-9.]*):(?P<count>\d+)@(?P<at>\d+[smhd]?)(?:\+(?P<down>\d+[smhd]?))?$"
)


@dataclass(frozen=True)
class Failure:
    pool: str
    nodes: int
    at: int
    downtime: int | None = None


def _seconds(text: str) -> int:
    unit = text[-1] if text[-1] in _UNITS and not text[-1].isdigit() else ""
    return int(text[: len(text) - len(unit)]) * _UNITS[unit]


def parse_duration(text: str) -> int | None:
    """`90`, `30m`, `1h`, `2d` -> seconds; None when the text is not such a duration."""
    text = text.strip()
    return _seconds(text) if re.fullmatch(r"\d+[smhd]?", text) else None


def parse_failures(spec: str) -> list[Failure]:
    failures = []
    for item in filter(None, (part.strip() for part in spec.split(","))):
        match = _ITEM.match(item)
        if not match:
            raise ValueError(
                f"--fail-nodes: cannot read {item!r}; expected POOL:COUNT@TIME[+DOWNTIME], "
                "e.g. pool-a:2@3600 or pool-a:2@1h+30m"
            )
        down = match["down"]
        failures.append(
            Failure(
                match["pool"], int(match["count"]), _seconds(match["at"]), _seconds(down) if down else None
            )
        )
    return failures
