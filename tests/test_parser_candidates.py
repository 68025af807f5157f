"""Faster loaders for kubectl's output (bench/compare_parsers.py, decision 0047): a loader may replace
PyYAML's
C loader only if it builds identical Python objects, document by document, YAML 1.1 scalars included."""

from __future__ import annotations

import datetime
import importlib
import importlib.util
import math
import sys
from pathlib import Path

import pytest

from gpupolicy.infra import yamlload

REPO = Path(__file__).resolve().parents[1]

# kubectl prints what kyaml read: a plain `yes` in a source stays a plain `yes` in the output, and the API
# server's YAML 1.1 reading (sigs.k8s.io/yaml) makes it true. These are the scalars where YAML 1.1 and 1.2
# part.
YAML_1_1_OUTPUT = """\
apiVersion: v1
kind: ConfigMap
metadata:
  name: scalars
  labels:
    quoted-yes: "yes"
    quoted-octal: '0777'
data:
  plain-yes: yes
  plain-on: on
  plain-off: Off
  octal: 0777
  hex: 0x1F
  underscored: 1_000
  sexagesimal: 12:30:00
  exponent-without-dot: 1e3
  float: 2.50
  infinity: .inf
  not-a-number: .nan
  tilde: ~
  empty:
  tagged: !!str 12
  date: 2002-12-14
  timestamp: 2001-12-14t21:59:43.10-05:00
  literal: |
    line one
    line two
  list: [1, 2.5, null, no, "no"]
---
apiVersion: v1
kind: Namespace
metadata:
  name: second
  annotations:
    note: "a: b"
"""


@pytest.fixture(scope="module")
def compare_parsers():
    sys.path.insert(0, str(REPO / "bench"))
    try:
        spec = importlib.util.spec_from_file_location(
            "compare_parsers", REPO / "bench" / "compare_parsers.py"
        )
        module = importlib.util.module_from_spec(spec)
        sys.modules["compare_parsers"] = module  # dataclasses look their module up
        spec.loader.exec_module(module)
        yield module
    finally:
        sys.path.remove(str(REPO / "bench"))


def test_the_rendered_loader_reads_yaml_1_1_scalars_as_the_api_server_does() -> None:
    first, second = yamlload.load_rendered(YAML_1_1_OUTPUT)
    data = first["data"]
    assert data["plain-yes"] is True and data["plain-on"] is True and data["plain-off"] is False
    assert (
        data["octal"] == 511
        and data["hex"] == 31
        and data["underscored"] == 1000
        and data["sexagesimal"] == 45000
    )
    assert (
        data["exponent-without-dot"] == "1e3"
        and math.isnan(data["not-a-number"])
        and data["infinity"] == math.inf
    )
    assert data["tilde"] is None and data["empty"] is None and data["tagged"] == "12"
    assert data["date"] == datetime.date(2002, 12, 14)
    assert data["timestamp"] == datetime.datetime(2001, 12, 15, 2, 59, 43, 100000, tzinfo=datetime.UTC)
    assert data["list"] == [1, 2.5, None, False, "no"]
    assert first["metadata"]["labels"] == {"quoted-yes": "yes", "quoted-octal": "0777"}
    assert second["metadata"]["annotations"] == {"note": "a: b"}


def test_identity_is_strict_about_types(compare_parsers) -> None:
    identical = compare_parsers.identical
    assert identical({"a": [1, "x", None]}, {"a": [1, "x", None]})
    assert not identical({"a": True}, {"a": 1})  # == says True == 1
    assert not identical({"a": 1}, {"a": 1.0})
    assert not identical({"a": datetime.date(2002, 12, 14)}, {"a": "2002-12-14"})
    assert not identical({"a": 1, "b": 2}, {"b": 2, "a": 1})  # key order is part of the object
    assert identical([math.nan], [math.nan])
    assert "became 'yes' (str)" in compare_parsers.first_difference({"a": True}, {"a": "yes"})


@pytest.fixture(scope="module")
def kubectl_edge_output(compare_parsers, tmp_path_factory) -> str:
    """kubectl's own rewrite of a source full of YAML 1.1 scalars: what the rendered-output loader reads."""
    return compare_parsers.kubectl_output(compare_parsers.EDGE_SOURCE, tmp_path_factory.mktemp("edge"))


def test_kubectl_quotes_some_yaml_1_1_scalars_and_prints_others_plain(kubectl_edge_output: str) -> None:
    """Why the comparison runs on kubectl's output, not on the source: kubectl quotes `yes` and rewrites a
    date, so those never reach the loader plain, but exponent floats and a spaced timestamp do."""
    spec = yamlload.load_rendered(kubectl_edge_output)[0]["spec"]
    assert spec["plain-yes"] == "yes" and spec["plain-on"] == "on" and spec["octal"] == 511
    assert spec["date"] == "2002-12-14T00:00:00Z" and spec["sexagesimal"] == "1:20"
    assert spec["large-exponent"] == "1e+21" and spec["tiny"] == "1e-07"  # no dot: a string to YAML 1.1
    assert isinstance(spec["spaced-timestamp"], datetime.datetime)


@pytest.mark.parametrize("name", ["rapidyaml", "oryaml", "pyyaml-rs", "fastyaml-rs"])
def test_each_candidate_is_compared_document_by_document(
    compare_parsers, kubectl_edge_output: str, name: str
) -> None:
    """Decision 0047's premise, checked again whenever a candidate is installed: the Rust loaders read YAML
    1.2, so on kubectl's output they build a float from `1e+21` and keep a spaced timestamp as text where the
    C loader does not; rapidyaml, with PyYAML's 1.1 resolution on its tree, builds the same objects (it was
    rejected on speed, which the bench measures, not a test)."""
    candidate = next(c for c in compare_parsers.CANDIDATES if c.distribution == name)
    module = pytest.importorskip(candidate.module)
    for text in (YAML_1_1_OUTPUT, kubectl_edge_output):
        reference = [yamlload.load_rendered(text)]
        result = compare_parsers.compare(reference, [text], candidate, module)
        assert result["documents"] == len(reference[0])
        if name == "rapidyaml":
            assert result["identical"], result["first_difference"]
        else:
            assert not result["identical"] and result["first_difference"]


def test_the_reference_row_is_identical_to_itself(compare_parsers) -> None:
    rows = compare_parsers.evaluate([YAML_1_1_OUTPUT], compare_parsers.CANDIDATES[:1])
    assert rows[0]["identical"] and rows[0]["identical_documents"] == 2 and not rows[0]["adoptable"]
    assert "| PyYAML CSafeLoader (reference) |" in compare_parsers.table(rows)


def test_a_candidate_that_fails_to_parse_is_a_result(compare_parsers) -> None:
    def broken(module, text):
        raise ValueError("cannot")

    candidate = compare_parsers.Candidate("broken", "none", "yaml", broken)
    result = compare_parsers.compare(
        [yamlload.load_rendered(YAML_1_1_OUTPUT)],
        [YAML_1_1_OUTPUT],
        candidate,
        importlib.import_module("yaml"),
    )
    assert not result["identical"] and result["error"] == "ValueError: cannot"
