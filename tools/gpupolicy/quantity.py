"""Kubernetes resource quantities ("8", "500m", "1Gi") as exact Decimals."""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_SUFFIXES = {
    "": 1, "n": Decimal("1e-9"), "u": Decimal("1e-6"), "m": Decimal("1e-3"),
    "k": 10**3, "M": 10**6, "G": 10**9, "T": 10**12, "P": 10**15, "E": 10**18,
    "Ki": 2**10, "Mi": 2**20, "Gi": 2**30, "Ti": 2**40, "Pi": 2**50, "Ei": 2**60,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


class QuantityError(ValueError):
    pass


def parse_quantity(value: object) -> Decimal:
    """Parse a Kubernetes quantity; raise QuantityError with a readable message when it is not one."""
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        return Decimal(str(value))
    text = str(value).strip()
    match = _QUANTITY.match(text)
    if not match:
        raise QuantityError(f"{value!r} is not a Kubernetes quantity")
    number, suffix = match.group(1), match.group(2) or ""
    if "e" in number.lower() and suffix:
        raise QuantityError(f"{value!r} mixes an exponent and a suffix")
    try:
        return Decimal(number) * Decimal(_SUFFIXES[suffix])
    except InvalidOperation as exc:  # pragma: no cover - the regex admits only decimals
        raise QuantityError(f"{value!r} is not a Kubernetes quantity") from exc


def parse_count(value: object) -> int:
    """A countable device quantity (GPUs, MIG slices): a whole, non-negative number."""
    amount = parse_quantity(value)
    if amount < 0:
        raise QuantityError(f"{value!r} is negative")
    if amount != amount.to_integral_value():
        raise QuantityError(f"{value!r} is not a whole number of devices")
    return int(amount)
