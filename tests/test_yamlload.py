"""The strict loader: every broken file is a finding with a line, never an exception; valid YAML loads as
PyYAML's safe loader would load it."""

from __future__ import annotations

import time

import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from gpupolicy.infra.yamlload import MAX_ALIASES, load_text, parse_source

json_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**40), 2**40),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=20),
)
json_values = st.recursive(
    json_scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(min_size=1, max_size=8), inner, max_size=4)
    ),
    max_leaves=25,
)


@settings(max_examples=200, deadline=None)
@given(st.dictionaries(st.text(min_size=1, max_size=8), json_values, min_size=1, max_size=5))
def test_round_trip_of_any_mapping(data: dict) -> None:
    text = yaml.safe_dump(data, allow_unicode=True)
    result = load_text(text, "x.yaml")
    assert not result.findings
    assert result.documents[0].data == yaml.safe_load(text)  # same data as PyYAML's own safe loader


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=400))
def test_arbitrary_bytes_never_raise(raw: bytes) -> None:
    result = parse_source(raw, "fuzz.yaml")
    for finding in result.findings:
        assert finding.rule.startswith("YAML") and finding.line >= 0


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=" \t\n-:[]{}&*!|>'\"#,?abc01", max_size=120))
def test_yaml_punctuation_soup_never_raises(text: str) -> None:
    load_text(text, "soup.yaml")


def test_lines_point_at_keys_and_items() -> None:
    doc = load_text("a: 1\nspec:\n  items:\n    - name: x\n      value: 2\n", "f.yaml").documents[0]
    assert doc.line_of(("spec", "items", 0, "value")) == 5
    assert doc.line_of(("spec", "items", 0, "missing", "deeper")) == 4  # deepest existing part


def test_second_document_lines_are_absolute() -> None:
    result = load_text("a: 1\n---\nb:\n  c: 2\n", "f.yaml")
    assert result.documents[1].line_of(("b", "c")) == 4


def test_duplicate_key_names_both_lines() -> None:
    finding = load_text("a: 1\nb: 2\na: 3\n", "d.yaml").findings[0]
    assert (finding.rule, finding.line) == ("YAML002", 3)
    assert "line 1" in finding.message


def test_billion_laughs_rejected_fast() -> None:
    lines = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    previous = "a"
    for name in "bcdefghi":
        lines.append(f"{name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
        previous = name
    started = time.perf_counter()
    result = load_text("\n".join(lines), "bomb.yaml")
    assert time.perf_counter() - started < 0.5
    assert [f.rule for f in result.findings] == ["YAML007"]
    assert not result.documents


def test_too_many_aliases() -> None:
    text = "base: &b x\nitems:\n" + "".join("  - *b\n" for _ in range(MAX_ALIASES + 1))
    assert load_text(text, "a.yaml").findings[0].rule == "YAML007"


def test_a_few_aliases_are_fine() -> None:
    result = load_text("base: &b {x: 1}\none: *b\ntwo: *b\n", "a.yaml")
    assert not result.findings and result.documents[0].data["two"] == {"x": 1}


def test_non_utf8_line() -> None:
    finding = parse_source(b"a: 1\nb: 2\nc: caf\xe9\n", "l.yaml").findings[0]
    assert (finding.rule, finding.line) == ("YAML003", 3)


def test_timestamps_stay_strings() -> None:
    assert load_text("when: 2026-11-29\n", "t.yaml").documents[0].data == {"when": "2026-11-29"}


def test_empty_documents_are_skipped() -> None:
    result = load_text("---\n---\na: 1\n---\n", "e.yaml")
    assert [d.data for d in result.documents] == [{"a": 1}] and not result.findings


def test_scalar_document_is_reported() -> None:
    assert load_text("just a string\n", "s.yaml").findings[0].rule == "YAML006"
