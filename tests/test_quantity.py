from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpupolicy.domain.quantity import (
    HUGE_COUNT,
    QuantityError,
    human_amount,
    number,
    parse_count,
    parse_quantity,
)


@pytest.mark.parametrize(
    "text, value",
    [
        ("8", 8),
        ("500m", Decimal("0.5")),
        ("1Gi", 2**30),
        ("2k", 2000),
        (16, 16),
        ("1e3", 1000),
        (".5", Decimal("0.5")),
    ],
)
def test_parse_quantity(text, value) -> None:
    assert parse_quantity(text) == value


@pytest.mark.parametrize("text", ["1.5Gi GPUs", "eight", "", "1e3Ki", None, True, "--1"])
def test_malformed_quantities(text) -> None:
    with pytest.raises(QuantityError):
        parse_quantity(text)


@pytest.mark.parametrize("text", ["-1", "1.5", "500m"])
def test_device_counts_are_whole_and_non_negative(text) -> None:
    with pytest.raises(QuantityError):
        parse_count(text)


@given(st.integers(0, 10**6))
def test_integers_round_trip(n: int) -> None:
    assert parse_count(str(n)) == n == parse_count(n)


@given(st.text(max_size=12))
def test_never_raises_anything_but_quantity_error(text: str) -> None:
    try:
        parse_quantity(text)
    except QuantityError:
        pass


# --- amounts in messages: quantity.number, the exact style beside human_amount (issue 30) -------------------


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (16, "16"),
        (16.0, "16"),
        (0.5, "0.5"),
        (-3, "-3"),
        (Decimal("1.50"), "1.50"),
        (Decimal("2.000"), "2"),
        (10**15 - 1, "999999999999999"),
        (10**15, "1.000e+15"),
        (-(10**15), "-1.000e+15"),
        (10**400, "1.000e+400"),
        (1e300, "1.000e+300"),
        (float("inf"), "Infinity"),
        (float("nan"), "NaN"),
    ],
)
def test_number_quotes_an_amount_exactly_and_never_raises(value, shown) -> None:
    assert number(value) == shown


def test_number_and_human_amount_switch_to_scientific_notation_at_the_same_count() -> None:
    assert number(HUGE_COUNT).endswith("e+15") and human_amount("nvidia.com/gpu", HUGE_COUNT).endswith("e+15")
    assert "e" not in number(HUGE_COUNT - 1) and "e" not in human_amount("nvidia.com/gpu", HUGE_COUNT - 1)
