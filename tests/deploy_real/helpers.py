"""Small steps the real-API-server tests share."""

from __future__ import annotations

import json

from tests.kubecluster import Cluster


def ensure(api: Cluster, kind: str, name: str, namespace: str | None = None) -> None:
    """A Namespace or ServiceAccount that exists afterwards, whichever test made it first."""
    meta = {"name": name, **({"namespace": namespace} if namespace else {})}
    api.kubectl(
        "apply", "--server-side", "-f", "-", input_text=json.dumps({"apiVersion": "v1", "kind": kind, "metadata": meta})
    )
