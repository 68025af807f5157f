"""The hostile-input corpus: nothing a contributor writes may crash the toolkit, hang it, change the repository
or slip past it.

Each case in cases.yaml is a small repository: tests/fixtures/minirepo with the case's `files` laid over it
(through build_fixture_repo, the rule fixtures' mechanism; `<path>.delete` removes a file), then the case's
`generate` step, which writes what is better synthesized than committed (bombs, huge and binary files,
symlinks out of the repository). The case runs `gpupolicy validate` (in-process, or through the console
script when `subprocess: true`) and must
- exit with the expected code (1: error findings, 2: usage error; 0 only for a warning the design keeps a warning),
- report the expected rule at the expected path with the expected message substring (or print the usage
  message on stderr),
- print no traceback, finish within its time bound, and leave every file of the repository unchanged.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml

from gpupolicy import cli
from gpupolicy.infra.yamlload import parse_source

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "rules"))  # the rule fixtures' module, as pytest imports it (rootdir-less)
from test_rule_fixtures import build_fixture_repo  # noqa: E402

# cases.yaml, plus one cases-<area>.yaml per area of the trust boundary (paths, writes, crashes, bounds, caches)
CASES = [case for corpus in sorted(HERE.glob("cases*.yaml"))
         for case in yaml.safe_load(corpus.read_text(encoding="utf-8")) or []]
DEFAULT_SECONDS = 20.0
CONSOLE_SCRIPT = Path(sys.executable).parent / "gpupolicy"

QUEUE_HEAD = """apiVersion: kueue.x-k8s.io/v1beta2
kind: ClusterQueue
metadata:
  name: alpha
  labels:
    gpupolicy.io/team: alpha
    gpupolicy.io/tier: training
spec:
  namespaceSelector:
    matchLabels:
      gpupolicy.io/team: alpha
  resourceGroups:
    - coveredResources: [nvidia.com/gpu]
      flavors:
        - name: mini-a100
          resources:
            - name: nvidia.com/gpu
              nominalQuota: 16
"""


# --- generated cases ----------------------------------------------------------------------------------------

def _billion_laughs_wide(repo: Path) -> None:
    """Ten levels of ten aliases each: 10^10 nodes if expanded."""
    lines = ["a0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol, lol]"]
    for level in range(1, 11):
        refs = ", ".join([f"*a{level - 1}"] * 10)
        lines.append(f"a{level}: &a{level} [{refs}]")
    (repo / "clusters/mini/bomb.yaml").write_text("\n".join(lines) + "\n")


def _deep_flow(repo: Path, depth: int) -> None:
    (repo / "clusters/mini/deep.yaml").write_text("deep: " + "[" * depth + "1" + "]" * depth + "\n")


def _deep_block(repo: Path) -> None:
    text = "".join(f"{'  ' * level}k{level}:\n" for level in range(150)) + f"{'  ' * 150}leaf\n"
    (repo / "clusters/mini/deep.yaml").write_text(text)


def _huge_file(repo: Path) -> None:
    line = "# " + "x" * 1000 + "\n"
    (repo / "clusters/mini/huge.yaml").write_text("apiVersion: v1\nkind: ConfigMap\n" + line * 3000)


def _long_line(repo: Path) -> None:
    """A 1.5 MB line (under the size limit) in a field pool.yaml does not have."""
    pool = repo / "pools/mini-a100/pool.yaml"
    pool.write_text(pool.read_text() + f"  bogusField: \"{'y' * 1_500_000}\"\n")


def _latin1(repo: Path) -> None:
    (repo / "clusters/mini/latin1.yaml").write_bytes(
        b"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: caf\xe9\n")


def _utf16(repo: Path) -> None:
    (repo / "clusters/mini/utf16.yaml").write_bytes("apiVersion: v1\nkind: Namespace\n".encode("utf-16"))


def _binary(repo: Path) -> None:
    (repo / "pools/mini-a100/flavor.yaml").write_bytes(bytes(range(256)) * 64)


def _png(repo: Path) -> None:
    (repo / "clusters/mini/logo.yaml").write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + b"\x00" * 64)


def _nul_in_text(repo: Path) -> None:
    (repo / "clusters/mini/nul.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\x00b\n")


def _symlink_file_out(repo: Path) -> None:
    (repo / "clusters/mini/passwd.yaml").symlink_to("/etc/passwd")


def _symlink_dir_out(repo: Path) -> None:
    (repo / "policies/etc").symlink_to("/etc", target_is_directory=True)


def _symlink_resource_out(repo: Path) -> None:
    """The overlay lists a symlink (inside the repository) whose target is outside it."""
    (repo / "clusters/mini/outside.yaml").symlink_to("/etc/hostname")
    kustomization = repo / "clusters/mini/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("  - queues.yaml\n",
                                                               "  - queues.yaml\n  - outside.yaml\n"))


def _symlink_loop(repo: Path) -> None:
    (repo / "clusters/mini/loop-a.yaml").symlink_to("loop-b.yaml")
    (repo / "clusters/mini/loop-b.yaml").symlink_to("loop-a.yaml")
    kustomization = repo / "clusters/mini/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("  - queues.yaml\n",
                                                               "  - queues.yaml\n  - loop-a.yaml\n"))


def _dangling_resource(repo: Path) -> None:
    (repo / "clusters/mini/gone.yaml").symlink_to("does-not-exist.yaml")
    kustomization = repo / "clusters/mini/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("  - queues.yaml\n",
                                                               "  - queues.yaml\n  - gone.yaml\n"))


def _ten_thousand_queues(repo: Path) -> None:
    """10,000 LocalQueues in five files under policies/loose/; the very last one misspells `clusterQueue`."""
    folder = repo / "policies/loose"
    folder.mkdir()
    for part in range(5):
        docs = []
        for index in range(2000):
            field = "clusterQueu" if (part, index) == (4, 1999) else "clusterQueue"
            docs.append(f"apiVersion: kueue.x-k8s.io/v1beta2\nkind: LocalQueue\nmetadata:\n  name: q{part}-{index}\n"
                        f"  namespace: alpha\nspec:\n  {field}: alpha\n")
        (folder / f"localqueues-{part}.yaml").write_text("---\n".join(docs))


def _many_aliases(repo: Path) -> None:
    lines = ["base: &b {x: 1}"] + [f"k{i}: *b" for i in range(100)]
    (repo / "clusters/mini/aliases.yaml").write_text("\n".join(lines) + "\n")


def _no_cluster_yaml(repo: Path) -> None:
    (repo / "clusters/mini/cluster.yaml").unlink()


def _remove_repo_markers(repo: Path) -> None:
    for name in ("clusters", "pools"):
        subprocess.run(["rm", "-rf", str(repo / name)], check=True)


# --- bounds (cases-bounds.yaml) -----------------------------------------------------------------------------

def _configmap_2mib(repo: Path) -> None:
    """A 2 MB dashboard that a configMapGenerator turns into one ConfigMap (the API server takes 1 MiB)."""
    (repo / "clusters/mini/dashboard.json").write_text(json.dumps({"panels": ["x" * 1000] * 2100}))
    kustomization = repo / "clusters/mini/kustomization.yaml"
    kustomization.write_text(kustomization.read_text() + "configMapGenerator:\n  - name: grafana-dashboard\n"
                             "    namespace: alpha\n    files:\n      - dashboard.json\n")


def _plan_replace(repo: Path, old: str, new: str) -> None:
    """One edit of tests/fixtures/upgrades' plan (the case's base)."""
    plan = repo / "policies/upgrades/plan.yaml"
    text = plan.read_text()
    assert old in text, f"{old!r} is not in {plan}"
    plan.write_text(text.replace(old, new, 1))


# --- paths (cases-paths.yaml) -------------------------------------------------------------------------------

def _outside_yaml(repo: Path) -> None:
    """A YAML file beside the repository, which an origin annotation of ../../../outside.yaml names."""
    (repo.parent / "outside.yaml").write_text("apiVersion: kueue.x-k8s.io/v1beta2\nkind: ClusterQueue\n"
                                              "metadata:\n  name: alpha\nspec:\n  leaked: outside-secret\n")


def _fifo_in_repo(repo: Path) -> None:
    os.mkfifo(repo / "clusters/mini/fifo.yaml")


def _fifo_resource(repo: Path) -> None:
    """The overlay lists a FIFO: kubectl would block reading it until its timeout."""
    os.mkfifo(repo / "clusters/mini/pipe.yaml")
    kustomization = repo / "clusters/mini/kustomization.yaml"
    kustomization.write_text(kustomization.read_text().replace("  - queues.yaml\n",
                                                               "  - queues.yaml\n  - pipe.yaml\n"))


def _origin_symlink_out(repo: Path) -> None:
    (repo / "clusters/mini/link.yaml").symlink_to("/etc/passwd")


def _big_file_in_repo(repo: Path) -> None:
    """3 MiB, over the strict loader's limit, in a file the scan does not load (not .yaml)."""
    (repo / "clusters/mini/big.bin").write_bytes(b"x" * (3 * 1024 * 1024))


def _schema_symlink_dev_zero(repo: Path) -> None:
    folder = repo / "policies/crd-schemas/example.com"
    folder.mkdir(parents=True)
    (folder / "zero.json").symlink_to("/dev/zero")


def _schema_dir_symlink_out(repo: Path) -> None:
    """The repository's imported-schema folder is a symlink to a folder beside it."""
    outside = repo.parent / "schemas-outside"
    outside.mkdir()
    (outside / "x.json").write_text('{"x-gpupolicy-gvk": {"group": "a.io", "version": "v1", "kind": "X"}}')
    (repo / "policies/crd-schemas").symlink_to(outside, target_is_directory=True)


def _decision_symlink_out(repo: Path) -> None:
    folder = repo / "docs/decisions"
    folder.mkdir(parents=True)
    (folder / "0001-passwd.md").symlink_to("/etc/passwd")


# --- crashes (cases-crashes.yaml) ---------------------------------------------------------------------------

DASHBOARD_FIXTURE = HERE.parent / "rules" / "OBS004" / "bad" / "not-json"  # a Grafana dashboard ConfigMap


def _dashboard(repo: Path, text: str) -> None:
    """The OBS004 fixture's dashboard ConfigMap (clusters/mini/obs/) laid over the repository, with `text` as
    its gpu.json."""
    for source in sorted(DASHBOARD_FIXTURE.rglob("*")):
        rel = source.relative_to(DASHBOARD_FIXTURE)
        if source.is_file() and rel.as_posix() != "expect.yaml":
            (repo / rel).parent.mkdir(parents=True, exist_ok=True)
            (repo / rel).write_bytes(source.read_bytes())
    (repo / "clusters/mini/obs/gpu.json").write_text(text)


def _nested_panels(depth: int) -> str:
    return '{"panels": ' + '[{"panels": ' * depth + "[]" + "}]" * depth + "}"


def _quota_literal(repo: Path, literal: str) -> None:
    """The minirepo queue's GPU quota replaced by an unquoted YAML literal (patch_quota quotes its value)."""
    queues = repo / "clusters/mini/queues.yaml"
    queues.write_text(queues.read_text().replace("nominalQuota: 16", f"nominalQuota: {literal}"))


def _kustomization_replaced(repo: Path, make: Callable[[Path], None]) -> None:
    """The cluster's kustomization.yaml replaced by something that is not a regular file (made by `make`)."""
    kustomization = repo / "clusters/mini/kustomization.yaml"
    kustomization.unlink()
    make(kustomization)


def _kustomization_folder(path: Path) -> None:
    path.mkdir()
    (path / "notes.txt").write_text("a folder named like the overlay\n")


GENERATORS: dict[str, Callable[[Path], None]] = {
    "billion_laughs_wide": _billion_laughs_wide,
    "deep_flow_200": lambda repo: _deep_flow(repo, 200),
    "deep_flow_50000": lambda repo: _deep_flow(repo, 50_000),
    "deep_block": _deep_block,
    "huge_file": _huge_file,
    "long_line": _long_line,
    "latin1": _latin1,
    "utf16": _utf16,
    "binary": _binary,
    "png": _png,
    "nul_in_text": _nul_in_text,
    "symlink_file_out": _symlink_file_out,
    "symlink_dir_out": _symlink_dir_out,
    "symlink_resource_out": _symlink_resource_out,
    "symlink_loop": _symlink_loop,
    "dangling_resource": _dangling_resource,
    "ten_thousand_queues": _ten_thousand_queues,
    "many_aliases": _many_aliases,
    "no_cluster_yaml": _no_cluster_yaml,
    "remove_repo_markers": _remove_repo_markers,
    "outside_yaml": _outside_yaml,
    "fifo_in_repo": _fifo_in_repo,
    "fifo_resource": _fifo_resource,
    "origin_symlink_out": _origin_symlink_out,
    "big_file_in_repo": _big_file_in_repo,
    "schema_symlink_dev_zero": _schema_symlink_dev_zero,
    "decision_symlink_out": _decision_symlink_out,
    "schema_dir_symlink_out": _schema_dir_symlink_out,
    "configmap_2mib": _configmap_2mib,
    "plan_soak_overflow": lambda repo: _plan_replace(repo, "minimumSoak: 24h", "minimumSoak: 99999999999999d"),
    "plan_failed_pods_absurd": lambda repo: _plan_replace(repo, "maxFailedPods: 2", "maxFailedPods: 10000000000000"),
    "plan_thirteenth_month": lambda repo: _plan_replace(repo, 'planned: "2026-12-01"', 'planned: "2026-13-01"'),
    "dashboard_nested_5000": lambda repo: _dashboard(repo, '{"panels": ' + "[" * 5000 + "]" * 5000 + "}"),
    "dashboard_panels_nested_70": lambda repo: _dashboard(repo, _nested_panels(70)),
    "dashboard_panels_nested_400": lambda repo: _dashboard(repo, _nested_panels(400)),
    "dashboard_1200k": lambda repo: _dashboard(repo, json.dumps({"title": "big", "description": "x" * 1_200_000})),
    "quota_5000_digits": lambda repo: _quota_literal(repo, "1" + "0" * 5000),
    "quota_float_infinity": lambda repo: _quota_literal(repo, "1.0e+500"),
    "plan_february_30": lambda repo: _plan_replace(repo, 'planned: "2026-11-01"', 'planned: "2026-02-30"'),
    "plan_started_february_29": lambda repo: _plan_replace(repo, 'started: "2026-11-01T09:00:00Z"',
                                                           'started: "2026-02-29T09:00:00Z"'),
    "plan_window_overflow": lambda repo: _plan_replace(repo, "window: 1h", "window: 99999999999d"),
    "kustomization_is_a_folder": lambda repo: _kustomization_replaced(repo, _kustomization_folder),
    "kustomization_is_a_fifo": lambda repo: _kustomization_replaced(repo, os.mkfifo),
    "kustomization_is_dangling": lambda repo: _kustomization_replaced(repo, lambda p: p.symlink_to("gone.yaml")),
    "second_kustomization_is_a_fifo": lambda repo: os.mkfifo(repo / "clusters/mini/kustomization.yml"),
}


# --- running a case -----------------------------------------------------------------------------------------

def _build_case(case: dict, tmp_path: Path) -> Path:
    fixture = tmp_path / "fixture"
    fixture.mkdir()
    for rel, content in (case.get("files") or {}).items():
        target = fixture / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(content.replace("{QUEUE_HEAD}", QUEUE_HEAD), encoding="utf-8")
    repo = build_fixture_repo(fixture, tmp_path / "repo")
    if "patch_quota" in case:  # the minirepo queue's GPU quota, replaced by a hostile quantity
        queues = repo / "clusters/mini/queues.yaml"
        queues.write_text(queues.read_text().replace("nominalQuota: 16", f"nominalQuota: \"{case['patch_quota']}\""))
    if case.get("generate"):
        GENERATORS[case["generate"]](repo)
    return repo


def tree_digest(root: Path) -> str:
    """A hash of every path, file content and symlink target under `root` (symlinks are not followed)."""
    digest = hashlib.sha256()
    for directory, subdirs, names in os.walk(root):
        subdirs.sort()
        for name in sorted(names + [d for d in subdirs if os.path.islink(os.path.join(directory, d))]):
            full = os.path.join(directory, name)
            digest.update(os.path.relpath(full, root).encode() + b"\0")
            if os.path.islink(full):
                digest.update(b"link:" + os.readlink(full).encode())
            elif not os.path.isfile(full):  # a FIFO a case made: opening it would block
                digest.update(b"special")
            else:
                with open(full, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
    return digest.hexdigest()


def _argv(case: dict, repo: Path) -> list[str]:
    extra = [arg.replace("{repo}", str(repo)) for arg in case.get("args", [])]
    if case.get("no_repo_arg"):
        return ["validate", "--format", "json", *extra]
    return ["validate", "--repo", str(repo), "--format", "json", *extra]


def _run_in_process(argv: list[str], cwd: Path) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    previous = Path.cwd()
    os.chdir(cwd)
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(argv)
    finally:
        os.chdir(previous)
    return code, out.getvalue(), err.getvalue()


def _run_console_script(argv: list[str], cwd: Path, seconds: float) -> tuple[int, str, str]:
    proc = subprocess.run([str(CONSOLE_SCRIPT), *argv], cwd=cwd, capture_output=True, text=True,
                          timeout=seconds + 30, check=False)
    return proc.returncode, proc.stdout, proc.stderr


def _assert_expected(case: dict, code: int, out: str, err: str) -> None:
    expect = case["expect"]
    allowed = expect["exit"] if isinstance(expect["exit"], list) else [expect["exit"]]
    assert code in allowed, f"exit {code}, expected {expect['exit']}\nstdout: {out[:2000]}\nstderr: {err[:2000]}"
    if "rule" not in expect:
        assert expect["message"] in err, f"stderr lacks {expect['message']!r}: {err[:2000]}"
        return
    findings = json.loads(out)["findings"]
    matching = [f for f in findings if f["rule"] == expect["rule"]
                and f["path"] == expect.get("path", f["path"])
                and expect.get("message", "") in f["message"]]
    assert matching, f"no {expect['rule']} finding like {expect} in {json.dumps(findings, indent=1)[:3000]}"
    if "line" in expect:
        assert any(f["line"] == expect["line"] for f in matching), f"no finding at line {expect['line']}: {matching}"
    if 0 in allowed:  # allowed only when the design keeps this a warning
        assert matching[0]["severity"] == "warning"


def _assert_load_time(repo: Path, bound: dict) -> None:
    raw = (repo / bound["path"]).read_bytes()
    started = time.perf_counter()
    loaded = parse_source(raw, bound["path"])
    elapsed = time.perf_counter() - started
    assert loaded.findings, f"the loader accepted {bound['path']}"
    assert elapsed < float(bound["seconds"]), f"loading {bound['path']} took {elapsed:.2f}s"


def _param(case: dict):
    """A known gap (`xfail: reason`) is a strict xfail: it fails loudly once the toolkit closes the gap."""
    marks = [pytest.mark.xfail(reason=case["xfail"], strict=True)] if case.get("xfail") else []
    return pytest.param(case, id=case["id"], marks=marks)


@pytest.mark.parametrize("case", [_param(case) for case in CASES])
def test_hostile_case(case: dict, tmp_path: Path) -> None:
    if (case.get("generate") or "").startswith("symlink") and not hasattr(os, "symlink"):
        pytest.skip("symlinks are not supported here")
    repo = _build_case(case, tmp_path)
    if case.get("load_within"):  # the strict loader alone rejects the file within the bound (bombs: < 1 s)
        _assert_load_time(repo, case["load_within"])
    before = tree_digest(repo)
    argv = _argv(case, repo)
    seconds = float(case.get("seconds", DEFAULT_SECONDS))
    started = time.perf_counter()
    if case.get("subprocess"):
        code, out, err = _run_console_script(argv, repo, seconds)
    else:
        code, out, err = _run_in_process(argv, repo)
    elapsed = time.perf_counter() - started
    assert "Traceback" not in out and "Traceback" not in err, f"traceback printed:\n{out[-3000:]}\n{err[-3000:]}"
    _assert_expected(case, code, out, err)
    assert elapsed < seconds, f"took {elapsed:.1f}s, bound {seconds}s"
    assert tree_digest(repo) == before, "the repository changed"


def test_corpus_size_and_shape() -> None:
    ids = [case["id"] for case in CASES]
    assert len(ids) >= 40 and len(set(ids)) == len(ids)
    for case in CASES:
        exits = case["expect"]["exit"] if isinstance(case["expect"]["exit"], list) else [case["expect"]["exit"]]
        assert set(exits) <= {0, 1, 2} and (exits != [0]), case["id"]
        assert case.get("files") or case.get("generate") or case.get("no_repo_arg"), case["id"]
        assert case.get("generate") is None or case["generate"] in GENERATORS, case["id"]
    assert sum(1 for case in CASES if case.get("subprocess")) >= 3
