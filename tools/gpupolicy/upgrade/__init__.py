"""Driver and operator upgrade plans, their promotion gates, approvals and the Prometheus client."""
