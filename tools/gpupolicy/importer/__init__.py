"""`gpupolicy import`: a running cluster's inventory written as this repository's files (decision 0077).

- `inventory`: what the snapshot (the files `audit --snapshot` reads, plus the Kueue, PriorityClass, Namespace
  and ResourceQuota lists this command also reads) or the live cluster says: GPU nodes with their GPU Operator
  and GPU feature discovery labels, grouped into pools by identical hardware and configuration;
- `plan`: the nodes to bring under operator management or into line with their pool, in the order that keeps
  each pool's online capacity at or above its production nominal quota (UPG008's drain check) and, where it
  can, CAP005's reserve of one more node; the capacity after every step (rule IMP002 checks the plan file
  again against the repository);
- `write`: the cluster, pool, team and queue files (the pool and team files by `gpupolicy new`'s generators),
  with `# QUESTION(import): ...` where the cluster does not say, each listed in
  imports/<cluster>/questions.yaml that rule IMP001 reports.
"""
