"""Who approves a stage: identities from git, checked against policies/upgrades/approvers.yaml.

The promoting commit is HEAD when `gpupolicy upgrade promote` runs (in CI, the reviewed merge on the protected
branch). Its author is the *promoter*; its `Approved-by:` trailers (written by the merge, the forge or the
reviewer) name the *approvers*; without a trailer the author approves their own promote. An identity is a
person of the approvers file when one of their emails (or forge handles) matches. A stage's `approvers`
names people or groups; a `twoPersonApproval` stage needs an approver who is not the promoter.
A trailer is only as trustworthy as the branch it is on: the gate belongs on a branch that takes reviewed
merges only (docs/decisions/0036-approvals-from-identities.md).
"""

from __future__ import annotations

import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from .errors import ToolError
from .upgrades import Approvers, Person, Stage

APPROVERS_FILE = "policies/upgrades/approvers.yaml"
TRAILER = "Approved-by"
GIT_TIMEOUT_SECONDS = 60
_NAME_EMAIL = re.compile(r"^\s*(?P<name>[^<>]*?)\s*<(?P<email>[^<>\s]+@[^<>\s]+)>\s*$")
_BARE = re.compile(r"^\s*(?P<token>@[A-Za-z0-9][-A-Za-z0-9_.]*|[^<>\s]+@[^<>\s]+)\s*$")


@dataclass(frozen=True)
class Identity:
    """An identity as git or a trailer spells it: `Name <email>`, a bare email, or a forge `@handle`."""

    text: str
    email: str = ""
    handle: str = ""


def parse_identity(text: str) -> Identity | None:
    match = _NAME_EMAIL.match(text)
    if match:
        return Identity(text.strip(), email=match.group("email"))
    match = _BARE.match(text)
    if match:
        token = match.group("token")
        return Identity(text.strip(), handle=token) if token.startswith("@") else Identity(text.strip(), email=token)
    return None


def person_of(approvers: Approvers, identity: Identity) -> Person | None:
    for person in approvers.people.values():
        if identity.email and identity.email.lower() in (e.lower() for e in person.emails):
            return person
        if identity.handle and identity.handle.lower() in (h.lower() for h in person.handles):
            return person
    return None


@dataclass(frozen=True)
class Commit:
    """What promote needs from the promoting commit."""

    author: Identity
    trailers: tuple[str, ...]  # raw Approved-by values


@dataclass(frozen=True)
class Decision:
    approver: str | None  # the person recorded as approvedBy; None when refused
    promoter: str | None
    reasons: tuple[str, ...]  # why refused


def decide(approvers: Approvers, stage: Stage, commit: Commit, asserted: str | None = None) -> Decision:
    """The stage's approver from the commit's identities, or the reasons to refuse."""
    promoter = person_of(approvers, commit.author)
    eligible = {member for entry in stage.approvers for member in approvers.members(entry)}
    on_stage = f"stage {stage.name}'s approvers ({_describe(approvers, stage)})"
    reasons: list[str] = []
    if commit.trailers:
        candidates = []
        for raw in commit.trailers:
            identity = parse_identity(raw)
            person = person_of(approvers, identity) if identity else None
            if person is None:
                reasons.append(f"{TRAILER}: {raw} is nobody in {APPROVERS_FILE}")
            else:
                candidates.append(person)
    else:
        if promoter is None:
            return Decision(None, None, (f"the promoting commit's author {commit.author.text} is nobody in "
                                         f"{APPROVERS_FILE}, and it has no {TRAILER}: trailer",))
        candidates = [promoter]
    listed = [p for p in candidates if p.name in eligible]
    self_approval = False
    if stage.two_person:
        if promoter is None:
            return Decision(None, None, (f"stage {stage.name} needs two people, and the promoting commit's author "
                                         f"{commit.author.text} is nobody in {APPROVERS_FILE}",))
        self_approval = any(p.name == promoter.name for p in listed)
        listed = [p for p in listed if p.name != promoter.name]
    if asserted:  # --approver: the person or group the promoter says approves; it must match the commit
        wanted = set(approvers.members(asserted))
        matching = [p for p in listed if p.name in wanted]
        if listed and not matching:
            reasons.append(f"--approver {asserted} is not who the promoting commit names "
                           f"({', '.join(p.name for p in listed)})")
            return Decision(None, promoter.name if promoter else None, tuple(reasons))
        listed = matching
    promoter_name = promoter.name if promoter else None
    if listed:
        return Decision(listed[0].name, promoter_name, ())
    if self_approval:
        reasons.append(f"self-approval: stage {stage.name} needs two people, and {promoter_name} both authored "
                       f"the promoting commit and approves it (an {TRAILER}: trailer of another approver is needed)")
    else:
        names = ", ".join(p.name for p in candidates) or "nobody"
        reasons.append(f"{names} is not one of {on_stage}")
    return Decision(None, promoter_name, tuple(reasons))


def _describe(approvers: Approvers, stage: Stage) -> str:
    parts = []
    for entry in stage.approvers:
        members = approvers.members(entry)
        parts.append(f"{entry}: {', '.join(members)}" if entry in approvers.groups else entry)
    return "; ".join(parts)


# --- git -------------------------------------------------------------------------------------------------------

def head_commit(root: Path) -> Commit:
    """HEAD's author and Approved-by trailers (read-only plumbing)."""
    author = _git(root, "log", "-1", "--format=%an <%ae>").strip()
    trailers = _git(root, "log", "-1", f"--format=%(trailers:key={TRAILER},valueonly,unfold)")
    identity = parse_identity(author)
    if identity is None:
        raise ToolError(f"cannot read the promoting commit's author from git: {author!r}")
    return Commit(identity, tuple(line.strip() for line in trailers.splitlines() if line.strip()))


def _git(root: Path, *args: str) -> str:
    try:
        proc = subprocess.run(["git", *args], cwd=root, capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_SECONDS, check=False)
    except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
        raise ToolError(f"cannot ask git for the promoting commit ({exc})") from None
    if proc.returncode != 0:
        raise ToolError(f"cannot read the promoting commit (HEAD) with git: {proc.stderr.strip()[:300]}")
    return proc.stdout
