"""Container images (pure): the digest an image reference pins, the digest a container status says ran, and
the tag.

An image reference is `[registry/]repository[:tag][@algorithm:hex]`; the kubelet writes the image a container
runs as its status' `imageID`, a reference by digest when the runtime knows one (containerd:
`docker.io/vllm/vllm-openai@sha256:…`, Docker: `docker-pullable://vllm/vllm-openai@sha256:…`). An `imageID`
without `@` (`sha256:…` alone) is the runtime's local image ID, not a digest a registry serves: not read.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from exporter.k8s.fields import as_dict, as_list

_DIGEST = re.compile(r"[a-z0-9]+(?:[+._-][a-z0-9]+)*:[0-9a-fA-F]{32,}")


def digest(reference: str) -> str:
    """The digest (`sha256:<hex>`) a reference by digest names; "" for a reference by tag alone."""
    _, at, pinned = reference.rpartition("@")
    return pinned if at and _DIGEST.fullmatch(pinned) else ""


def tag(reference: str) -> str:
    """The tag of a reference (`v0.10.1` of `vllm/vllm-openai:v0.10.1`); "" where it names none."""
    name = reference.partition("@")[0]
    last = name.rsplit("/", 1)[-1]
    return last.rpartition(":")[2] if ":" in last else ""


def status_digests(pod: Mapping[str, Any]) -> dict[str, str]:
    """Container name → the digest its status' `imageID` names (containers, init containers), "" where none."""
    status = as_dict(pod.get("status"))
    out: dict[str, str] = {}
    for key in ("initContainerStatuses", "containerStatuses"):
        for entry in as_list(status.get(key)):
            e = as_dict(entry)
            if e.get("name"):
                out[str(e["name"])] = digest(str(e.get("imageID") or ""))
    return out
