"""Audit: each engine workload against the write-ups' checklist (a registry of pure checks, `checks/`)."""
