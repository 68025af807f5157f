"""The on-disk cache of strict-load results: a cached load is indistinguishable from a fresh one, is keyed by
the file's name and bytes, and an unreadable entry is parsed again rather than trusted."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpupolicy.infra.cache import parsed as parsecache
from gpupolicy.infra.yamlload import parse_source

SAMPLES = {
    "clean": b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  labels: {team: nlp}\ndata:\n  k: |\n "
    b"   x\n---\napiVersion: v1\nkind: Namespace\nmetadata: {name: b}\n",
    "duplicate key": b"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\nmetadata: {name: b}\n",
    "syntax error": b"a: [1, 2\nb: c\n",
    "not utf-8": b"a: \xff\xfe\n",
    "anchors": b"base: &b {cpu: 1}\nuse: *b\nlist: [*b, *b]\n",
    "timestamp stays text": b"when: 2026-11-29\n",
}


def _same(a, b) -> bool:
    return ([(d.path, d.index, d.line, d.data, d.lines) for d in a.documents], a.findings) == (
        [(d.path, d.index, d.line, d.data, d.lines) for d in b.documents],
        b.findings,
    )


@pytest.mark.parametrize("name", sorted(SAMPLES))
def test_cached_load_equals_a_fresh_load(tmp_path: Path, name: str) -> None:
    cache = parsecache.ParseCache(tmp_path)
    fresh = parse_source(SAMPLES[name], "clusters/x/file.yaml")
    first = cache.load_bytes(SAMPLES[name], "clusters/x/file.yaml")  # parses and stores
    second = cache.load_bytes(SAMPLES[name], "clusters/x/file.yaml")  # reads the entry
    assert _same(first, fresh) and _same(second, fresh)
    assert len(list(tmp_path.rglob("*"))) > 1, "nothing was stored"


def test_entries_are_keyed_by_name_and_content(tmp_path: Path) -> None:
    cache = parsecache.ParseCache(tmp_path)
    cache.load_bytes(b"a: 1\n", "one.yaml")
    assert cache.load_bytes(b"a: 2\n", "one.yaml").documents[0].data == {"a": 2}
    renamed = cache.load_bytes(b"a: 1\n", "two.yaml")
    assert renamed.documents[0].path == "two.yaml"
    broken = cache.load_bytes(b"a: 1\na: 1\n", "two.yaml")
    assert [f.path for f in broken.findings] == ["two.yaml"]


def test_an_unreadable_entry_is_parsed_again(tmp_path: Path) -> None:
    cache = parsecache.ParseCache(tmp_path)
    cache.load_bytes(b"a: 1\n", "one.yaml")
    entries = [p for p in tmp_path.rglob("*") if p.is_file()]
    assert len(entries) == 1
    entries[0].write_bytes(b"\x00garbage")
    assert cache.load_bytes(b"a: 1\n", "one.yaml").documents[0].data == {"a": 1}
    entries[0].write_bytes(b"")
    assert cache.load_bytes(b"a: 1\n", "one.yaml").documents[0].data == {"a": 1}


def test_a_cache_that_cannot_be_written_only_costs_time(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    cache = parsecache.ParseCache(blocker)  # every write fails: its parent is a file
    assert cache.load_bytes(b"a: 1\n", "one.yaml").documents[0].data == {"a": 1}


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.binary(max_size=300))
def test_any_bytes_round_trip_through_the_cache(tmp_path: Path, raw: bytes) -> None:
    cache = parsecache.ParseCache(tmp_path)
    fresh = parse_source(raw, "fuzz.yaml")
    cache.load_bytes(raw, "fuzz.yaml")
    assert _same(cache.load_bytes(raw, "fuzz.yaml"), fresh)


# --- kubectl's output
# ------------------------------------------------------------------------------------------


def _rendered_outputs() -> dict[str, str]:
    """The reference fleet as kubectl renders it (from the render cache when warm)."""
    from support import REPO

    from gpupolicy import pipeline
    from gpupolicy.pipeline.render import kustomize

    names = pipeline.cluster_names(REPO)
    graph = kustomize.build_graph(REPO, [f"clusters/{n}" for n in names])
    return {d: r.text for d, r in kustomize.render(REPO, [f"clusters/{n}" for n in names], graph).items()}


def test_rendered_documents_split_as_the_parser_splits_them(tmp_path: Path) -> None:
    from gpupolicy.infra.yamlload import load_rendered

    for overlay, text in _rendered_outputs().items():
        cache = parsecache.ParseCache(tmp_path)
        expected = load_rendered(text)
        assert len(expected) > 50
        assert cache.load_rendered(overlay, text) == expected  # parsed chunk by chunk, memo written
        assert cache.load_rendered(overlay, text) == expected  # every chunk from the memo


def test_a_changed_document_is_parsed_and_the_others_reused(tmp_path: Path) -> None:
    cache = parsecache.ParseCache(tmp_path)
    before = (
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: a\n---\napiVersion: v1\nkind: Namespace\n"
        "metadata:\n  name: b\n  annotations:\n    note: |\n      ---\n      not a separator\n"
    )
    assert [d["metadata"]["name"] for d in cache.load_rendered("o", before)] == ["a", "b"]
    after = before.replace("name: a", "name: a2") + (
        "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: c}\n"
    )
    loaded = cache.load_rendered("o", after)
    assert [d["metadata"]["name"] for d in loaded] == ["a2", "b", "c"]
    assert loaded[1]["metadata"]["annotations"]["note"] == "---\nnot a separator\n"
    twice = cache.load_rendered("o", after + "---\napiVersion: v1\nkind: Namespace\nmetadata: {name: c}\n")
    assert twice[2] == twice[3] and twice[2] is not twice[3]
