"""Approvals from identities: the promoting commit's author and Approved-by trailers, matched against
policies/upgrades/approvers.yaml; refusals for an approver not on the stage and for self-approval where two
people are required; the approver recorded in the plan."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from support import git, git_repository

from gpupolicy import approvals, pipeline, upgrades
from gpupolicy.approvals import Commit, Identity
from gpupolicy.cli import main

REPO = Path(__file__).resolve().parents[1]
FIXTURE = REPO / "tests" / "fixtures" / "upgrades"
AFTER_SOAK = "2026-11-20T00:00:00Z"  # the fixture's canary stage has soaked; fleet is next
PEOPLE = {"tess": ("Tess", "test@example.com"), "pat": ("Pat", "pat@example.com"), "sam": ("Sam", "sam@example.com"),
          "ivan": ("Ivan", "ivan@example.com"), "stranger": ("Stranger", "stranger@example.org")}


# --- the decision --------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def fixture_plans() -> upgrades.PlanSet:
    return upgrades.plans_of(pipeline.load_fleet(FIXTURE))


def _fleet_stage(plans: upgrades.PlanSet, two_person: bool = False) -> upgrades.Stage:
    stage = plans.plan("driver-next").stages[2]
    return upgrades.Stage(**{**stage.__dict__, "two_person": two_person})


def _commit(author: str, *trailers: str) -> Commit:
    name, email = PEOPLE[author]
    return Commit(Identity(f"{name} <{email}>", email=email), trailers)


def test_identities_are_name_email_bare_email_or_handle() -> None:
    assert approvals.parse_identity("Sam Doe <Sam@Example.com>") == Identity("Sam Doe <Sam@Example.com>",
                                                                              email="Sam@Example.com")
    assert approvals.parse_identity("sam@example.com").email == "sam@example.com"
    assert approvals.parse_identity("@sam-serving").handle == "@sam-serving"
    assert approvals.parse_identity("Sam") is None


def test_the_author_approves_when_there_is_no_trailer(fixture_plans) -> None:
    decision = approvals.decide(fixture_plans.approvers, _fleet_stage(fixture_plans), _commit("pat"))
    assert decision == approvals.Decision("pat", "pat", ())


def test_a_trailer_names_the_approver_by_email_or_handle(fixture_plans) -> None:
    stage = _fleet_stage(fixture_plans, two_person=True)
    by_email = approvals.decide(fixture_plans.approvers, stage, _commit("tess", "Sam <SAM@example.com>"))
    by_handle = approvals.decide(fixture_plans.approvers, stage, _commit("tess", "@sam-serving"))
    assert by_email.approver == by_handle.approver == "sam" and by_email.promoter == "tess"


def test_a_person_not_on_the_stage_is_refused(fixture_plans) -> None:
    decision = approvals.decide(fixture_plans.approvers, _fleet_stage(fixture_plans), _commit("ivan"))
    assert decision.approver is None
    assert decision.reasons == ("ivan is not one of stage fleet's approvers (platform: pat, tess; serving-lead: sam)",)


def test_an_unknown_author_or_trailer_is_refused(fixture_plans) -> None:
    stage = _fleet_stage(fixture_plans)
    alone = approvals.decide(fixture_plans.approvers, stage, _commit("stranger"))
    assert "Stranger <stranger@example.org> is nobody in policies/upgrades/approvers.yaml" in alone.reasons[0]
    forged = approvals.decide(fixture_plans.approvers, stage, _commit("stranger", "Mallory <m@evil.example>"))
    assert forged.approver is None and "Approved-by: Mallory <m@evil.example> is nobody" in forged.reasons[0]


def test_self_approval_is_refused_where_two_people_are_required(fixture_plans) -> None:
    stage = _fleet_stage(fixture_plans, two_person=True)
    for commit in (_commit("tess"), _commit("tess", "Tess <test@example.com>")):
        decision = approvals.decide(fixture_plans.approvers, stage, commit)
        assert decision.approver is None and decision.reasons[0].startswith("self-approval: stage fleet needs two")
    # a second listed approver among the trailers is enough
    both = approvals.decide(fixture_plans.approvers, stage, _commit("tess", "Tess <test@example.com>", "@pat"))
    assert both.approver == "pat"


# --- promote on a git copy of the fixture ----------------------------------------------------------------------

def _git(repo: Path, *args: str, who: str = "tess") -> str:
    name, email = PEOPLE[who]
    return git(repo, *args, name=name, email=email)


@pytest.fixture()
def repo(tmp_path: Path) -> Path:
    target = tmp_path / "repo"
    shutil.copytree(FIXTURE, target)
    plan = target / "policies/upgrades/plan.yaml"
    plan.write_text(plan.read_text().replace("      approvers: [platform, serving-lead]\n",
                                             "      approvers: [platform, serving-lead]\n"
                                             "      twoPersonApproval: true\n"))
    return git_repository(target, *PEOPLE["tess"])


def _promote(repo: Path, capsys) -> tuple[int, str]:
    code = main(["upgrade", "promote", "driver-next", "--now", AFTER_SOAK, "--repo", str(repo)])
    captured = capsys.readouterr()
    print(f"--- exit {code}\n{captured.err}{captured.out}")
    return code, captured.err + captured.out


def test_promote_refuses_an_approver_not_on_the_stage(repo: Path, capsys) -> None:
    _git(repo, "commit", "-q", "--allow-empty", "-m", "promote fleet, please", who="ivan")
    code, output = _promote(repo, capsys)
    assert code == 1
    assert "ivan is not one of stage fleet's approvers (platform: pat, tess; serving-lead: sam)" in output


def test_promote_refuses_self_approval_on_a_two_person_stage(repo: Path, capsys) -> None:
    _git(repo, "commit", "-q", "--allow-empty", "-m", "promote fleet\n\nApproved-by: Tess <test@example.com>")
    code, output = _promote(repo, capsys)
    assert code == 1 and "self-approval: stage fleet needs two people, and tess both authored" in output


def test_promote_records_a_listed_approver_from_the_reviewed_merge(repo: Path, capsys) -> None:
    _git(repo, "commit", "-q", "--allow-empty", "-m", "Merge: promote fleet\n\nApproved-by: Sam <sam@example.com>")
    code, output = _promote(repo, capsys)
    assert code == 0, output
    assert "+      approvedBy: sam" in output and "approved by sam (promoted by tess)" in output
    assert "approvedBy: sam" in (repo / "policies/upgrades/plan.yaml").read_text()


def test_an_approvers_file_with_unknown_members_or_shared_emails_is_a_problem_with_its_line() -> None:
    from gpupolicy.yamlload import load_text
    text = ("apiVersion: gpupolicy/v1\nkind: Approvers\nmetadata:\n  name: approvers\nspec:\n  people:\n"
            "    ana:\n      emails: [ana@example.com]\n    bo:\n      emails: [ANA@example.com]\n"
            "  groups:\n    leads: [ana, nobody]\n")
    plans = upgrades.load_plans(load_text(text, "policies/upgrades/approvers.yaml").documents)
    problems = {(p.location.line, p.message) for p in plans.problems}
    assert problems == {(10, "ANA@example.com belongs to both ana and bo"),
                        (12, "group leads: nobody is not one of the people")}
