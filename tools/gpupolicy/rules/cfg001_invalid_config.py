'''The repository configuration (`gpupolicy.yaml`) is malformed, names an unknown rule, or silences a
protected one.

## Why it matters
`gpupolicy.yaml` changes what every pull request is held to: a severity raised or lowered, a rule switched off
under some folders. A typo in a rule ID would silently configure nothing, and a configuration that could lower
INTERNAL (a check that crashed) or the reviewed-exception rules (EXC) would let a run pass without doing its
job or turn an expired exception into a quiet one. The security rules (SEC, RBAC and the trust-boundary rules
KUST001, KUST002, KUST009, YAML008) are protected the same way (`protection.py`, decision 0062). So a
configuration with any such problem is an error at its line, and none of it is applied until it is fixed: half
a configuration is a policy nobody wrote.

## Bad example
```yaml
# gpupolicy.yaml
apiVersion: gpupolicy/v1
kind: Config
severity:
  - {rule: OBS03, severity: error}            # no rule OBS03 (OBS003 was meant)
disable:
  - {rule: EXC002, paths: ["**"], reason: "expired exceptions are noise"}   # EXC rules cannot be disabled
  - {rule: DOC002, paths: ["docs/**"]}        # reason is required
```

## Fix
Name a rule that `gpupolicy rules` lists, give every `disable` entry `paths` and a `reason`, and settle an
expired exception by renewing or removing it (see docs/operations/exceptions.md):
```yaml
severity:
  - {rule: OBS003, severity: error}
disable:
  - {rule: DOC002, paths: ["docs/archive/**"], reason: "archived runbooks are frozen and not linked"}
```
'''

from ..findings import Severity, stage_finding

ID = "CFG001"
SEVERITY = Severity.ERROR
SUMMARY = "Repository configuration (gpupolicy.yaml) malformed, unknown rule, or protected rule silenced"
STAGE = "load"  # reported by the pipeline itself, when it reads the configuration


finding = stage_finding(ID, SEVERITY)
