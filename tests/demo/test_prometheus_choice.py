"""The demo's Prometheus: one already on PATH (2.40+) wins over a build; its version is read from the binary."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exporter.demo import prometheus
from tests.bundle.servers import PROMETHEUS


def test_the_version_is_read_from_the_binary() -> None:
    found = prometheus.version(PROMETHEUS)
    assert found is not None and found >= (3, 0)
    assert prometheus.version("/nonexistent/prometheus") is None


def test_a_prometheus_on_path_is_used(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "prometheus").symlink_to(PROMETHEUS)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    said: list[str] = []
    assert prometheus.binary(said.append) == str(tmp_path / "prometheus")
    assert said and said[0].startswith(f"using {tmp_path / 'prometheus'} (Prometheus 3.")


def test_a_binary_that_is_not_prometheus_is_passed_over(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "prometheus").symlink_to("/bin/true")
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    monkeypatch.setenv("LLM_EXPORTER_CACHE", str(Path(PROMETHEUS).parents[1]))
    assert prometheus.binary(lambda _: None) == PROMETHEUS  # the cached build, not /bin/true
