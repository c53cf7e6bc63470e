"""The name of the node this exporter runs on."""

from __future__ import annotations

import os
import socket


def node_name() -> str:
    """$NODE_NAME (the DaemonSet sets it from spec.nodeName); outside Kubernetes the host name, which is also
    the kubelet's default node name."""
    return os.environ.get("NODE_NAME", "").strip() or socket.gethostname()
