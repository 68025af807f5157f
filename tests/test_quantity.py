from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from gpupolicy.domain.quantity import QuantityError, parse_count, parse_quantity


@pytest.mark.parametrize("text, value", [("8", 8), ("500m", Decimal("0.5")), ("1Gi", 2**30), ("2k", 2000),
                                          (16, 16), ("1e3", 1000), (".5", Decimal("0.5"))])
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
