# ruff: noqa: N999 - grafanalib's loader convention: a `dashboard` variable in a *.dashboard.py file
"""The one shared link: the story of one request, from the user's wait down to the GPU and its placement.

Read top to bottom: the diagnosis (the verdicts of `llm-exporter diagnose`), users (are they waiting?), queue
(why?), engine (prefill or decode bound, cache pressure), GPU (memory, bandwidth), placement (can another
replica be scheduled?), telemetry health (can these panels be trusted?), then capacity and cost, and the
tenants behind the gateway. The rows are built in `overview_requests.py`, `overview_gpus.py`,
`overview_operations.py` and `overview_tenants.py`, its annotations in `overview_annotations.py`; this file
orders them. Regenerate with `python -m exporter.bundle`.
"""

from __future__ import annotations

from dashboards import overview_annotations
from dashboards.lib import dashboard as build_dashboard
from dashboards.overview_gpus import gpu, placement
from dashboards.overview_operations import capacity, deployment_checks, health
from dashboards.overview_requests import diagnosis, engine, queue, routing, users
from dashboards.overview_tenants import tenants

UID = "llm-inference-overview"

dashboard = build_dashboard(
    title="LLM inference: overview",
    uid=UID,
    description="Is anyone waiting on LLM inference, and why: users, queue, engine, GPU, placement, telemetry.",
    rows=[diagnosis, users, queue, routing, engine, gpu, placement, health, deployment_checks, capacity, tenants],
    tags=["llm-inference-exporter", "llm", "vllm", "gpu"],
    annotations=overview_annotations.queries(),
)
