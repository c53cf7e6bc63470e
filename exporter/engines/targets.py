"""Engine targets: where to scrape, the credentials to scrape with, and the identity labels of what is scraped.

A URL's userinfo (`http://user:pass@host:8000`) becomes the target's basic-auth credentials and is gone from
every URL kept here: the metrics and version URLs (the collector's keys, and what its log lines name) and the
default `pod` label (`host:port`) never carry it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from urllib.parse import urlsplit, urlunsplit

from exporter import userinfo
from exporter.config import Target


@dataclass(frozen=True, slots=True)
class BasicCredentials:
    """Basic auth to an engine: a password from the URL's userinfo, or a file read at every scrape (a rotated
    Secret needs no restart)."""

    username: str
    password: str = field(default="", repr=False)
    password_file: str = ""  # the config key `basic_auth.password_file`: read when set, `password` unused


@dataclass(frozen=True, slots=True)
class EngineTarget:
    metrics_url: str
    version_url: str
    namespace: str
    pod: str
    engine: str
    auth: BasicCredentials | None = field(default=None, repr=False)

    @property
    def base_url(self) -> str:
        """The engine's root (the version URL without `/version`): its other endpoints hang off it."""
        return self.version_url[: -len("/version")]

    @property
    def identity(self) -> dict[str, str]:
        return {"namespace": self.namespace, "pod": self.pod, "engine": self.engine}


def from_url(url: str, namespace: str, pod: str, engine: str, auth: BasicCredentials | None = None) -> EngineTarget:
    """A target from a base URL (`http://host:8000`) or a metrics URL (`http://host:8000/metrics`); credentials
    in its userinfo are used when `auth` is None."""
    url, credentials = userinfo.split(url)
    if auth is None and credentials is not None:
        auth = BasicCredentials(*credentials)
    parts = urlsplit(url)
    path = parts.path.rstrip("/")
    if not path:
        path = "/metrics"
    base = path[: -len("/metrics")] if path.endswith("/metrics") else ""
    metrics_url = urlunsplit((parts.scheme, parts.netloc, path, parts.query, ""))
    version_url = urlunsplit((parts.scheme, parts.netloc, base + "/version", "", ""))
    return EngineTarget(metrics_url, version_url, namespace, pod or parts.netloc, engine, auth)


def from_static(target: Target) -> EngineTarget:
    basic = target.basic_auth
    auth = BasicCredentials(basic.username, password_file=basic.password_file) if basic.username else None
    labels = target.labels
    return from_url(target.url, labels.get("namespace", ""), labels.get("pod", ""), target.engine, auth)
