"""One predicate per meaning of "a GPU resource" (domain/gpu_resources.py, issue 30): their edge cases, and
the admission policies that define the device predicate for the cluster agreeing with it."""

from __future__ import annotations

import pytest
from support import REPO

from gpupolicy.domain.gpu_resources import NVIDIA_DOMAIN, is_gpu_device_resource, is_nvidia_resource

DEVICES = [
    "nvidia.com/gpu",
    "nvidia.com/gpu.shared",
    "nvidia.com/mig-1g.10gb",
    "nvidia.com/mig-3g.40gb.shared",
    "nvidia.com/gpu.a100",
]
NVIDIA_NOT_DEVICES = [
    "nvidia.com/gpus",
    "nvidia.com/gpu-a100",
    "nvidia.com/mig",
    "nvidia.com/vgpu",
    "nvidia.com/",
]
NEITHER = [
    "cpu",
    "memory",
    "amd.com/gpu",
    "gpu",
    "nvidia.com",
    "requests.nvidia.com/gpu",
    "NVIDIA.COM/gpu",
    " nvidia.com/gpu",
    "",
    None,
    1,
    b"nvidia.com/gpu",
]


@pytest.mark.parametrize("name", DEVICES)
def test_whole_shared_and_mig_devices_are_both(name) -> None:
    assert is_gpu_device_resource(name) and is_nvidia_resource(name)


@pytest.mark.parametrize("name", NVIDIA_NOT_DEVICES)
def test_other_nvidia_names_are_quota_but_not_devices(name) -> None:
    """A name that merely begins like one (`gpus`, `gpu-a100`, `mig` without a profile) is no device."""
    assert is_nvidia_resource(name) and not is_gpu_device_resource(name)


@pytest.mark.parametrize("name", NEITHER)
def test_everything_else_is_neither_and_never_raises(name) -> None:
    """Names are case-sensitive and exact: a ResourceQuota's `requests.` spelling, another vendor's GPU, a
    non-string key of hostile YAML or live data."""
    assert not is_nvidia_resource(name) and not is_gpu_device_resource(name)


def test_the_domain_is_spelt_with_its_slash() -> None:
    assert NVIDIA_DOMAIN == "nvidia.com/"


@pytest.mark.reference_fleet
def test_the_admission_policies_test_the_same_names() -> None:
    """The fleet's admission policies are the cluster's definition of "requests a GPU"; the toolkit's model of
    them must read a name the same way."""
    expression = "r == 'nvidia.com/gpu' || r.startsWith('nvidia.com/gpu.') || r.startsWith('nvidia.com/mig-')"
    policies = sorted((REPO / "policies" / "admission").glob("gpu-*.yaml"))
    if not policies:
        pytest.skip("no admission policies in this checkout")
    for policy in policies:
        text = policy.read_text(encoding="utf-8")
        resource_tests = text.count("r == 'nvidia.com/") + text.count("r.startsWith('nvidia.com/")
        assert resource_tests == 3 * text.count(expression), f"{policy.name} tests a resource name otherwise"
    assert any(expression in policy.read_text(encoding="utf-8") for policy in policies)
