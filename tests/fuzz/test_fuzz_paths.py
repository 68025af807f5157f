"""A hypothesis fuzz of the paths that come from content: kustomize's origin annotation, and the group,
version and kind of a CRD that `schemas import` turns into file names. Whatever the value, the trust
boundary (repopath) never hands out a path outside the repository (or the output folder), and an in-process
`validate` never opens one (every open is traced).

The validate property renders with kubectl per example, so its default run is small; set
GPUPOLICY_FUZZ_EXAMPLES=200 for a long session.
"""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from gpupolicy.infra import repopath
from gpupolicy.infra.schema import crd
from gpupolicy.pipeline.build import origin_path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # the trust-boundary test's tracer
from test_trust_boundary import EVIL_CRD, FileTrace, _python_paths, _run  # noqa: E402

MINIREPO = Path(__file__).resolve().parents[1] / "fixtures" / "minirepo"
EXAMPLES = int(os.environ.get("GPUPOLICY_FUZZ_EXAMPLES", "8"))

PIECES = [
    "..",
    ".",
    "",
    "etc",
    "passwd",
    "dev",
    "zero",
    "clusters",
    "mini",
    "queues.yaml",
    "policies",
    "out",
    "link",
    "fifo",
    "~",
    "%2e%2e",
    "file:",
    "\\..",
    " ",
    "...",
]
path_texts = st.one_of(
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map("/".join),
    st.lists(st.sampled_from(PIECES), min_size=1, max_size=8).map(lambda parts: "/" + "/".join(parts)),
    st.text(max_size=40),
)
origin_values = st.one_of(
    path_texts.map(lambda p: f"path: {p}"),
    path_texts.map(lambda p: f"configuredIn: {p}"),
    st.text(max_size=60),
)


@pytest.fixture(scope="module")
def playground() -> Path:
    """A repository with the things that tempt a resolver: a symlink out, a FIFO, a folder, a big file."""
    base = Path(tempfile.mkdtemp(prefix="gpupolicy-fuzz-paths-"))
    root = base / "repo"
    shutil.copytree(MINIREPO, root)
    (base / "outside.yaml").write_text("secret: 1\n")
    (root / "clusters/mini/link").symlink_to(base / "outside.yaml")
    (root / "clusters/mini/out").symlink_to(base, target_is_directory=True)
    os.mkfifo(root / "clusters/mini/fifo")
    yield root
    shutil.rmtree(base)


def _inside(root: Path, path: str) -> bool:
    real_root = os.path.realpath(root)
    real = os.path.realpath(path)
    return real == real_root or real.startswith(real_root + os.sep)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(value=origin_values)
def test_the_boundary_never_resolves_outside_the_root(playground: Path, value: str) -> None:
    try:
        rel = origin_path({"annotations": {"config.kubernetes.io/origin": value}}, "clusters/mini")
    except repopath.Refused:
        return
    if not rel:
        return
    assert not rel.startswith(("/", "../")) and rel != ".."
    try:
        real = repopath.regular_file(playground, rel)
    except repopath.Refused:
        return
    assert _inside(playground, real) and os.path.isfile(real)


@settings(
    max_examples=EXAMPLES,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@pytest.mark.reference_fleet
@given(value=origin_values)
def test_validate_never_opens_what_an_origin_annotation_names_outside(tmp_path_factory, value: str) -> None:
    work = tmp_path_factory.mktemp("fuzz-origin")
    repo = work / "repo"
    shutil.copytree(MINIREPO, repo)
    (work / "outside.yaml").write_text("apiVersion: v1\nkind: Namespace\nmetadata:\n  name: outside\n")
    (repo / "clusters/mini/link").symlink_to(work / "outside.yaml")
    kustomization = repo / "clusters/mini/kustomization.yaml"
    quoted = value.replace("\\", "\\\\").replace('"', '\\"')
    kustomization.write_text(
        kustomization.read_text() + f'commonAnnotations:\n  config.kubernetes.io/origin: "{quoted}"\n'
    )
    monkeypatch = pytest.MonkeyPatch()
    trace = FileTrace()
    trace.install(monkeypatch)
    try:
        code, out, err = _run(["validate", "--repo", str(repo), "--format", "json"], repo)
    finally:
        monkeypatch.undo()
    assert "Traceback" not in err, err
    assert code in (0, 1, 2), (code, err)
    # validate needs no temporary folder, so the temp dir (where outside.yaml lives) is not allowed
    allowed = [
        repo,
        Path(os.environ["GPUPOLICY_CACHE_DIR"]),
        Path(os.environ["GPUPOLICY_CACHE_KEY_FILE"]).parent,
        *_python_paths(),
    ]
    assert not trace.outside(allowed), (value, trace.outside(allowed))


names = st.one_of(
    st.sampled_from(
        [
            "example.com",
            "v1",
            "Evil",
            "..",
            ".",
            "../..",
            "a/b",
            "/etc",
            "x..y",
            "nvidia.com",
            "v1beta1",
            "",
            "-a",
            "a-",
            "A.COM",
        ]
    ),
    st.lists(
        st.sampled_from(["..", ".", "a", "b1", "/", "-", "com", "Ev", "\\"]), min_size=1, max_size=6
    ).map("".join),
    st.text(max_size=20),
)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(group=names, version=names, kind=names)
def test_schemas_import_writes_only_inside_the_output_folder(
    tmp_path_factory, group: str, version: str, kind: str
) -> None:
    work = tmp_path_factory.mktemp("fuzz-crd")
    out = work / "sandbox" / "out"
    out.mkdir(parents=True)
    source = work / "crd.yaml"
    quote = lambda text: '"' + text.replace("\\", "\\\\").replace('"', '\\"') + '"'  # noqa: E731
    source.write_text(EVIL_CRD.format(group=quote(group), kind=quote(kind), version=quote(version)))
    try:
        written = crd.import_files([source], out)
    except crd.CRDError:
        written = []
    for path in written:
        assert _inside(out, str(path)), path
    everything = [p for p in work.rglob("*") if p.is_file()]
    assert all(_inside(out, str(p)) for p in everything if p != source), everything
    if crd.check_crd_names(group, version, kind) is not None:
        assert not written
