"""The node name every GPU series carries: $NODE_NAME as the DaemonSet sets it, else the host name."""

from __future__ import annotations

import socket

import pytest

from exporter.sources.host import node_name


def test_node_name_is_the_downward_api_value(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NODE_NAME", "gpu-node-7")
    assert node_name() == "gpu-node-7"


@pytest.mark.parametrize("value", [None, "", "  "])
def test_without_node_name_the_host_name_is_used(monkeypatch: pytest.MonkeyPatch, value: str | None) -> None:
    if value is None:
        monkeypatch.delenv("NODE_NAME", raising=False)
    else:
        monkeypatch.setenv("NODE_NAME", value)
    assert node_name() == socket.gethostname()
