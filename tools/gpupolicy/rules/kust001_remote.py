"""A kustomization reaches the network.

## Why it matters
A remote `resources:` entry (a URL or git reference) or `helmCharts:` makes rendering depend on the network
and on a third party's repository at sync time: what was reviewed is not what is applied. kustomize tries to
read an entry as a git repository *before* it looks for a local folder of that name, so every form its
repo-spec parser accepts is refused here, a local folder of the same name notwithstanding: `git::` with any
scheme, `ssh://`, `https://`, `http://`, `file://`, scp-style `user@host:org/repo.git`, `github.com/...` and
`github.com:...`, and anything with a `?ref=` query. kubectl also runs with no `git`, `ssh`, proxy or git
configuration to use.

## Bad example
```yaml
resources:
- https://github.com/example/manifests//base?ref=main
```

## Fix
Vendor the manifests into the repository; install charts with a Flux HelmRelease or an Argo CD Application.
"""

from ..findings import Severity, stage_finding

ID = "KUST001"
SEVERITY = Severity.ERROR
SUMMARY = "A kustomization reaches the network"
STAGE = "render"  # reported by the pipeline itself


finding = stage_finding(ID, SEVERITY)
