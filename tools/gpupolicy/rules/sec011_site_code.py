"""mkdocs.yml loads Python that is not the toolkit's own (a hook, a plugin, a Markdown extension, a Python
tag).

## Why it matters
MkDocs executes every file under `hooks:` and imports every plugin, Markdown extension and `!!python/name:`
tag its config names. A pull request that adds one runs its own code on the machine that builds the site
(`make docs`, the site test in CI), with whatever that job holds. The site's config may name only the
toolkit's hook (`tools/gpupolicy/docsgen/site_hooks.py`) and the plugins and extensions
`gpupolicy.infra.sitetrust` allows (decision 0061); `make docs` refuses to build a site that names anything
else.

## Bad example
```yaml
hooks:
  - tools/gpupolicy/docsgen/site_hooks.py
  - docs/my_hook.py      # runs during every site build
```

## Fix
Remove the entry. A new hook or plugin is a toolkit change: add it to the allowlist in
`tools/gpupolicy/infra/sitetrust.py` in a reviewed toolkit pull request, so it takes effect from the base
branch.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..findings import Finding, Severity
from ..infra import sitetrust
from ..infra.siteconfig import SITE_CONFIG
from ..model import Fleet

ID = "SEC011"
SEVERITY = Severity.ERROR
SUMMARY = "The site config loads only the toolkit's own code"
FLEET_LEVEL = True


def check(fleet: Fleet) -> Iterator[Finding]:
    for problem in sitetrust.repository_problems(fleet.root):
        yield Finding(
            rule=ID,
            severity=SEVERITY,
            cluster="",
            message=problem,
            path=SITE_CONFIG,
            line=0,
            hint="remove it; a new hook or plugin belongs in the toolkit's allowlist "
            "(gpupolicy.infra.sitetrust)",
        )
