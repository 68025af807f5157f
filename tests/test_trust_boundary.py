"""The trust boundary (decision 0022): paths that come from content never lead outside the repository,
multi-file writes are all or nothing, cache entries are verified before use.

The main test builds a repository crafted to point everywhere it should not (origin annotations at
/etc/passwd and at a file beside the repository, an NVIDIADriver whose origin names a file outside, a CRD
whose group climbs out of the output folder) and runs `validate`, `diff`, `docs`, `upgrade promote` and
`schemas import` in-process while tracing every file the toolkit opens, creates, renames or removes.
"""

from __future__ import annotations

import builtins
import contextlib
import hashlib
import io
import json
import os
import shutil
import stat
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from prometheus_server import healthy_prometheus
from support import add_signing_keys
from support import git as support_git

import gpupolicy
from gpupolicy import pipeline
from gpupolicy.cli import main
from gpupolicy.errors import ToolError
from gpupolicy.infra import repopath, transaction
from gpupolicy.infra.cache import files as cachefiles
from gpupolicy.simulate import traces

REPO = Path(__file__).resolve().parents[1]
UPGRADES_FIXTURE = REPO / "tests" / "fixtures" / "upgrades"
MINIREPO = REPO / "tests" / "fixtures" / "minirepo"
GIT = ["git", "-c", "user.email=test@example.com", "-c", "user.name=test", "-c", "commit.gpgsign=false"]
AFTER_SOAK = "2026-11-20T00:00:00Z"

needs_git = pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")

EVIL_CRD = """apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: evils.example.com
spec:
  group: {group}
  names: {{kind: {kind}, plural: evils}}
  scope: Namespaced
  versions:
    - name: {version}
      served: true
      storage: true
      schema:
        openAPIV3Schema: {{type: object}}
"""


# --- tracing every file the toolkit touches
# ------------------------------------------------------------------


class FileTrace:
    """Every path passed to open (builtins, io, os), and to the calls that create, rename or remove files."""

    WRAPPED_OS = (
        "open",
        "mkdir",
        "makedirs",
        "replace",
        "rename",
        "unlink",
        "remove",
        "rmdir",
        "link",
        "symlink",
        "truncate",
        "chmod",
    )

    def __init__(self) -> None:
        self.touched: list[tuple[str, str]] = []  # (call, real path)

    def install(self, monkeypatch: pytest.MonkeyPatch) -> None:
        real_open = builtins.open

        def traced_open(file, *args, **kwargs):
            self._note("open", file)
            return real_open(file, *args, **kwargs)

        monkeypatch.setattr(builtins, "open", traced_open)
        monkeypatch.setattr(io, "open", traced_open)
        for name in self.WRAPPED_OS:
            monkeypatch.setattr(os, name, self._wrap(name, getattr(os, name)))

    def _wrap(self, name: str, real):
        def traced(*args, **kwargs):
            for arg in args[:2] if name in ("replace", "rename", "link", "symlink") else args[:1]:
                self._note(f"os.{name}", arg, kwargs.get("dir_fd"))
            return real(*args, **kwargs)

        return traced

    def _note(self, call: str, path, dir_fd=None) -> None:
        if isinstance(path, int) or dir_fd is not None:
            return  # an open descriptor, or relative to one: its path was noted when it was opened
        with contextlib.suppress(TypeError, ValueError):
            self.touched.append((call, os.path.realpath(os.fsdecode(path))))

    def outside(self, allowed: list[Path]) -> list[tuple[str, str]]:
        roots = [os.path.realpath(p) for p in allowed]
        return [
            (call, path)
            for call, path in self.touched
            if path != os.devnull and not any(path == r or path.startswith(r + os.sep) for r in roots)
        ]


def _python_paths() -> list[Path]:
    """The interpreter, the virtual environment and the toolkit's own package (imports, carried schemas)."""
    paths = {sys.prefix, sys.base_prefix, sys.exec_prefix, os.path.dirname(gpupolicy.__file__)}
    paths |= {value for key, value in sysconfig.get_paths().items() if key.endswith("lib") or key == "data"}
    # the toolkit's own install metadata (an editable install leaves gpupolicy.egg-info beside the package):
    # plugin discovery reads its entry points, whichever test reads them first
    paths |= {str(p) for p in Path(os.path.dirname(gpupolicy.__file__)).parent.glob("gpupolicy.*-info")}
    return [Path(p) for p in paths]


def _git(repo: Path, *args: str) -> str:
    if args[:1] == ("init",):  # approvals are signatures: every person of the approvers file gets a key
        output = subprocess.run([*GIT, *args], cwd=repo, check=True, capture_output=True, text=True).stdout
        add_signing_keys(repo)
        return output
    return support_git(repo, *args)  # commits signed as test@example.com (tess, an approver of the fixture)


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in sorted(root.rglob("*"))
        if p.is_file() and not p.is_symlink() and ".git" not in p.relative_to(root).parts
    }


def _run(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
    finally:
        os.chdir(previous)
    return code, out.getvalue(), err.getvalue()


# --- the crafted repository
# ------------------------------------------------------------------------------------


@pytest.fixture()
def crafted(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Path]:
    """tmp_path/repo (a git repository), tmp_path/outside (files it points at), a private temp dir and
    cache."""
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    places = {name: tmp_path / name for name in ("repo", "outside", "systemp", "cache")}
    shutil.copytree(UPGRADES_FIXTURE, places["repo"])
    for name in ("outside", "systemp", "cache"):
        places[name].mkdir()
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(places["cache"]))
    monkeypatch.setenv("TMPDIR", str(places["systemp"]))
    monkeypatch.setattr(tempfile, "tempdir", str(places["systemp"]))
    repo, outside = places["repo"], places["outside"]
    shutil.copy(repo / "pools/prod-h100/nvidiadriver.yaml", outside / "nvidiadriver.yaml")
    (outside / "secret.yaml").write_text(
        "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: leaked-secret-line\n"
    )
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "base")
    _craft(repo)
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "a hostile pull request")
    return places


def _craft(repo: Path) -> None:
    """Origin annotations at /etc/passwd (every object of lab), at a file beside the repository (every object
    of prod, by commonAnnotations), and at an outside copy of prod-h100's NVIDIADriver (by a patch)."""
    lab = repo / "clusters/lab/kustomization.yaml"
    lab.write_text(
        lab.read_text() + 'commonAnnotations:\n  config.kubernetes.io/origin: "path: /etc/passwd"\n'
    )
    prod = repo / "clusters/prod/kustomization.yaml"
    prod.write_text(prod.read_text() + "patches:\n  - path: origin.yaml\n")
    (repo / "clusters/prod/origin.yaml").write_text(
        "apiVersion: nvidia.com/v1alpha1\nkind: NVIDIADriver\nmetadata:\n  name: prod-h100\n  annotations:\n"
        "    config.kubernetes.io/origin: |\n      path: ../../../outside/nvidiadriver.yaml\n"
    )
    queues = repo / "clusters/prod/queues.yaml"
    queues.write_text(
        queues.read_text() + "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: probe\n"
        "  namespace: default\n  annotations:\n    config.kubernetes.io/origin: |\n"
        "      path: ../../../outside/secret.yaml\ndata:\n  a: b\n"
    )


@pytest.fixture()
def crafted_prometheus(crafted: dict[str, Path]) -> Iterator[str]:
    """A clean soak of the crafted repository's canary stage (promote past a stage that ran needs one);
    started
    before any trace, so the server's own files are not the toolkit's."""
    with healthy_prometheus(
        crafted["cache"].parent / "prom", crafted["repo"], "driver-next", AFTER_SOAK
    ) as url:
        yield url


@needs_git
def test_no_command_opens_a_path_outside_the_repository(
    crafted: dict[str, Path], crafted_prometheus: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo, outside = crafted["repo"], crafted["outside"]
    outside_before = _snapshot(outside)
    (outside / "evil-crd.yaml").write_text(
        EVIL_CRD.format(group="../../../outside/escaped", kind="Evil", version="v1")
    )
    (outside / "evil-version.yaml").write_text(
        EVIL_CRD.format(group="example.com", kind="Evil", version="../../../outside/x")
    )
    base = _git(repo, "rev-list", "--max-parents=0", "HEAD").strip()
    trace = FileTrace()
    trace.install(monkeypatch)

    code, out, err = _run(["validate", "--repo", str(repo), "--format", "json"], repo)
    assert code == 1, err
    findings = json.loads(out)["findings"]
    assert not [f for f in findings if f["path"].startswith(("/", ".."))], findings
    assert "leaked-secret-line" not in out and "root:" not in out
    assert {f["cluster"] for f in findings if f["rule"] == "KUST009"} >= {"lab", "prod"}

    code, out, err = _run(["diff", "--repo", str(repo), "--base", base, "--format", "json"], repo)
    assert code in (0, 1) and "Traceback" not in err, err

    code, out, err = _run(
        [
            "upgrade",
            "promote",
            "driver-next",
            "--now",
            AFTER_SOAK,
            "--prometheus",
            crafted_prometheus,
            "--repo",
            str(repo),
        ],
        repo,
    )
    assert code == 2 and "refusing to edit" in err and "Traceback" not in err, (code, out, err)

    code, out, err = _run(["schemas", "import", str(outside / "evil-crd.yaml"), "--repo", str(repo)], repo)
    assert code == 2 and "spec.group" in err, err
    code, out, err = _run(
        ["schemas", "import", str(outside / "evil-version.yaml"), "--repo", str(repo)], repo
    )
    assert code == 2 and "version name" in err, err

    code, out, err = _run(["docs", "--repo", str(repo)], repo)
    assert code == 0, err

    # The CRD files are the user's command-line arguments (trusted); everything else must stay inside.
    allowed = [
        repo,
        crafted["systemp"],
        crafted["cache"],
        *_python_paths(),
        outside / "evil-crd.yaml",
        outside / "evil-version.yaml",
    ]
    assert not trace.outside(allowed), trace.outside(allowed)
    assert any(path.startswith(str(repo.resolve())) for _, path in trace.touched)  # the trace did see the run
    assert _snapshot(outside) == {
        **outside_before,
        "evil-crd.yaml": (outside / "evil-crd.yaml").read_bytes(),
        "evil-version.yaml": (outside / "evil-version.yaml").read_bytes(),
    }
    assert not (outside / "escaped").exists() and not (outside / "x").exists()


@needs_git
def test_promote_refuses_a_driver_whose_origin_points_outside(crafted: dict[str, Path]) -> None:
    repo, outside = crafted["repo"], crafted["outside"]
    before, outside_before = _snapshot(repo), _snapshot(outside)
    with healthy_prometheus(crafted["cache"].parent / "prom", repo, "driver-next", AFTER_SOAK) as url:
        code, out, err = _run(
            [
                "upgrade",
                "promote",
                "driver-next",
                "--now",
                AFTER_SOAK,
                "--prometheus",
                url,
                "--repo",
                str(repo),
            ],
            repo,
        )
    assert code == 2, (out, err)
    assert "NVIDIADriver prod-h100" in err and "points outside the repository" in err
    assert _snapshot(repo) == before and _snapshot(outside) == outside_before


@pytest.mark.parametrize("folder", ["docs/generated", "policies/crd-schemas"])
def test_writers_refuse_a_repository_folder_that_is_a_symlink_out(tmp_path: Path, folder: str) -> None:
    """`docs` and `schemas import` write into folders of the repository, which a pull request can replace by
    symlinks: the writes must not follow them."""
    repo, outside = tmp_path / "repo", tmp_path / "outside"
    shutil.copytree(MINIREPO, repo)
    outside.mkdir()
    (repo / folder).parent.mkdir(parents=True, exist_ok=True)
    (repo / folder).symlink_to(outside, target_is_directory=True)
    (tmp_path / "crd.yaml").write_text(EVIL_CRD.format(group="example.com", kind="Good", version="v1"))
    argv = (
        ["docs", "--repo", str(repo)]
        if folder == "docs/generated"
        else ["schemas", "import", str(tmp_path / "crd.yaml"), "--repo", str(repo)]
    )
    code, out, err = _run(argv, repo)
    assert code == 2 and "resolves outside the repository" in err and "Traceback" not in err, (code, out, err)
    assert not list(outside.iterdir())


# --- the boundary module
# ---------------------------------------------------------------------------------------


def test_normalize_refuses_every_escape() -> None:
    assert repopath.normalize("clusters/mini", "../../pools/a/pool.yaml") == "pools/a/pool.yaml"
    assert repopath.normalize("clusters/mini", "./x/../queues.yaml") == "clusters/mini/queues.yaml"
    for hostile in (
        "/etc/passwd",
        "../../../x",
        "../../..",
        "../../../clusters/mini",
        "",
        "file:///etc/passwd",
        "a\x00b",
        "a\\..\\b",
        "x" * 5000,
    ):
        with pytest.raises(repopath.Refused):
            repopath.normalize("clusters/mini", hostile)


def test_read_file_refuses_what_is_not_a_small_regular_file_inside(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "sub").mkdir(parents=True)
    (root / "ok.yaml").write_text("a: 1\n")
    (root / "big.yaml").write_bytes(b"x" * (repopath.MAX_FILE_BYTES + 1))
    (tmp_path / "outside.yaml").write_text("secret: 1\n")
    (root / "out.yaml").symlink_to(tmp_path / "outside.yaml")
    (root / "inside-link.yaml").symlink_to("ok.yaml")
    (root / "zero").symlink_to("/dev/zero")
    os.mkfifo(root / "fifo")
    assert repopath.read_file(root, "ok.yaml") == b"a: 1\n"
    assert repopath.read_file(root, "inside-link.yaml") == b"a: 1\n"
    for rel, reason in (
        ("big.yaml", "limit"),
        ("out.yaml", "outside"),
        ("zero", "outside"),
        ("fifo", "FIFO"),
        ("sub", "folder"),
        ("missing.yaml", "cannot be read"),
        ("../outside.yaml", "outside"),
    ):
        with pytest.raises(repopath.Refused, match=reason):
            repopath.read_file(root, rel)


def test_load_sources_reads_through_the_boundary(tmp_path: Path) -> None:
    """The strict loader's inputs are read by repopath: an oversized file keeps YAML004 at line 1, any other
    refusal (a FIFO, a symlink out of the repository) is YAML001 with the reason, and nothing hangs."""
    root = tmp_path / "root"
    root.mkdir()
    (root / "ok.yaml").write_text("a: 1\n")
    (root / "big.yaml").write_bytes(b"x" * (repopath.MAX_FILE_BYTES + 1))
    (tmp_path / "outside.yaml").write_text("secret: 1\n")
    (root / "out.yaml").symlink_to(tmp_path / "outside.yaml")
    os.mkfifo(root / "fifo.yaml")
    documents, findings = pipeline.load_sources(
        repopath.Reader(root), ["ok.yaml", "big.yaml", "out.yaml", "fifo.yaml"]
    )
    assert list(documents) == ["ok.yaml"]
    found = {f.path: (f.rule, f.line, f.message) for f in findings}
    assert found["big.yaml"][:2] == ("YAML004", 1) and "-byte limit" in found["big.yaml"][2]
    assert found["out.yaml"][:2] == ("YAML001", 0) and "outside the repository" in found["out.yaml"][2]
    assert found["fifo.yaml"][:2] == ("YAML001", 0) and "FIFO" in found["fifo.yaml"][2]


def test_a_kustomization_symlinked_out_is_refused_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The graph reads each kustomization through the boundary: one that is a symlink out of the repository is
    KUST002, and the file it points at is never opened (its YAML errors would describe an outside file)."""
    repo = tmp_path / "repo"
    shutil.copytree(Path(__file__).parent / "fixtures" / "minirepo", repo)
    outside = tmp_path / "outside.yaml"
    outside.write_text("apiVersion: v1\nsecret: [unclosed TOPSECRET\n")
    kustomization = repo / "clusters" / "mini" / "kustomization.yaml"
    kustomization.unlink()
    kustomization.symlink_to(outside)
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(tmp_path / "cache"))
    trace = FileTrace()
    trace.install(monkeypatch)
    code, out, _err = _run(["validate", "--repo", str(repo), "--format", "json"], repo)
    monkeypatch.undo()
    findings = json.loads(out)["findings"]
    assert code == 1
    assert any(f["rule"] == "KUST002" and f["path"] == "clusters/mini/kustomization.yaml" for f in findings)
    assert not any(
        f["rule"] == "YAML001" and f["path"] == "clusters/mini/kustomization.yaml" for f in findings
    )
    assert str(outside.resolve()) not in {path for _call, path in trace.touched}


def test_a_kind_holding_a_path_names_no_schema_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A core kind's schema file is named from the manifest's apiVersion and kind: a kind holding `../` must
    not
    make validate read a JSON file outside the carried schemas (its words would reach the findings)."""
    repo = tmp_path / "repo"
    shutil.copytree(MINIREPO, repo)
    probe = tmp_path / "probe-v1.json"
    probe.write_text('{"type": "object", "required": ["probe"]}')
    kind = "../" * 30 + str(probe.with_name("probe"))[1:]
    (repo / "policies" / "evil.yaml").write_text(f"apiVersion: v1\nkind: {kind}\nmetadata: {{name: x}}\n")
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(tmp_path / "cache"))
    trace = FileTrace()
    trace.install(monkeypatch)
    _code, out, _err = _run(["validate", "--repo", str(repo), "--format", "json"], repo)
    monkeypatch.undo()
    findings = json.loads(out)["findings"]
    assert str(probe.resolve()) not in {path for _call, path in trace.touched}
    assert any(f["rule"] == "SCHEMA003" and f["path"] == "policies/evil.yaml" for f in findings)
    assert not any("probe" in f["message"] and f["rule"] == "SCHEMA001" for f in findings)


def test_output_path_stays_inside_the_output_folder(tmp_path: Path) -> None:
    out = tmp_path / "out"
    out.mkdir()
    assert (
        repopath.output_path(out, "example.com", "evil-v1.json")
        == out.resolve() / "example.com" / "evil-v1.json"
    )
    (out / "link").symlink_to(tmp_path)
    for names in (("..", "x.json"), ("a/b", "x.json"), ("link", "x.json"), (".hidden",), ("",)):
        with pytest.raises(repopath.Refused):
            repopath.output_path(out, *names)


# --- the transactional writer
# ------------------------------------------------------------------------------------


def _tree(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


@pytest.fixture()
def three_files(tmp_path: Path) -> tuple[Path, dict[Path, str]]:
    for name in ("a", "b", "c"):
        (tmp_path / name).mkdir()
        (tmp_path / name / "file.yaml").write_text(f"old {name}\n")
    return tmp_path, {tmp_path / name / "file.yaml": f"new {name}\n" for name in ("a", "b", "c")}


@pytest.mark.parametrize("failing_call", [1, 2, 3])
def test_a_failed_fsync_leaves_every_file_as_it_was(
    three_files, monkeypatch: pytest.MonkeyPatch, failing_call: int
) -> None:
    root, contents = three_files
    before = _tree(root)
    real_fsync, calls = os.fsync, []

    def failing_fsync(descriptor: int) -> None:
        calls.append(descriptor)
        if len(calls) == failing_call:
            raise OSError(5, "Input/output error")
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(ToolError, match="nothing was changed"):
        transaction.write_files(contents)
    assert _tree(root) == before  # byte-identical, and no temporary left behind


@pytest.mark.parametrize("failing_call", [2, 3])
def test_a_failed_rename_puts_back_what_was_already_replaced(
    three_files, monkeypatch: pytest.MonkeyPatch, failing_call: int
) -> None:
    root, contents = three_files
    before = _tree(root)
    real_replace, calls = os.replace, []

    def failing_replace(source, target) -> None:
        calls.append(target)
        if len(calls) == failing_call:
            raise OSError(28, "No space left on device", str(target))
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", failing_replace)
    with pytest.raises(ToolError, match="nothing was changed"):
        transaction.write_files(contents)
    assert _tree(root) == before


def test_a_folder_that_takes_no_new_file_stops_the_whole_write(
    three_files, monkeypatch: pytest.MonkeyPatch
) -> None:
    """As a read-only folder would (simulated: root writes into read-only folders)."""
    root, contents = three_files
    before = _tree(root)
    real_mkstemp = tempfile.mkstemp

    def refusing_mkstemp(*args, dir=None, **kwargs):  # noqa: A002 - tempfile's own name
        if dir is not None and Path(dir).name == "b":
            raise PermissionError(13, "Permission denied", str(Path(dir) / "file.yaml.tmp"))
        return real_mkstemp(*args, dir=dir, **kwargs)

    monkeypatch.setattr(tempfile, "mkstemp", refusing_mkstemp)
    with pytest.raises(ToolError, match="b/file.yaml: Permission denied; nothing was changed"):
        transaction.write_files(contents)
    assert _tree(root) == before


def test_writes_keep_permissions_create_folders_and_remove(tmp_path: Path) -> None:
    (tmp_path / "keep.sh").write_text("old\n")
    (tmp_path / "keep.sh").chmod(0o750)
    (tmp_path / "gone.md").write_text("bye\n")
    transaction.write_files(
        {tmp_path / "keep.sh": "new\n", tmp_path / "new/deep/page.md": "hello\n"},
        remove=[tmp_path / "gone.md"],
    )
    assert (tmp_path / "keep.sh").read_text() == "new\n" and (
        tmp_path / "keep.sh"
    ).stat().st_mode & 0o777 == 0o750
    assert (tmp_path / "new/deep/page.md").read_text() == "hello\n" and not (tmp_path / "gone.md").exists()
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["deep", "keep.sh", "new", "page.md"]


def test_a_fifo_or_device_where_a_file_goes_is_refused_not_replaced(tmp_path: Path) -> None:
    """`simulate --events /dev/full`, run as root, put a regular file where the device node was: the rename
    replaced it. A FIFO stands for any special file here."""
    (tmp_path / "a.md").write_text("a\n")
    fifo = tmp_path / "events.jsonl"
    os.mkfifo(fifo)
    with pytest.raises(ToolError, match=r"events.jsonl: is a FIFO, not a regular file; nothing was changed"):
        transaction.write_files({tmp_path / "a.md": "A\n", fifo: "{}\n"})
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and (tmp_path / "a.md").read_text() == "a\n"
    link = tmp_path / "link.md"  # a symlink is still replaced by the file, as before
    link.symlink_to(tmp_path / "a.md")
    transaction.write_files({link: "L\n"})
    assert not link.is_symlink() and link.read_text() == "L\n" and (tmp_path / "a.md").read_text() == "a\n"


def test_a_failed_write_removes_the_folders_it_made(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.md").write_text("a\n")
    real_fsync, calls = os.fsync, []

    def failing_fsync(descriptor: int) -> None:
        calls.append(descriptor)
        if len(calls) == 2:
            raise OSError(5, "Input/output error")
        real_fsync(descriptor)

    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(ToolError):
        transaction.write_files({tmp_path / "a.md": "A\n", tmp_path / "new/b.md": "B\n"})
    assert sorted(p.name for p in tmp_path.iterdir()) == ["a.md"]


@pytest.fixture()
def upgrade_repo(tmp_path: Path) -> Path:
    if shutil.which("git") is None:
        pytest.skip("git is not installed")
    repo = tmp_path / "repo"
    shutil.copytree(UPGRADES_FIXTURE, repo)
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-q", "-m", "start")
    return repo


@needs_git
def test_promote_that_cannot_write_one_file_changes_nothing(
    upgrade_repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The fleet stage edits the plan and prod-h100's NVIDIADriver; the pool file cannot be replaced."""
    before = _snapshot(upgrade_repo)
    real_replace = os.replace

    def refuse_the_driver(source, target) -> None:
        if str(target).endswith("pools/prod-h100/nvidiadriver.yaml"):
            raise OSError(13, "Permission denied", str(target))
        real_replace(source, target)

    with healthy_prometheus(upgrade_repo.parent / "prom", upgrade_repo, "driver-next", AFTER_SOAK) as url:
        monkeypatch.setattr(os, "replace", refuse_the_driver)
        code, out, err = _run(
            [
                "upgrade",
                "promote",
                "driver-next",
                "--now",
                AFTER_SOAK,
                "--prometheus",
                url,
                "--repo",
                str(upgrade_repo),
            ],
            upgrade_repo,
        )
    assert code == 2, (out, err)
    assert "Traceback" not in err and "nothing was changed" in err and "nvidiadriver.yaml" in err
    assert _snapshot(upgrade_repo) == before
    assert not _git(upgrade_repo, "status", "--porcelain")  # no temporary, no backup left behind


# --- cache entries verified on read
# ------------------------------------------------------------------------------


def test_cache_entries_round_trip_and_refuse_damage(tmp_path: Path) -> None:
    entry = tmp_path / "entry"
    cachefiles.write_value(entry, {"a": [1, 2, 3]})
    assert cachefiles.read_value(entry) == {"a": [1, 2, 3]}
    raw = entry.read_bytes()
    for damaged in (
        raw[:-1],
        raw[:10],
        raw[:-1] + bytes([raw[-1] ^ 1]),
        b"",
        raw + b"x",
        raw.split(b"\n", 1)[1],
    ):
        entry.write_bytes(damaged)
        assert cachefiles.read_value(entry) is None
    cachefiles.write_bytes(entry, "déjà\n".encode())
    assert cachefiles.read_text(entry) == "déjà\n"
    assert not [p for p in tmp_path.iterdir() if p.name != "entry"]  # no temporaries


def _findings(repo: Path, *extra: str) -> list[tuple]:
    code, out, err = _run(["validate", "--repo", str(repo), "--format", "json", *extra], repo)
    assert code in (0, 1) and "Traceback" not in err, err
    return sorted((f["rule"], f["path"], f["line"], f["message"]) for f in json.loads(out)["findings"])


def _cache_files(cache: Path, kind: str) -> Iterator[Path]:
    for path in sorted(cache.rglob("*")):
        if not path.is_file():
            continue
        rel = path.relative_to(cache).as_posix()
        if (
            kind == "render"
            and "/" not in rel
            and rel.endswith(".yaml")
            or kind == "graph"
            and "/graphs/" in rel
            or kind == "parse"
            and rel.startswith("parsed/")
            and "/graphs/" not in rel
        ):
            yield path


@pytest.mark.parametrize("kind", ["render", "parse", "graph"])
@pytest.mark.parametrize("damage", ["truncate", "flip", "empty"])
def test_damaged_cache_entries_are_recomputed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, kind: str, damage: str
) -> None:
    repo = tmp_path / "repo"
    shutil.copytree(MINIREPO, repo)
    queues = repo / "clusters/mini/queues.yaml"
    queues.write_text(queues.read_text().replace("nominalQuota: 16", "nominalQuota: -7"))
    cache = tmp_path / "cache"
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(cache))
    expected = _findings(repo, "--no-cache")
    assert any(rule == "CAP016" for rule, *_ in expected)
    _findings(repo)  # fills the cache
    entries = list(_cache_files(cache, kind))
    if kind == "graph" and not entries:
        pytest.skip("the graph was not kept (its folders changed within the racy window)")
    assert entries, sorted(p.relative_to(cache).as_posix() for p in cache.rglob("*"))
    for entry in entries:
        raw = entry.read_bytes()
        entry.write_bytes(
            {
                "truncate": raw[: len(raw) * 2 // 3],
                "flip": raw[:-3] + bytes([raw[-3] ^ 0x20]) + raw[-2:],
                "empty": b"",
            }[damage]
        )
    assert _findings(repo) == expected


def test_a_truncated_render_is_never_used_as_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The issue's case: a render entry cut in half used to validate as a cluster missing half its objects."""
    repo = tmp_path / "repo"
    shutil.copytree(MINIREPO, repo)
    cache = tmp_path / "cache"
    monkeypatch.setenv("GPUPOLICY_CACHE_DIR", str(cache))
    first = pipeline.run(repo)
    (entry,) = _cache_files(cache, "render")
    entry.write_bytes(entry.read_bytes()[:200])
    again = pipeline.run(repo)
    assert again.cached_renders == 0 and again.objects == first.objects
    assert sorted(f.as_tuple() for f in again.findings) == sorted(f.as_tuple() for f in first.findings)
    assert cachefiles.read_text(entry) is not None  # rewritten whole
    assert hashlib.sha256(entry.read_bytes()).digest()  # (and readable)


# --- trace archive members
# -----------------------------------------------------------------------------------------


def _itp_archive(path: Path, members: dict[str, bytes]) -> Path:
    with tarfile.open(path, "w:gz") as archive:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            archive.addfile(info, io.BytesIO(data))
    return path


ITP_CSV = b"job_id,submission_time,duration,num_gpu\nj1,0,60,1\n"


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("../../escape.csv", ITP_CSV, "points outside"),
        ("/etc/cron.d/x.csv", ITP_CSV, "absolute path"),
        ("cluster01.csv", b"job_id,submission_time,duration,num_gpu\n\xff\xfe,0,60,1\n", "not UTF-8"),
    ],
)
def test_trace_archive_members_are_checked(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    archive = _itp_archive(tmp_path / "itp.tar.gz", {name: data})
    with pytest.raises(traces.TraceError, match=reason):
        traces.read_itp(archive)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["itp.tar.gz"]  # nothing extracted


def test_a_trace_archive_member_over_the_limit_is_refused_before_it_is_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(traces, "MAX_MEMBER_BYTES", 40)
    archive = _itp_archive(tmp_path / "itp.tar.gz", {"cluster01.csv": ITP_CSV})
    with pytest.raises(traces.TraceError, match="limit"):
        traces.read_itp(archive)
    monkeypatch.setattr(traces, "MAX_MEMBER_BYTES", 4096)
    assert [job.team for job in traces.read_itp(archive).jobs] == ["itp-cluster01"]
