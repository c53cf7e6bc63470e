"""Effective pod requests (the scheduler's rule) and quantities, table-driven."""

from __future__ import annotations

from typing import Any

import pytest

from exporter.kube.requests import effective_requests, parse_count
from exporter.kube.transform import gpu_matcher, is_gpu_resource
from tests.kube.objects import container

G = "nvidia.com/gpu"


def sidecar(name: str, gpus: int) -> dict[str, Any]:
    return container(name, gpus, restartPolicy="Always")


@pytest.mark.parametrize(
    ("containers", "inits", "overhead", "expected"),
    [
        pytest.param([container("a", 2)], [], None, {G: 2}, id="one container"),
        pytest.param([container("a", 2), container("b", 1)], [], None, {G: 3}, id="app containers add up"),
        pytest.param([container("a", 1)], [container("i", 4)], None, {G: 4}, id="largest init dominates"),
        pytest.param([container("a", 3)], [container("i", 2)], None, {G: 3}, id="app dominates init"),
        pytest.param(
            [container("a", 1)], [container("i1", 2), container("i2", 3)], None, {G: 3}, id="inits count by max"
        ),
        pytest.param([container("a", 2)], [sidecar("s", 1)], None, {G: 3}, id="sidecar adds to app"),
        pytest.param(
            [container("a", 1)], [sidecar("s", 1), container("i", 4)], None, {G: 5}, id="init after sidecar adds it"
        ),
        pytest.param(
            [container("a", 1)], [container("i", 4), sidecar("s", 1)], None, {G: 4}, id="init before sidecar does not"
        ),
        pytest.param([container("a", 0)], [sidecar("s1", 1), sidecar("s2", 2)], None, {G: 3}, id="sidecar sums"),
        pytest.param([container("a", 1)], [], {G: "1", "cpu": "250m"}, {G: 2}, id="overhead adds"),
        pytest.param([container("a", 0)], [], None, {}, id="no GPU"),
        pytest.param(
            [container("a", 1), container("b", 2, "nvidia.com/mig-1g.10gb")],
            [],
            None,
            {G: 1, "nvidia.com/mig-1g.10gb": 2},
            id="per resource",
        ),
    ],
)
def test_effective_requests(containers: Any, inits: Any, overhead: Any, expected: Any) -> None:
    assert effective_requests(containers, inits, overhead, is_gpu=is_gpu_resource) == expected


def test_requests_win_over_limits_and_other_resources_are_ignored() -> None:
    c = {"name": "a", "resources": {"limits": {G: "2", "cpu": "4"}, "requests": {G: "1", "memory": "1Gi"}}}
    assert effective_requests([c], is_gpu=is_gpu_resource) == {G: 1}


@pytest.mark.parametrize(
    ("value", "expected"), [("8", 8), (8, 8), ("16", 16), ("100", 100), ("1k", 1000), ("2Ki", 2048), ("0", 0)]
)
def test_parse_count(value: Any, expected: Any) -> None:
    assert parse_count(value) == expected


@pytest.mark.parametrize("value", ["lots", "1.5", "500m", "", True])
def test_parse_count_rejects_non_whole_numbers(value: Any) -> None:
    with pytest.raises(ValueError, match="not a"):
        parse_count(value)


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("nvidia.com/gpu", True),
        ("nvidia.com/gpu.shared", True),
        ("nvidia.com/mig-1g.10gb", True),
        ("nvidia.com/mig-7g.80gb", True),
        ("amd.com/gpu", True),
        ("nvidia.com/gpu.product", False),
        ("cpu", False),
        ("example.com/fpga", False),
    ],
)
def test_gpu_resources(name: Any, expected: Any) -> None:
    assert is_gpu_resource(name) is expected


def test_gpu_matcher_takes_patterns() -> None:
    assert gpu_matcher(["example.com/*"])("example.com/fpga")
    assert not gpu_matcher(["example.com/*"])("nvidia.com/gpu")
