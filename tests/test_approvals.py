"""Approvals are SSH signatures git verifies against the keys in policies/upgrades/approvers.yaml of the
trusted revision: HEAD's commit signature (the promoter) and signed approve/<plan>/<stage>/* tags on HEAD
(approvers). Typed identities (Approved-by: trailers, author emails) never count; two distinct signers where a
stage needs
two people; the approver and promoter recorded in the plan (decision 0063)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from prometheus_server import healthy_prometheus
from support import approve, git, git_repository, require_tool, sign_as

from gpupolicy import pipeline
from gpupolicy.cli import main
from gpupolicy.upgrade import approvals
from gpupolicy.upgrade import plans as upgrades
from gpupolicy.upgrade.approvals import Evidence

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "upgrades"
AFTER_SOAK = "2026-11-20T00:00:00Z"  # the fixture's canary stage has soaked; fleet is next
PEOPLE = {
    "tess": ("Tess", "test@example.com"),
    "pat": ("Pat", "pat@example.com"),
    "sam": ("Sam", "sam@example.com"),
    "ivan": ("Ivan", "ivan@example.com"),
    "stranger": ("Stranger", "stranger@example.org"),
}


# --- the decision
# --------------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def fixture_plans() -> upgrades.PlanSet:
    return upgrades.plans_of(pipeline.load_fleet(FIXTURE))


def _fleet_stage(plans: upgrades.PlanSet, two_person: bool = False) -> upgrades.Stage:
    stage = plans.plan("driver-next").stages[2]
    return upgrades.Stage(**{**stage.__dict__, "two_person": two_person})


def test_the_commit_signer_approves_a_one_person_stage(fixture_plans) -> None:
    decision = approvals.decide(fixture_plans.approvers, _fleet_stage(fixture_plans), Evidence("pat", ()))
    assert decision == approvals.Decision("pat", "pat", ())


def test_without_a_verified_signature_nobody_approves(fixture_plans) -> None:
    typed = Evidence(
        None, (), ("Approved-by: trailers are typed text and do not count (decision 0063); ...",)
    )
    decision = approvals.decide(fixture_plans.approvers, _fleet_stage(fixture_plans), typed)
    assert decision.approver is None and decision.reasons[0].startswith(
        "no verified signature: HEAD is not signed"
    )
    assert "typed text and do not count" in decision.reasons[1]


def test_a_signer_not_on_the_stage_is_refused(fixture_plans) -> None:
    decision = approvals.decide(fixture_plans.approvers, _fleet_stage(fixture_plans), Evidence("ivan", ()))
    assert decision.approver is None
    assert decision.reasons == (
        "ivan signed, and is not one of stage fleet's approvers (platform: pat, tess; serving-lead: sam)",
    )


def test_a_two_person_stage_needs_two_distinct_signers(fixture_plans) -> None:
    stage = _fleet_stage(fixture_plans, two_person=True)
    alone = approvals.decide(fixture_plans.approvers, stage, Evidence("tess", ("tess",)))
    assert alone.approver is None and alone.reasons[0].startswith(
        "stage fleet needs two people: only tess signed"
    )
    both = approvals.decide(fixture_plans.approvers, stage, Evidence("tess", ("sam",)))
    assert (both.approver, both.promoter) == ("sam", "tess")
    # the second signer need not be on the stage; the approver must
    outsider = approvals.decide(fixture_plans.approvers, stage, Evidence("ivan", ("pat",)))
    assert (outsider.approver, outsider.promoter) == ("pat", "ivan")


def test_approver_cross_check_narrows_never_adds(fixture_plans) -> None:
    stage = _fleet_stage(fixture_plans)
    assert (
        approvals.decide(fixture_plans.approvers, stage, Evidence("tess", ("sam",)), "serving-lead").approver
        == "sam"
    )
    refused = approvals.decide(fixture_plans.approvers, stage, Evidence("tess", ()), "serving-lead")
    assert refused.reasons == ("--approver serving-lead is not among the verified signers (tess)",)


def test_a_key_line_with_options_or_a_second_line_is_refused(fixture_plans) -> None:
    person = upgrades.Person(
        "eve", ("eve@example.com",), (), ('ssh-ed25519 AAAA\nmallory namespaces="git" ssh-ed25519 BBBB',)
    )
    forged = upgrades.Approvers({"eve": person}, {})
    with pytest.raises(Exception, match="not an SSH public key line"):
        approvals.allowed_signers(forged)


# --- promote on a git copy of the fixture
# ----------------------------------------------------------------------


def _git(repo: Path, *args: str, who: str = "tess") -> str:
    name, email = PEOPLE[who]
    return git(repo, *args, name=name, email=email)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    require_tool("ssh-keygen")
    target = tmp_path / "repo"
    shutil.copytree(FIXTURE, target)
    plan = target / "policies/upgrades/plan.yaml"
    plan.write_text(
        plan.read_text().replace(
            "      approvers: [platform, serving-lead]\n",
            "      approvers: [platform, serving-lead]\n      twoPersonApproval: true\n",
        )
    )
    return git_repository(target, *PEOPLE["tess"])


def _promote(repo: Path, capsys, *extra: str) -> tuple[int, str]:
    with healthy_prometheus(
        repo.parent / f"prom-{len(list(repo.parent.iterdir()))}", repo, "driver-next", AFTER_SOAK
    ) as url:
        code = main(
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
                *extra,
            ]
        )
    captured = capsys.readouterr()
    print(f"--- exit {code}\n{captured.err}{captured.out}")
    return code, captured.err + captured.out


def test_promote_refuses_a_signer_not_on_the_stage(repo: Path, capsys) -> None:
    _git(repo, "commit", "-q", "--allow-empty", "-m", "promote fleet, please", who="ivan")
    code, output = _promote(repo, capsys)
    assert code == 1
    assert (
        "ivan signed, and is not one of stage fleet's approvers (platform: pat, tess; serving-lead: sam)"
        in output
    )


def test_promote_refuses_one_signer_on_a_two_person_stage(repo: Path, capsys) -> None:
    _git(repo, "commit", "-q", "--allow-empty", "-m", "promote fleet")
    # tess approving her own commit is still one person
    approve(repo, "driver-next", "fleet", PEOPLE["tess"][1])
    code, output = _promote(repo, capsys)
    assert code == 1 and "stage fleet needs two people: only tess signed" in output


def test_a_typed_trailer_never_approves(repo: Path, capsys) -> None:
    """The attack of issue 29: the PR author types the approver's name into the commit."""
    _git(
        repo,
        "commit",
        "-q",
        "--allow-empty",
        "-m",
        "Merge: promote fleet\n\nApproved-by: Sam <sam@example.com>",
    )
    code, output = _promote(repo, capsys)
    assert code == 1 and "stage fleet needs two people: only tess signed" in output
    assert "trailers are typed text and do not count" in output


def test_a_tag_signed_by_a_key_outside_the_keyring_does_not_count(repo: Path, capsys) -> None:
    _git(repo, "commit", "-q", "--allow-empty", "-m", "promote fleet")
    mallory = repo.parent / "mallory"
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(mallory)], check=True)
    git(
        repo,
        "-c",
        "gpg.format=ssh",
        "-c",
        f"user.signingkey={mallory}",
        "tag",
        "-s",
        "-m",
        "approve",
        "approve/driver-next/fleet/sam",
        name="Sam",
        email="sam-typed@example.com",
    )
    code, output = _promote(repo, capsys)
    assert code == 1 and "tag approve/driver-next/fleet/sam: its signature does not verify" in output


def test_a_tag_for_another_stage_does_not_count(repo: Path, capsys) -> None:
    _git(repo, "commit", "-q", "--allow-empty", "-m", "promote fleet")
    approve(repo, "driver-next", "canary", PEOPLE["sam"][1])
    code, output = _promote(repo, capsys)
    assert code == 1 and "only tess signed" in output


def test_a_key_added_by_the_pull_request_does_not_count_against_the_base(repo: Path, capsys) -> None:
    """The keyring comes from --base: a PR that adds its author's key to the approvers file gains nothing."""
    base = _git(repo, "rev-parse", "HEAD").strip()
    approvers = repo / "policies/upgrades/approvers.yaml"
    mallory = repo.parent / "mallory"
    import subprocess

    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(mallory)], check=True)
    text = approvers.read_text().replace(
        "    ivan:",
        "    ivan:\n      signingKeys: [\"" + mallory.with_suffix(".pub").read_text().strip() + "\"]",
        1,
    )
    approvers.write_text(text.replace("    platform: [pat, tess]", "    platform: [pat, tess, ivan]"))
    _git(repo, "commit", "-q", "-am", "add my key")
    git(
        repo,
        "-c",
        "gpg.format=ssh",
        "-c",
        f"user.signingkey={mallory}",
        "tag",
        "-s",
        "-m",
        "approve",
        "approve/driver-next/fleet/ivan",
        name="Ivan",
        email="ivan@example.com",
    )
    code, output = _promote(repo, capsys, "--base", base)
    assert code == 1 and "only tess signed" in output and "tag approve/driver-next/fleet/ivan" in output


def test_promote_records_the_signed_approver_and_the_promoter(repo: Path, capsys) -> None:
    _git(repo, "commit", "-q", "--allow-empty", "-m", "Merge: promote fleet")
    approve(repo, "driver-next", "fleet", PEOPLE["sam"][1])
    code, output = _promote(repo, capsys)
    assert code == 0, output
    assert "+      approvedBy: sam" in output and "+      promotedBy: tess" in output
    assert "approved by sam (promoted by tess)" in output
    plan = (repo / "policies/upgrades/plan.yaml").read_text()
    assert "approvedBy: sam" in plan and "promotedBy: tess" in plan


def test_a_second_email_of_a_person_signs_as_that_person(repo: Path, capsys) -> None:
    sign_as(repo, "test@example.com", "platform@example.com")
    git(repo, "commit", "-q", "--allow-empty", "-m", "promote", name="Tess", email="platform@example.com")
    approve(repo, "driver-next", "fleet", PEOPLE["pat"][1])
    code, output = _promote(repo, capsys)
    assert code == 0 and "approved by pat (promoted by tess)" in output


def test_an_approvers_file_with_unknown_members_or_shared_emails_is_a_problem_with_its_line() -> None:
    from gpupolicy.infra.yamlload import load_text

    text = (
        "apiVersion: gpupolicy/v1\nkind: Approvers\nmetadata:\n  name: approvers\nspec:\n  people:\n"
        "    ana:\n      emails: [ana@example.com]\n    bo:\n      emails: [ANA@example.com]\n"
        "  groups:\n    leads: [ana, nobody]\n"
    )
    plans = upgrades.load_plans(load_text(text, "policies/upgrades/approvers.yaml").documents)
    problems = {(p.location.line, p.message) for p in plans.problems}
    assert problems == {
        (10, "ANA@example.com belongs to both ana and bo"),
        (12, "group leads: nobody is not one of the people"),
    }
