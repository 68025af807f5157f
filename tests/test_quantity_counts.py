"""Countable (extended) resources: which names Kubernetes counts in whole units, and which quantities are not
a whole number of devices (gpupolicy.domain.quantity, used by CAP017)."""

from __future__ import annotations

import pytest

from gpupolicy.domain.quantity import (
    QuantityError,
    QuantityRangeError,
    count_problem,
    counted_resource,
    is_extended_resource,
    parse_quantity,
)


@pytest.mark.parametrize(
    "name", ["nvidia.com/gpu", "nvidia.com/mig-1g.10gb", "nvidia.com/gpu.shared", "example.com/fpga"]
)
def test_domain_qualified_names_are_extended(name: str) -> None:
    assert is_extended_resource(name)


@pytest.mark.parametrize(
    "name", ["cpu", "memory", "hugepages-2Mi", "kubernetes.io/batch", "requests.nvidia.com/gpu"]
)
def test_native_and_quota_names_are_not_extended(name: str) -> None:
    assert not is_extended_resource(name)  # helper.IsExtendedResourceName: native, or the quota prefix


def test_quota_names_count_the_resource_after_the_prefix() -> None:
    assert counted_resource("requests.nvidia.com/mig-2g.20gb") == "nvidia.com/mig-2g.20gb"
    assert counted_resource("nvidia.com/gpu") == "nvidia.com/gpu"


@pytest.mark.parametrize("value", [8, "8", "0", "1000m", "2k", "1e3"])
def test_whole_counts_pass(value: object) -> None:
    assert count_problem(value) == ""


@pytest.mark.parametrize(
    ("value", "phrase"),
    [
        (0.5, "not a whole number"),
        ("0.5", "not a whole number"),
        ("500m", "not a whole number"),
        ("1Ki", "1024 devices"),
        ("1.5Gi", "1610612736 devices"),
        ("2Mi", "binary (memory) suffix"),
    ],
)
def test_fractions_and_memory_suffixes_are_named(value: object, phrase: str) -> None:
    assert phrase in count_problem(value)


@pytest.mark.parametrize("value", ["eight", "-1", None, True, "1Gi1"])
def test_what_is_no_count_at_all_is_left_to_other_checks(value: object) -> None:
    assert count_problem(value) == ""  # the schemas (not a quantity) and CAP016 (negative) report these


@pytest.mark.parametrize("value", [float("nan"), float("inf"), "1e999999999999"])
def test_non_finite_and_out_of_range_quantities_are_quantity_errors(value: object) -> None:
    with pytest.raises(QuantityError):  # never a Decimal NaN (comparisons raise) nor decimal.Overflow
        parse_quantity(value)
    assert count_problem(value) == ""


# --- the int64 bound: kubernetes/apimachinery quantity.go, "no quantity may represent a number greater than
# 2^63-1 in magnitude"; Kueue reads quotas as int64 -------------------------------------------------------


@pytest.mark.parametrize("value", [2**63 - 1, "9223372036854775807", -(2**63 - 1), "7Ei", "9E"])
def test_quantities_up_to_int64_parse(value: object) -> None:
    assert abs(parse_quantity(value)) < 2**63


@pytest.mark.parametrize(
    "value",
    [
        2**63,
        "9223372036854775808",
        "8Ei",
        "10E",
        "1e19",
        "-1e19",
        "1e5000",
        1e300,
        pytest.param(10**5000, id="10**5000"),
    ],
)
def test_quantities_of_2_to_the_63_or_more_are_refused(value: object) -> None:
    with pytest.raises(QuantityRangeError, match="beyond the largest quantity Kubernetes holds"):
        parse_quantity(value)
    assert count_problem(value) == ""  # CAP016 reports the range, once


def test_a_huge_int_is_shown_without_turning_it_into_text() -> None:
    with pytest.raises(QuantityRangeError, match=r"1\.000e\+5000"):  # str() of it would raise ValueError
        parse_quantity(10**5000)
