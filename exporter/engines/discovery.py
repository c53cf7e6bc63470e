"""Kubernetes discovery of engine pods on this node (node role).

Only pods on the own node are watched (`fieldSelector=spec.nodeName=$NODE_NAME`), only pods that opt in
with `<prefix>/scrape: "true"` become targets, and only their own pod IP is ever fetched.

    metadata:
      annotations:
        llm-exporter.io/scrape: "true"
        llm-exporter.io/port: "8000"        # default: engines.kubernetes_discovery.default_port
        llm-exporter.io/path: "/metrics"    # default: default_path
        llm-exporter.io/engine: "sglang"    # optional: default auto (found from the metrics body)
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from typing import Any

from exporter.config import KubernetesDiscovery
from exporter.engines import registry
from exporter.engines.targets import EngineTarget, from_url
from exporter.pod_fields import condition_since, workload_of

ENGINES = (registry.AUTO, *registry.NAMES)


@dataclass(frozen=True, slots=True)
class PodRecord:
    """The few fields of a pod that discovery needs."""

    namespace: str
    name: str
    ip: str
    phase: str
    annotations: tuple[tuple[str, str], ...]  # only those under the opt-in prefix
    workload: str = ""  # its controller (replica start-ups are counted per workload)
    ready: float | None = None  # when its Ready condition last turned True; None while not Ready


def pod_record(obj: dict[str, Any], prefix: str) -> PodRecord | None:
    """Reflector transform: keep an opted-in pod's identity, IP, phase, our annotations, workload and Ready
    time; drop the rest."""
    meta = obj.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    ours = tuple(sorted((k, str(v)) for k, v in annotations.items() if k.startswith(prefix + "/")))
    if (prefix + "/scrape", "true") not in ours:
        return None
    status = obj.get("status") or {}
    return PodRecord(
        meta.get("namespace", ""),
        meta.get("name", ""),
        status.get("podIP") or "",
        status.get("phase", ""),
        ours,
        workload_of(meta),
        condition_since(status, "Ready"),
    )


def target_for(pod: PodRecord, config: KubernetesDiscovery) -> EngineTarget | None:
    """The engine target of a running opted-in pod, or None (not running, no IP, bad annotations)."""
    if pod.phase != "Running" or not pod.ip:
        return None
    annotations = dict(pod.annotations)
    prefix = config.annotation_prefix
    engine = annotations.get(f"{prefix}/engine", registry.AUTO)
    port = annotations.get(f"{prefix}/port", str(config.default_port))
    path = annotations.get(f"{prefix}/path", config.default_path)
    if engine not in ENGINES or not port.isdigit() or not 0 < int(port) < 65536 or not path.startswith("/"):
        return None
    try:
        address = ipaddress.ip_address(pod.ip)
    except ValueError:
        return None
    host = f"[{address}]" if address.version == 6 else str(address)
    return from_url(f"http://{host}:{port}{path}", pod.namespace, pod.name, engine)
