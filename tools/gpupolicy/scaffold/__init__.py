"""`gpupolicy new pool|team|cluster`: every edit a new pool, team or cluster needs, all or nothing (decision
0076).

Each scaffold works on a temporary copy of the repository first: it writes the new files, edits the existing
ones round-trip (comments and quoting kept, `upgrade promote`'s Editor), reloads the copy where a later edit
needs the model (the new flavor's ClusterQueue entries, the namespace quotas), then validates the copy with
every rule. Only when the copy has no error the repository did not already have are the same files written
into the repository, through the transactional writer with its journal (decision 0066). Otherwise nothing is
written and the new errors are listed (exit 1).
"""
