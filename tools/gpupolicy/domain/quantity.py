"""Kubernetes resource quantities ("8", "500m", "1Gi") as exact Decimals."""

from __future__ import annotations

import functools
import math
import re
from decimal import Decimal, DecimalException

_SUFFIXES = {
    "": 1,
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
}
_QUANTITY = re.compile(r"^([+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?)(n|u|m|k|M|G|T|P|E|Ki|Mi|Gi|Ti|Pi|Ei)?$")


class QuantityError(ValueError):
    pass


# Kubernetes holds no quantity of 2**63 or more: "no quantity may represent a number greater than 2^63-1 in
# magnitude" (kubernetes/apimachinery pkg/api/resource/quantity.go, the Quantity doc comment), and Kueue reads
# every quota as an int64 (kubernetes-sigs/kueue pkg/resources/requests.go ResourceValue -> SafeValue in
# pkg/util/math/math.go, which clamps to math.MaxInt64). A bigger quota is silently capped upstream, and here
# it would be an int too long for Python to print (int max str digits), so it is refused.
INT64_LIMIT = 2**63


class QuantityRangeError(QuantityError):
    """A well-formed quantity whose magnitude Kubernetes cannot hold (2**63 or more)."""

    def __init__(self, message: str, negative: bool) -> None:
        super().__init__(message)
        self.negative = negative


def parse_quantity(value: object) -> Decimal:
    """Parse a Kubernetes quantity; raise QuantityError with a readable message when it is not one."""
    if isinstance(value, bool) or value is None:
        raise QuantityError(f"{value!r} is not a quantity")
    if isinstance(value, str | int):  # a fleet repeats the same few quota texts a million times
        return _parsed(value)
    return _in_range(value, _parse(value))


@functools.lru_cache(maxsize=65536, typed=True)
def _parsed(value: str | int) -> Decimal:
    return _in_range(value, _parse(value))


def _in_range(value: object, amount: Decimal) -> Decimal:
    if abs(amount) >= INT64_LIMIT:
        raise QuantityRangeError(
            f"{_shown(value)} is beyond the largest quantity Kubernetes holds (2^63-1)", negative=amount < 0
        )
    return amount


def kueue_quantity(value: object) -> Decimal:
    """A quota as Kueue reads it: past int64 clamped to +-(2^63-1), as kueue's SafeValue does
    (pkg/util/math/math.go). For the model, so that a refused quota (CAP016) is not read as 0 by the rest."""
    try:
        return parse_quantity(value)
    except QuantityRangeError as exc:
        return Decimal(-(INT64_LIMIT - 1) if exc.negative else INT64_LIMIT - 1)


def _shown(value: object) -> str:
    """The value for a message: a huge int literal (thousands of digits) cannot be turned into text."""
    return f"{Decimal(value):.3e}" if isinstance(value, int) and abs(value) >= INT64_LIMIT else repr(value)


def _parse(value: object) -> Decimal:
    if isinstance(value, int):
        return Decimal(value)
    if isinstance(value, float):
        if not math.isfinite(value):  # YAML .nan / .inf: no quantity, and NaN breaks every comparison
            raise QuantityError(f"{value!r} is not a finite quantity")
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
    except DecimalException as exc:  # an exponent beyond Decimal's range (1e999999999999) overflows
        raise QuantityError(f"{value!r} is out of range for a quantity") from exc


def parse_count(value: object) -> int:
    """A countable device quantity (GPUs, MIG slices): a whole, non-negative number."""
    amount = parse_quantity(value)
    if amount < 0:
        raise QuantityError(f"{value!r} is negative")
    if amount != amount.to_integral_value():
        raise QuantityError(f"{value!r} is not a whole number of devices")
    return int(amount)


# --- countable (extended) resources -------------------------------------------------------------------------

BINARY_SUFFIXES = ("Ki", "Mi", "Gi", "Ti", "Pi", "Ei")
# ResourceQuota names: requests.nvidia.com/gpu counts nvidia.com/gpu
QUOTA_PREFIXES = ("requests.", "limits.")


def is_extended_resource(name: str) -> bool:
    """Kubernetes' IsExtendedResourceName (pkg/apis/core/helper/helpers.go): a domain-qualified name outside
    kubernetes.io and without the quota prefix `requests.`. The API server requires whole numbers for these
    (IsIntegerResourceName): devices (nvidia.com/gpu, nvidia.com/mig-*, nvidia.com/gpu.shared) cannot be
    split."""
    return "/" in name and "kubernetes.io/" not in name and not name.startswith("requests.")


def counted_resource(quota_name: str) -> str:
    """The resource a ResourceQuota `hard` key counts (`requests.nvidia.com/gpu` -> `nvidia.com/gpu`)."""
    for prefix in QUOTA_PREFIXES:
        if quota_name.startswith(prefix):
            return quota_name[len(prefix) :]
    return quota_name


def count_problem(value: object) -> str:
    """Why `value` is not a whole number of devices: "" when it is (or when it is no quantity at all: the
    schemas and the negative-quota rule report those), else a phrase for a message."""
    try:
        amount = parse_quantity(value)
    except QuantityError:
        return ""
    text = str(value).strip()
    if has_binary_suffix(value):
        return f"{text} has a binary (memory) suffix: it is {_plain(amount)} devices"
    if amount != amount.to_integral_value():
        return f"{text} is not a whole number of devices"
    return ""


def has_binary_suffix(value: object) -> bool:
    return isinstance(value, str) and value.strip().endswith(BINARY_SUFFIXES)


def _plain(amount: Decimal) -> str:
    return str(int(amount)) if amount == amount.to_integral_value() else f"{amount.normalize():f}"


# --- amounts as a person reads them
# ---------------------------------------------------------------------------

# Resources counted in bytes (core/v1 ResourceName: memory, storage, ephemeral-storage, hugepages-<size>).
BYTE_RESOURCES = ("memory", "storage", "ephemeral-storage")
_BYTE_UNITS = (("TiB", 2**40), ("GiB", 2**30), ("MiB", 2**20), ("KiB", 2**10))
# Counts at or above this are shown as 1.234e+15: an exact quota can hold an int too long to print.
HUGE_COUNT = 10**15


def human_amount(resource: str, amount: object) -> str:
    """An amount of `resource` in the unit a reviewer thinks in: bytes as GiB/TiB, cpu as cores, devices
    (GPUs, MIG slices) and every other count as a plain number. `resource` may carry a ResourceQuota prefix
    (`requests.memory`). A value that is no quantity is shown as written."""
    value = _amount(amount)
    return str(amount) if value is None else _in_unit(counted_resource(resource), value, signed=False)


def number(value: float, decimals: int | None = None) -> str:
    """A quota exactly as a message quotes it: 16 rather than 16.0, 0.5 as written (or with `decimals` places:
    2.7 for 2.66 with 1); 1.000e+400 for a number too large for a float (and for Python's int-to-text limit:
    from HUGE_COUNT on, as `human_amount`), never an exception. Beside `human_amount` (issue 30): the rules'
    messages quote amounts exactly, a reviewer's tables round them."""
    amount = Decimal(value)
    if not amount.is_finite():
        return str(amount)
    if abs(amount) >= HUGE_COUNT:
        return f"{amount:.3e}"
    if amount == amount.to_integral_value():
        return str(int(amount))
    return str(value) if decimals is None else f"{value:.{decimals}f}"


def human_delta(resource: str, old: object, new: object) -> str:
    """`new - old` with its sign, in the unit of `human_amount`; an absent side (None) counts as 0, and a side
    that is no quantity makes no delta ("")."""
    before, after = _amount(0 if old is None else old), _amount(0 if new is None else new)
    if before is None or after is None:
        return ""
    return _in_unit(counted_resource(resource), after - before, signed=True)


def _amount(value: object) -> Decimal | None:
    """A model's number (int, float, Decimal; exact even past int64, which the model may hold) or a quantity's
    text as a Decimal; None when it is neither."""
    if isinstance(value, Decimal):
        return value
    if isinstance(value, int) and not isinstance(value, bool):
        return Decimal(value)
    try:
        return parse_quantity(value)
    except QuantityError:
        return None


def _in_unit(name: str, value: Decimal, signed: bool) -> str:
    sign = ("+" if value >= 0 else "-") if signed else ("-" if value < 0 else "")
    size = abs(value)
    if name in BYTE_RESOURCES or name.startswith("hugepages-"):
        for unit, scale in _BYTE_UNITS:
            if size >= scale:
                return f"{sign}{_rounded(size / scale)} {unit}"
        return f"{sign}{_plain(size)} bytes"
    if name == "cpu":
        return f"{sign}{_rounded(size)} {'core' if size == 1 else 'cores'}"
    if size >= HUGE_COUNT:
        return f"{sign}{size:.3e}"
    return f"{sign}{_rounded(size)}"


def _rounded(amount: Decimal) -> str:
    """At most two decimals, without trailing zeros: 768, 1.5, 0.25."""
    return _plain(amount.quantize(Decimal("0.01")) if amount != amount.to_integral_value() else amount)
