"""GPU and Kubernetes facts and predicates that rules, workpath, simulate, recommend and docs share."""
