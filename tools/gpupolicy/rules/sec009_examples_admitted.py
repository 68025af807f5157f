"""An example workload in docs/examples/ would be denied by a cluster's admission policies.

## Why it matters
Teams start from the examples. If the cluster's own ValidatingAdmissionPolicies deny an example (or the pods
its controller creates), the documentation teaches a manifest that fails with a cryptic admission error. The
rule evaluates every rendered, Deny-bound policy of every cluster with CEL (`gpupolicy.domain.cel`) against
each example and each pod its controller would create (template labels, the example's namespace), and reports
each denial with the policy's message.

## Bad example
```yaml
# docs/examples/train-job.yaml: the queue label is on the Job but not on its pod template, and the cluster's
# gpu-pods-require-queue policy checks pods
metadata:
  labels: {kueue.x-k8s.io/queue-name: training}
spec:
  template:
    spec: {containers: [{name: train, resources: {limits: {nvidia.com/gpu: 1}}}]}
```

## Fix
Change the example as the message says (here: put the label on the pod template too), or fix the policy if it
denies something legitimate.
"""

from __future__ import annotations

from collections.abc import Iterator

from ..domain import cel
from ..domain.admission import chain_of
from ..domain.workloads import workloads
from ..findings import Finding, Severity, at
from ..model import Fleet
from .sec003_admission_policies import team_namespace

ID = "SEC009"
SEVERITY = Severity.ERROR
SUMMARY = "Example workloads pass the clusters' admission policies"


def check(fleet: Fleet) -> Iterator[Finding]:
    examples = [w for w in workloads(fleet) if w.cluster is None]
    for cluster in fleet.clusters.values():
        chain = chain_of(fleet, cluster)
        if not chain.policies or not examples:
            continue
        fallback = team_namespace(cluster)
        for example in examples:
            namespace = cluster.namespaces.get(example.namespace)
            namespace_body = namespace.obj.body if namespace else fallback
            seen: set[tuple[str, str]] = set()
            for request in cel.workload_requests(example.body, namespace_body):
                for denial in chain.denials(request):
                    if (denial.policy, denial.message) in seen:
                        continue
                    seen.add((denial.policy, denial.message))
                    what = example.ref() if request.kind == example.kind else f"a pod of {example.ref()}"
                    yield Finding(
                        rule=ID,
                        severity=SEVERITY,
                        cluster=cluster.name,
                        message=f"{what} is denied by admission policy {denial.policy}: {denial.message}",
                        hint="fix the example (or the policy, if the example is legitimate)",
                        **at(example.locate(fleet, "metadata", "name")),
                    )
