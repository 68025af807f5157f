"""`gpupolicy recommend`: search a cluster's queue policy with the simulator and propose the best as a change.

space.py    the knobs (borrowing and lending limits, cohort membership) and a candidate's simulated policy
targets.py  `serving:p95<15m,training:p50<2h` and whether a replay meets it
search.py   Optuna ask/tell in fixed batches, pruning on partial replays; executors.py runs the replays
neighbours.py  the hill climb beside TPE: every second trial one move from the best candidate so far
weeks.py    `--other-seeds`: whether the answer holds on other weeks of the mixed workload
edits.py    a candidate written into the repository's files (round-trip YAML) and checked by every rule
plot.py     the Pareto front (useful utilization vs worst wait) as a PNG
"""
