"""The reason DESIGN gives each pending GPU pod of a fleet, read off the API's objects independently of
exporter/kube (tests/fleet.py's pods use no pod affinity or topology spread, ports or volumes).

Eligible nodes: schedulable for the pod (cordon, taints, nodeSelector and node affinity: `passes`) and
offering the GPU resource. On each, with F its free GPUs: a *candidate* where the pod's cpu, memory and a
pod slot fit beside every pod bound there; *movable* where they would fit once the GPU pods there moved
(beside the pods without GPUs only). Then: `constrained` (no eligible node), `backoff` (a candidate with
F ≥ request), `fragmented` (Σ F over the movable nodes ≥ request), `other_resources` (Σ F over every
eligible node ≥ request: the pods without GPUs hold the rest), else `insufficient`.
"""

from __future__ import annotations

from collections import Counter
from decimal import Decimal
from typing import Any

from tests.kube_real.gpu_cluster import passes, quantity, requested

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
OTHER = ("cpu", "memory")


def _fits(allocatable: Obj, held: Counter[str], wants: dict[str, Decimal]) -> bool:
    if held["pods"] + 1 > quantity(str(allocatable.get("pods", "0"))):
        return False
    return all(wants[r] <= quantity(str(allocatable.get(r, "0"))) - held[r] for r in OTHER)


def pending_reasons(nodes: list[Obj], pods: list[Obj]) -> dict[tuple[str, str], str]:
    """(namespace, pod) → reason, for every unbound pod of `pods` (unfinished) that asks for GPUs."""
    held: dict[str, Counter[str]] = {}
    held_without_gpus: dict[str, Counter[str]] = {}
    gpus: Counter[str] = Counter()
    waiting = []
    for pod in pods:
        bound = pod["spec"].get("nodeName")
        if not bound:
            if requested(pod, GPU):
                waiting.append(pod)
            continue
        wants = {r: requested(pod, r) for r in OTHER}
        gpus[bound] += int(requested(pod, GPU))
        kept = [held.setdefault(bound, Counter())]
        if not requested(pod, GPU):
            kept.append(held_without_gpus.setdefault(bound, Counter()))
        for counter in kept:
            counter["pods"] += 1
            counter.update(wants)
    out = {}
    for pod in waiting:
        wants = {r: requested(pod, r) for r in OTHER}
        standings = []  # (free GPUs, candidate, movable)
        for node in nodes:
            name, allocatable = node["metadata"]["name"], node["status"]["allocatable"]
            if not int(allocatable.get(GPU, 0)) or not passes(node, pod):
                continue
            free = int(allocatable[GPU]) - gpus[name]
            now = _fits(allocatable, held.get(name, Counter()), wants)
            moved = _fits(allocatable, held_without_gpus.get(name, Counter()), wants)
            standings.append((free, now, moved))
        out[(pod["metadata"]["namespace"], pod["metadata"]["name"])] = _reason(int(requested(pod, GPU)), standings)
    return out


def _reason(request: int, standings: list[tuple[int, bool, bool]]) -> str:
    if not standings:
        return "constrained"
    if any(now and free >= request for free, now, _ in standings):
        return "backoff"
    if sum(free for free, _, moved in standings if moved) >= request:
        return "fragmented"
    if sum(free for free, _, _ in standings) >= request:
        return "other_resources"
    return "insufficient"
