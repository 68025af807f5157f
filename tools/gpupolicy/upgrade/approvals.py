"""Who approves a stage: SSH signatures git verifies against the approvers' keys, never typed text.

An approval is a signature made with a key listed under a person's `signingKeys` in
policies/upgrades/approvers.yaml, verified by git itself (`gpg.format=ssh`, `gpg.ssh.allowedSignersFile`,
ssh-keygen -Y verify). Two signatures count, both on the promoting commit (HEAD when `gpupolicy upgrade
promote`
runs):
- HEAD's own commit signature: the *promoter*;
- a signed annotated tag pointing at HEAD whose name is `approve/<plan>/<stage>/<anything>`: an *approver*
  (`git tag -s approve/driver-r580-to-r595/fleet/bruno HEAD`). The tag object's own name is what is read, so a
  tag signed for another stage cannot be re-filed under this one.
`Approved-by:` trailers, author emails and `--approver` are text anyone can type: they never count; promote
says so when they are present. The keyring is read from the trusted revision (`--base REV`, else the committed
HEAD, never the working tree), with `gitrev.read_blob`. A stage's `approvers` names people or groups; a
`twoPersonApproval` stage needs two distinct verified signers, one of them an approver of the stage. See
docs/decisions/0063-signed-approvals.md (it supersedes 0036's trailers).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from ..errors import ToolError
from ..infra import gitrev
from .plans import Approvers, Stage

APPROVERS_FILE = "policies/upgrades/approvers.yaml"
APPROVERS_MAX_BYTES = 1024 * 1024
TRAILER = "Approved-by"
TAG_PREFIX = "approve"
GIT_TIMEOUT_SECONDS = 60
# What an allowed-signers line may carry: a key type and its base64 body (the comment is dropped), so nothing
# in the approvers file can add options or a second line to the file git reads.
KEY = re.compile(
    r"^(?P<type>ssh-ed25519|ssh-rsa|ecdsa-sha2-nistp(?:256|384|521)|sk-ssh-ed25519@openssh\.com|"
    r"sk-ecdsa-sha2-nistp256@openssh\.com) (?P<body>[A-Za-z0-9+/]+={0,3})(?: [^\n\r]*)?$"
)
_GOOD = re.compile(r'^Good "git" signature for (?P<principal>[a-z0-9][-a-z0-9]*) with ', re.MULTILINE)


@dataclass(frozen=True)
class Evidence:
    """The verified signers on the promoting commit, and what was there but does not count."""

    commit_signer: str | None  # the person whose key signed HEAD
    tag_signers: tuple[str, ...]  # persons whose keys signed an approve/<plan>/<stage>/* tag at HEAD
    ignored: tuple[str, ...] = ()  # unverified signatures and typed identities, in words


@dataclass(frozen=True)
class Decision:
    approver: str | None  # the person recorded as approvedBy; None when refused
    promoter: str | None  # the other signer recorded as promotedBy (HEAD's signer when it signed)
    reasons: tuple[str, ...]  # why refused


def decide(approvers: Approvers, stage: Stage, evidence: Evidence, asserted: str | None = None) -> Decision:
    """The stage's approver from verified signatures, or the reasons to refuse."""
    signers = list(
        dict.fromkeys([*evidence.tag_signers, *([evidence.commit_signer] if evidence.commit_signer else [])])
    )
    notes = tuple(evidence.ignored)
    if not signers:
        return Decision(
            None,
            None,
            (
                f"no verified signature: HEAD is not signed with a key of "
                f"{APPROVERS_FILE} and no signed tag {TAG_PREFIX}/<plan>/{stage.name}/* of such a key "
                "points at "
                "it",
            )
            + notes,
        )
    eligible = {member for entry in stage.approvers for member in approvers.members(entry)}
    if asserted:  # --approver: a cross-check of who the promoter expects; it narrows, it never adds
        wanted = set(approvers.members(asserted))
        if not wanted & set(signers):
            return Decision(
                None,
                None,
                (f"--approver {asserted} is not among the verified signers ({', '.join(signers)})",) + notes,
            )
        eligible &= wanted
    listed = [name for name in signers if name in eligible]
    if not listed:
        return Decision(
            None,
            None,
            (
                f"{', '.join(signers)} signed, and is not one of stage {stage.name}'s "
                f"approvers ({_describe(approvers, stage)})",
            )
            + notes,
        )
    if not stage.two_person:
        approver = listed[0]
        return Decision(approver, evidence.commit_signer, ())
    for approver in listed:  # an approver and a second, distinct signer
        others = [name for name in signers if name != approver]
        if others:
            promoter = evidence.commit_signer if evidence.commit_signer in others else others[0]
            return Decision(approver, promoter, ())
    return Decision(
        None,
        None,
        (
            f"stage {stage.name} needs two people: only {signers[0]} signed (a second "
            f"person of {APPROVERS_FILE} signs HEAD or a tag {TAG_PREFIX}/<plan>/{stage.name}/*)",
        )
        + notes,
    )


def _describe(approvers: Approvers, stage: Stage) -> str:
    parts = []
    for entry in stage.approvers:
        members = approvers.members(entry)
        parts.append(f"{entry}: {', '.join(members)}" if entry in approvers.groups else entry)
    return "; ".join(parts)


def allowed_signers(approvers: Approvers) -> str:
    """git's allowed-signers file for the people's keys: `name namespaces="git" type body` per key."""
    lines = []
    for person in approvers.people.values():
        for key in person.signing_keys:
            match = KEY.match(key)
            if match is None:
                raise ToolError(
                    f"{APPROVERS_FILE}: {person.name} has a signing key that is not an SSH "
                    "public "
                    "key line (type and base64)"
                )
            lines.append(f'{person.name} namespaces="git" {match.group("type")} {match.group("body")}')
    return "".join(line + "\n" for line in lines)


# --- git
# -------------------------------------------------------------------------------------------------------


def trusted_approvers(root: Path, rev: str) -> tuple[Approvers | None, str]:
    """The approvers file as committed at `rev` (the keyring), parsed; (None, why) when it cannot be used."""
    from ..infra.yamlload import parse_source
    from .plans import load_plans

    blob = gitrev.read_blob(root, rev, APPROVERS_FILE, APPROVERS_MAX_BYTES)
    if blob is None:
        return None, f"{APPROVERS_FILE} does not exist at {rev}: nobody's signature can be verified"
    loaded = parse_source(blob, APPROVERS_FILE)
    if not loaded.ok:
        return None, f"{APPROVERS_FILE} at {rev} cannot be read: {loaded.findings[0].message}"
    try:
        plans = load_plans(loaded.documents)
    except (KeyError, TypeError, AttributeError):  # a shape the schema refuses: validate names it (SCHEMA005)
        return None, f"{APPROVERS_FILE} at {rev} does not follow its schema; run `gpupolicy validate`"
    if plans.approvers is None or plans.problems:
        why = plans.problems[0].message if plans.problems else "no Approvers document"
        return None, f"{APPROVERS_FILE} at {rev} cannot be used: {why}"
    return plans.approvers, ""


def head_evidence(root: Path, approvers: Approvers, plan: str, stage: str) -> Evidence:
    """Verified signers of HEAD and of the approve/<plan>/<stage>/* tags pointing at it (read-only
    plumbing)."""
    with _keyring(approvers) as config:
        status, principal = (
            _git(root, *config, "log", "-1", "--format=%G?%x00%GS", "HEAD").rstrip("\n").split("\0", 1)
        )
        ignored = []
        commit_signer = principal if status == "G" and principal in approvers.people else None
        if commit_signer is None and status != "N":
            ignored.append(f"HEAD's signature does not verify against {APPROVERS_FILE} (git: {status})")
        tag_signers = []
        for ref, name in _approval_tags(root, plan, stage):
            signer = _tag_signer(root, config, ref)
            if signer in approvers.people:
                tag_signers.append(signer)
            else:
                ignored.append(f"tag {name}: its signature does not verify against {APPROVERS_FILE}")
    trailers = _git(root, "log", "-1", f"--format=%(trailers:key={TRAILER},valueonly,unfold)", "HEAD").split()
    if trailers:
        ignored.append(
            f"{TRAILER}: trailers are typed text and do not count (decision 0063); the approver "
            f"signs a tag {TAG_PREFIX}/{plan}/{stage}/<name> on HEAD"
        )
    return Evidence(commit_signer, tuple(tag_signers), tuple(ignored))


def _approval_tags(root: Path, plan: str, stage: str) -> Iterator[tuple[str, str]]:
    """(ref, the tag object's own name) of annotated tags at HEAD named approve/<plan>/<stage>/*."""
    listed = _git(
        root,
        "for-each-ref",
        "--points-at",
        "HEAD",
        "--format=%(refname)%00%(objecttype)%00%(tag)",
        "refs/tags/",
    )
    prefix = f"{TAG_PREFIX}/{plan}/{stage}/"
    for line in listed.splitlines():
        ref, kind, name = (line.split("\0") + ["", ""])[:3]
        if kind == "tag" and name.startswith(prefix):
            yield ref, name


def _tag_signer(root: Path, config: tuple[str, ...], ref: str) -> str | None:
    proc = _run(root, *config, "verify-tag", ref)
    match = _GOOD.search(proc.stderr)
    return match.group("principal") if proc.returncode == 0 and match else None


@contextmanager
def _keyring(approvers: Approvers) -> Iterator[tuple[str, ...]]:
    """git -c options that verify SSH signatures against the approvers' keys and nothing else: the program is
    the ssh-keygen found beside the toolkit (never one the repository's config names)."""
    keygen = shutil.which("ssh-keygen")
    if keygen is None:
        raise ToolError(
            "ssh-keygen is not installed (Debian: openssh-client); signed approvals cannot be verified"
        )
    with tempfile.TemporaryDirectory(prefix="gpupolicy-keyring-") as folder:
        path = Path(folder) / "allowed_signers"
        path.write_text(allowed_signers(approvers))
        yield (
            "-c",
            "gpg.format=ssh",
            "-c",
            f"gpg.ssh.program={keygen}",
            "-c",
            f"gpg.ssh.allowedSignersFile={path}",
            "-c",
            "log.showSignature=false",
        )


def _run(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("GIT_")}
    try:
        return subprocess.run(
            ["git", *args],
            cwd=root,
            capture_output=True,
            text=True,
            env=env,
            timeout=GIT_TIMEOUT_SECONDS,
            check=False,
        )
    except (FileNotFoundError, subprocess.TimeoutExpired) as exc:
        raise ToolError(f"cannot ask git for the promoting commit ({exc})") from None


def _git(root: Path, *args: str) -> str:
    proc = _run(root, *args)
    if proc.returncode != 0:
        raise ToolError(f"cannot read the promoting commit (HEAD) with git: {proc.stderr.strip()[:300]}")
    return proc.stdout
