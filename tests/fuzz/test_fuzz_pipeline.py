"""A hypothesis-driven fuzz of the whole pipeline: the mini repository with one file's value replaced by
something of the wrong type (or the file replaced by arbitrary bytes or YAML) must validate without an
exception, without a rule crashing, and every finding must name a rule and a path.

Each example renders with kubectl, so the default run is small; set GPUPOLICY_FUZZ_EXAMPLES=500 for a long
session. (atheris would need a clang toolchain here; hypothesis's shrinking gives readable failures anyway.)
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpupolicy import pipeline
from gpupolicy.errors import ToolError

MINIREPO = Path(__file__).resolve().parents[1] / "fixtures" / "minirepo"
EXAMPLES = int(os.environ.get("GPUPOLICY_FUZZ_EXAMPLES", "12"))
TARGETS = (
    "pools/mini-a100/pool.yaml",
    "clusters/mini/cluster.yaml",
    "clusters/mini/queues.yaml",
    "clusters/mini/kustomization.yaml",
    "policies/base/team.yaml",
    "pools/mini-a100/flavor.yaml",
    "pools/mini-a100/kustomization.yaml",
)

scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**64), 2**64),
    st.floats(allow_nan=True),
    st.sampled_from(
        [
            "",
            "-1",
            "1.5Gi",
            "eight",
            "../../../etc",
            "https://example.com/x",
            "\u0430lpha",
            "a" * 300,
            "0x10",
            "1e400",
        ]
    ),
    st.text(max_size=12),
)
values = st.recursive(
    scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=3), st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)


def _paths(data: Any, prefix: tuple = ()) -> list[tuple]:
    """Every key/index path inside `data`."""
    found = [prefix] if prefix else []
    if isinstance(data, dict):
        for key, value in data.items():
            found += _paths(value, prefix + (key,))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            found += _paths(value, prefix + (index,))
    return found


def _replaced(data: Any, path: tuple, value: Any) -> Any:
    if not path:
        return value
    head, rest = path[0], path[1:]
    copy = dict(data) if isinstance(data, dict) else list(data)
    copy[head] = _replaced(copy[head], rest, value)
    return copy


@st.composite
def mutations(draw) -> tuple[str, bytes]:
    """(file, new content): a value swapped at some path, a whole document replaced, or raw bytes."""
    target = draw(st.sampled_from(TARGETS))
    original = list(yaml.safe_load_all((MINIREPO / target).read_text()))
    how = draw(st.sampled_from(["swap", "swap", "swap", "document", "bytes"]))
    if how == "bytes":
        return target, draw(st.binary(max_size=200))
    if how == "document":
        return target, yaml.safe_dump(draw(values), allow_unicode=True).encode()
    index = draw(st.integers(0, len(original) - 1))
    paths = _paths(original[index])
    path = draw(st.sampled_from(paths)) if paths else ()
    original[index] = _replaced(original[index], path, draw(values))
    return target, yaml.safe_dump_all(original, allow_unicode=True, sort_keys=False).encode()


@pytest.mark.reference_fleet
@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutations())
def test_mutated_repository_never_crashes(tmp_path_factory, mutation: tuple[str, bytes]) -> None:
    target, content = mutation
    repo = tmp_path_factory.mktemp("fuzz") / "repo"
    shutil.copytree(MINIREPO, repo)
    (repo / target).write_bytes(content)
    try:
        result = pipeline.run(repo)
    except ToolError:
        return  # a usage-level error with a message (exit 2) is a clean outcome
    assert not result.crashes, result.crashes
    for finding in result.findings:
        assert finding.rule and isinstance(finding.line, int) and finding.line >= 0
