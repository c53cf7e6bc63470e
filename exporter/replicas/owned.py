"""The workload the replica series name (pure): the operator resource the user edits where an operator
generated the engine pods' workload (`exporter.k8s.owners`), else the generated workload itself.

An autoscaler names its scale target: the generated workload, or an object the operator makes for it to target
(RBG's RoleBasedGroupScalingAdapter of a role, known from the engine pods' labels: `scale_targets`); its series
name that target's owner, so `llm_autoscaler_*` and `llm_replica_*` of one resource join on `workload`.

The start-up tracker counts by generated workload (the audit reads its cold starts per Deployment,
StatefulSet or LeaderWorkerSet); the series add up the generated workloads of one owner (a KServe
predictor and its transformer, say) under the owner's name.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import replace

from exporter.k8s import owner_refs
from exporter.k8s.owners import Key, top_owner
from exporter.replicas.autoscalers import Autoscaler
from exporter.replicas.startup import Histogram, PodStart

Resolve = Callable[[str, str, str], str]  # (namespace, kind, name) -> the workload the series name


def resolver(owned: Iterable[tuple[Key, tuple[str, str]]]) -> Resolve:
    """From the operator owner of each generated workload read (`owners.owned_record`)."""
    table = dict(owned)
    return lambda namespace, kind, name: top_owner(namespace, kind, name, table)[1]


def scale_targets(records: Iterable[PodStart]) -> list[tuple[Key, tuple[str, str]]]:
    """The operator resource behind each object an autoscaler may target in its workload's stead, read from the
    engine pods' labels (`owner_refs.SCALED_THROUGH`: RBG's RoleBasedGroupScalingAdapter `<group>-<role>`)."""
    return [
        ((p.namespace, *target), owner) for p in records for target, owner in owner_refs.scaled_through(dict(p.labels))
    ]


def pods(records: Iterable[PodStart], resolve: Resolve) -> list[PodStart]:
    return [replace(p, workload=resolve(p.namespace, p.workload_kind, p.workload)) for p in records]


def autoscalers(records: Iterable[Autoscaler], resolve: Resolve) -> list[Autoscaler]:
    return [replace(a, workload=resolve(a.namespace, a.target_kind, a.workload)) for a in records]


def histograms(
    by_generated: Mapping[tuple[str, str, str], Histogram], kinds: Mapping[tuple[str, str], str], resolve: Resolve
) -> dict[tuple[str, str, str], Histogram]:
    """The start-up histograms by (namespace, workload, phase) of the series: those of the generated workloads
    of one owner added up; `kinds`: the kind of each generated workload ((namespace, name) -> kind)."""
    out: dict[tuple[str, str, str], Histogram] = {}
    for (namespace, name, phase), h in by_generated.items():
        key = (namespace, resolve(namespace, kinds.get((namespace, name), ""), name), phase)
        total = out.get(key)
        if total is None:
            out[key] = Histogram(list(h.buckets), h.sum, h.count)
        else:
            total.buckets = [a + b for a, b in zip(total.buckets, h.buckets, strict=True)]
            total.sum += h.sum
            total.count += h.count
    return out
