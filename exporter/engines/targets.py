"""Engine targets: where to scrape, and the identity labels of what is scraped there."""

from __future__ import annotations

from dataclasses import dataclass
from urllib.parse import urlsplit, urlunsplit

from exporter.config import Target


@dataclass(frozen=True, slots=True)
class EngineTarget:
    metrics_url: str
    version_url: str
    namespace: str
    pod: str
    engine: str

    @property
    def base_url(self) -> str:
        """The engine's root (the version URL without `/version`): its other endpoints hang off it."""
        return self.version_url[: -len("/version")]

    @property
    def identity(self) -> dict[str, str]:
        return {"namespace": self.namespace, "pod": self.pod, "engine": self.engine}


def from_url(url: str, namespace: str, pod: str, engine: str) -> EngineTarget:
    """A target from a base URL (`http://host:8000`) or a metrics URL (`http://host:8000/metrics`)."""
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if not path:
        path = "/metrics"
    base = path[: -len("/metrics")] if path.endswith("/metrics") else ""
    metrics_url = urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
    version_url = urlunsplit((parts.scheme, parts.netloc, base + "/version", "", ""))
    return EngineTarget(metrics_url, version_url, namespace, pod or parts.netloc, engine)


def from_static(target: Target) -> EngineTarget:
    return from_url(target.url, target.labels.get("namespace", ""), target.labels.get("pod", ""), target.engine)
