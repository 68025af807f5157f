"""The reviewed exceptions in force: every finding the repository accepts, why, who owns it and until when.

Read from `policies/exceptions.yaml` and the objects' `exception.gpupolicy.io/<RULE>` annotations (`waivers`).
The page shows no "days left": it would change every day. It needs none: an expired exception fails validation
(EXC002), so on a branch that validates every exception listed is in force.
"""

from __future__ import annotations

from ..domain.waivers import EXCEPTIONS_FILE, Waiver, waivers_of
from . import Context, table


def pages(context: Context) -> dict[str, str]:
    found = waivers_of(context.fleet)
    annotated = {w.source.path for w in found.waivers if w.inline}
    text = context.header("Reviewed exceptions", {EXCEPTIONS_FILE, *annotated})
    text += (
        f"Findings the repository accepts for a stated reason, by an owner, until a date: the entries "
        f"of `{EXCEPTIONS_FILE}` and the objects' `exception.gpupolicy.io/<RULE>` annotations (how to write "
        "one: "
        "[reviewed exceptions](../operations/exceptions.md)). `gpupolicy validate` still reports each "
        "accepted finding as waived, and fails once an exception expires.\n\n"
    )
    if not found.waivers:
        return {"exceptions.md": text + "No exceptions: every finding counts.\n"}
    rows = [
        _row(waiver) for waiver in sorted(found.waivers, key=lambda w: (w.expires, w.rule, str(w.source)))
    ]
    text += table(["rule", "accepts", "reason", "owner", "expires", "written in"], rows)
    if found.problems:
        text += f"\n{len(found.problems)} exception(s) are invalid and accept nothing (EXC001).\n"
    return {"exceptions.md": text}


def _row(waiver: Waiver) -> list[object]:
    return [
        f"[{waiver.rule}](rules/{waiver.rule}.md)",
        waiver.selector,
        waiver.reason,
        waiver.owner,
        waiver.expires.isoformat(),
        f"`{waiver.source}`" + (" (annotation)" if waiver.inline else ""),
    ]
