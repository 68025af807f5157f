"""A check of the toolkit crashed, so the run is incomplete.

## Why it matters
A rule or a pipeline stage raised an exception instead of finishing. Whatever it would have reported is
missing, so a clean-looking report is not evidence that the repository is fine: the run exits 2 (the tool
could not do its whole job), and CI must treat it as a failure, not as a pass and not as a policy error. The
finding names the check (`rule CAP001`, `stage model`) and, where the toolkit can tell, the object it was
checking, so the input that triggers the bug can be found.

## Bad example
An input the check did not expect, for instance a quota too large for a floating-point number:
```yaml
resources:
  - name: nvidia.com/gpu
    nominalQuota: 1e400
```
Before this was fixed, `rule CAP001 crashed: OverflowError: int too large to convert to float while checking
ClusterQueue alpha`.

## Fix
This is a bug in gpupolicy, not in the repository: report it with the finding's message (run with
`GPUPOLICY_DEBUG=1` to print the traceback). Until it is fixed, the input the message names is the one to
look at; the other rules' findings are still reported.
"""

from ..findings import Severity

ID = "INTERNAL"
SEVERITY = Severity.ERROR
SUMMARY = "A check of the toolkit crashed, so the run is incomplete"
STAGE = "pipeline"  # reported by the pipeline around every rule and stage (gpupolicy.internal)
