"""Generated GPU clusters for the real scheduler, and the test's own reading of the scheduler's result.

A `Scenario` is nodes (GPU and MIG capacities, labels, taints, cordons, NotReady) and pods (GPU limits in
app and init containers, RuntimeClass overhead, nodeSelector, required node affinity, tolerations), each
pod asking for one GPU resource. `manifests` turns them into API objects; the oracle (`passes`,
`expected_reason`) is written from the scheduler's filter plugins (NodeUnschedulable, TaintToleration,
NodeAffinity), independently of exporter/kube, and it reads the objects as the API server stored them
(the controllers' taints, the admission plugins' default tolerations).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from decimal import Decimal
from typing import Any

from hypothesis import strategies as st

GPU = "nvidia.com/gpu"
MIG = "nvidia.com/mig-1g.10gb"
OVERHEAD_CLASS = "gpu-overhead"  # RuntimeClass whose overhead is one nvidia.com/gpu
OVERHEAD = {GPU: 1}
UNSCHEDULABLE_TAINT = "node.kubernetes.io/unschedulable"
# every node and pod of one example carries it: other tests' nodes in the shared cluster are never eligible
RUN_LABEL = "test.llm-exporter/run"

Obj = dict[str, Any]


@dataclass(frozen=True)
class NodeSpec:
    gpus: int
    migs: int
    labels: tuple[tuple[str, str], ...]
    taints: tuple[tuple[str, str, str], ...]
    cordoned: bool
    ready: bool


@dataclass(frozen=True)
class PodSpec:
    resource: str
    app: tuple[int, ...]
    init: tuple[int, ...]
    overhead: bool
    selector: tuple[tuple[str, str], ...]
    affinity: tuple[tuple[tuple[str, str, tuple[str, ...]], ...], ...] | None  # terms of requirements
    tolerations: tuple[tuple[str, str, str, str], ...]  # key, operator, value, effect

    @property
    def effective(self) -> int:
        """The scheduler's pod request: max(sum of app, largest init) plus overhead."""
        base = max(sum(self.app), max(self.init, default=0))
        return base + (OVERHEAD.get(self.resource, 0) if self.overhead else 0)


TAINTS = (("gpu", "true", "NoSchedule"), ("dedicated", "infer", "NoExecute"), ("spot", "yes", "PreferNoSchedule"))
TOLERATIONS = (
    ("gpu", "Equal", "true", "NoSchedule"),
    ("dedicated", "Exists", "", ""),
    ("spot", "Equal", "no", ""),
    (UNSCHEDULABLE_TAINT, "Exists", "", "NoSchedule"),
    ("", "Exists", "", ""),  # tolerates every taint, as DaemonSet-like pods do
)
REQUIREMENTS = (
    ("zone", "In", ("a",)),
    ("zone", "NotIn", ("b",)),
    ("zone", "DoesNotExist", ()),
    ("gpu.memory", "Exists", ()),
    ("gpu.memory", "Gt", ("20",)),
    ("gpu.memory", "Lt", ("50",)),
)

# weighted towards plain, schedulable GPU nodes and unconstrained pods, so that fragmented and insufficient
# cases come up as often as constrained ones
nodes_st = st.builds(
    NodeSpec,
    gpus=st.sampled_from((0, 1, 1, 2, 2, 4, 8)),
    migs=st.sampled_from((0, 0, 2, 7)),
    labels=st.tuples(st.sampled_from(("", "a", "b")), st.sampled_from(("", "16", "40", "80"))).map(
        lambda z: tuple((k, v) for k, v in (("zone", z[0]), ("gpu.memory", z[1])) if v)
    ),
    taints=st.sampled_from(((), (), (), (TAINTS[0],), (TAINTS[1],), (TAINTS[2],), TAINTS[:2])),
    cordoned=st.sampled_from((False, False, False, False, True)),
    ready=st.sampled_from((True, True, True, True, False)),
)
pods_st = st.builds(
    PodSpec,
    resource=st.sampled_from((GPU, GPU, GPU, MIG)),
    app=st.tuples(st.integers(1, 4)) | st.tuples(st.integers(0, 3), st.integers(1, 3)),
    init=st.sampled_from(((), (), (), (0,), (3,), (6,))),
    overhead=st.sampled_from((False, False, True)),
    selector=st.sampled_from(((), (), (), (("zone", "a"),), (("zone", "b"),))),
    affinity=st.none()
    | st.none()
    | st.lists(
        st.lists(st.sampled_from(REQUIREMENTS), min_size=1, max_size=2, unique=True).map(tuple),
        min_size=1,
        max_size=2,
    ).map(tuple),
    tolerations=st.sampled_from(((), (), ()))
    | st.lists(st.sampled_from(TOLERATIONS), unique=True, min_size=1, max_size=2).map(tuple),
).map(lambda p: replace(p, overhead=p.overhead and p.resource == GPU))  # the RuntimeClass adds nvidia.com/gpu


@dataclass(frozen=True)
class Scenario:
    nodes: tuple[NodeSpec, ...]
    pods: tuple[PodSpec, ...]


scenarios = st.builds(
    Scenario,
    nodes=st.lists(nodes_st, min_size=2, max_size=5).map(tuple),
    pods=st.lists(pods_st, min_size=1, max_size=6).map(tuple),
)


def node_manifest_args(spec: NodeSpec, run: str) -> dict[str, Any]:
    capacity = {name: str(n) for name, n in ((GPU, spec.gpus), (MIG, spec.migs)) if n}
    taints = [{"key": k, "value": v, "effect": e} for k, v, e in spec.taints]
    return {
        "capacity": capacity,
        "labels": {**dict(spec.labels), RUN_LABEL: run},
        "taints": taints,
        "unschedulable": spec.cordoned,
        "ready": spec.ready,
    }


def pod_manifest(spec: PodSpec, name: str, namespace: str, run: str) -> Obj:
    def container(prefix: str, i: int, count: int) -> Obj:
        limits = {spec.resource: str(count)} if count else {}
        return {"name": f"{prefix}{i}", "image": "gpu-workload", "resources": {"limits": limits}}

    body: Obj = {
        "containers": [container("app", i, n) for i, n in enumerate(spec.app)],
        "initContainers": [container("init", i, n) for i, n in enumerate(spec.init)],
        "nodeSelector": {**dict(spec.selector), RUN_LABEL: run},
        "tolerations": [
            {k: v for k, v in zip(("key", "operator", "value", "effect"), t, strict=True) if v}
            for t in spec.tolerations
        ],
    }
    if spec.overhead:
        body["runtimeClassName"] = OVERHEAD_CLASS
    if spec.affinity is not None:
        terms = [
            {"matchExpressions": [{"key": k, "operator": o, **({"values": list(v)} if v else {})} for k, o, v in term]}
            for term in spec.affinity
        ]
        body["affinity"] = {
            "nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": terms}}
        }
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": namespace}, "spec": body}


# -- the oracle: the scheduler's filters over the stored objects --------------------------------------------


def _tolerated(tolerations: list[Obj], key: str, value: str, effect: str) -> bool:
    for t in tolerations:
        if t.get("effect") and t["effect"] != effect:
            continue
        if t.get("key") and t["key"] != key:
            continue
        if t.get("operator", "Equal") == "Exists" or t.get("value", "") == value:
            return True
    return False


def _requirement(expression: Obj, labels: dict[str, str]) -> bool:
    key, op, values = expression["key"], expression["operator"], expression.get("values") or []
    present = key in labels
    if op == "In":
        return present and labels[key] in values
    if op == "NotIn":
        return not present or labels[key] not in values
    if op == "Exists":
        return present
    if op == "DoesNotExist":
        return not present
    if op in ("Gt", "Lt") and present and labels[key].isdigit():
        return int(labels[key]) > int(values[0]) if op == "Gt" else int(labels[key]) < int(values[0])
    return False


def passes(node: Obj, pod: Obj) -> bool:
    """NodeUnschedulable, TaintToleration and NodeAffinity (nodeSelector included) all let `pod` on `node`."""
    spec, labels = pod["spec"], node["metadata"].get("labels") or {}
    tolerations = spec.get("tolerations") or []
    if node["spec"].get("unschedulable") and not _tolerated(tolerations, UNSCHEDULABLE_TAINT, "", "NoSchedule"):
        return False
    for taint in node["spec"].get("taints") or []:
        if taint["effect"] in ("NoSchedule", "NoExecute") and not _tolerated(
            tolerations, taint["key"], taint.get("value", ""), taint["effect"]
        ):
            return False
    if any(labels.get(k) != v for k, v in (spec.get("nodeSelector") or {}).items()):
        return False
    required = (
        (spec.get("affinity") or {}).get("nodeAffinity", {}).get("requiredDuringSchedulingIgnoredDuringExecution")
    )
    if required is None:
        return True
    return any(
        term.get("matchExpressions") and all(_requirement(e, labels) for e in term["matchExpressions"])
        for term in required["nodeSelectorTerms"]
    )


def classify(requested: int, free: list[int]) -> str:
    """DESIGN.md's reasons, given the free counts of the eligible nodes. These pods ask for nothing else
    (no cpu, ports or volumes) and have no pod affinity or spread: one with room waits on a retry only."""
    if not free:
        return "constrained"
    if max(free) >= requested:
        return "backoff"
    return "fragmented" if sum(free) >= requested else "insufficient"


def insufficient_count(pod: Obj, resource: str) -> int | None:
    """How many nodes the scheduler's last verdict failed only for lack of `resource` (None: no verdict)."""
    for condition in pod["status"].get("conditions") or []:
        if condition["type"] == "PodScheduled" and condition.get("reason") == "Unschedulable":
            verdict = condition.get("message", "").split("preemption:")[0]
            found = re.search(rf"(\d+) Insufficient {re.escape(resource)}\b", verdict)
            return int(found.group(1)) if found else 0
    return None


_SUFFIXES = {
    **{s: Decimal(10) ** e for s, e in (("n", -9), ("u", -6), ("m", -3), ("k", 3), ("M", 6), ("G", 9), ("T", 12))},
    **{s: Decimal(2) ** e for s, e in (("Ki", 10), ("Mi", 20), ("Gi", 30), ("Ti", 40), ("Pi", 50))},
}


def quantity(text: str) -> Decimal:
    """A resource quantity as the API server stores it ("500m", "4", "16Gi", "1Ti", "1e3")."""
    for suffix in sorted(_SUFFIXES, key=len, reverse=True):
        if text.endswith(suffix):
            return Decimal(text.removesuffix(suffix)) * _SUFFIXES[suffix]
    return Decimal(text)


def requested(pod: Obj, resource: str) -> Decimal:
    """The pod's request of `resource`: its app containers' requests, else limits (no init containers)."""
    total = Decimal(0)
    for container in pod["spec"]["containers"]:
        resources = container.get("resources") or {}
        value = (resources.get("requests") or {}).get(resource) or (resources.get("limits") or {}).get(resource)
        total += quantity(str(value)) if value else 0
    return total


# -- the scheduler's own verdict, and what else blocks once GPUs are out of the question ------------------

# every GPU node of a scenario offers plenty of this resource, and the pod "without GPUs" asks for one of it
# instead: so it is refused by NodeResourcesFit where no GPUs are, as the GPU pod is, and its verdict on the
# GPU nodes says what else blocks there (a node affinity to those nodes would change the spread domains)
GPU_NODE_MARKER = "test.llm-exporter/gpu-node"
GPU_NODE_CAPACITY = {GPU_NODE_MARKER: "1000"}

# the per-node messages of kube-scheduler's filter plugins (1.37) → the filter they come from
SCHEDULER_FILTERS = (
    (re.compile(r"^Insufficient (?!nvidia\.com/|amd\.com/)\S+$|^Too many pods$"), "other_resources"),
    (re.compile(r"didn't match pod topology spread constraints"), "topology_spread"),
    (
        re.compile(r"didn't (?:match pod (?:anti-)?affinity rules|satisfy existing pods anti-affinity rules)"),
        "pod_affinity",
    ),
)


def verdict_counts(message: str) -> dict[str, int]:
    """'0/3 nodes are available: 2 Insufficient cpu, 1 node(s) had untolerated taint(s). preemption: ...'
    → {"Insufficient cpu": 2, "node(s) had untolerated taint(s)": 1} (the scheduler's verdict, not preemption's)."""
    verdict = message.split(" preemption:", maxsplit=1)[0].rstrip(".")
    _, _, parts = verdict.partition(": ")
    out: dict[str, int] = {}
    for part in parts.split(", "):
        count, _, text = part.strip().partition(" ")
        if count.isdigit():
            out[text.rstrip(".")] = out.get(text.rstrip("."), 0) + int(count)
    return out


def failed_scheduling(cluster: Any, namespace: str, pod: str) -> dict[str, int] | None:
    """The newest FailedScheduling event of `pod` as counts per message; None while there is none."""
    selector = f"involvedObject.name={pod},reason=FailedScheduling"
    events = cluster.must("GET", f"/api/v1/namespaces/{namespace}/events?fieldSelector={selector}")["items"]
    if not events:
        return None
    newest = max(events, key=lambda e: (e.get("lastTimestamp") or e.get("eventTime") or "", e["metadata"]["name"]))
    return verdict_counts(newest.get("message") or newest.get("note") or "")


def without_gpus(pod: Obj, name: str) -> Obj:
    """The same pod asking for no GPU (device-plugin limits and DRA claims removed) but for one
    `GPU_NODE_MARKER`, which only the scenario's GPU nodes offer, under another name."""
    spec = {**pod["spec"], "containers": []}
    spec.pop("resourceClaims", None)
    for i, c in enumerate(pod["spec"]["containers"]):
        resources = {k: dict(v) for k, v in (c.get("resources") or {}).items() if k != "claims"}
        for section in resources.values():
            for resource in [r for r in section if r.startswith(("nvidia.com/", "amd.com/"))]:
                del section[resource]
        if i == 0:
            resources.setdefault("limits", {})[GPU_NODE_MARKER] = "1"
        spec["containers"].append({**c, "resources": resources})
    return {**pod, "metadata": {**pod["metadata"], "name": name}, "spec": spec}


def blocking_filters(counts: dict[str, int]) -> dict[str, int]:
    """The scheduler's per-node messages mapped to the pre-resource filters they come from."""
    out: dict[str, int] = {}
    for text, count in counts.items():
        if GPU_NODE_MARKER in text:
            continue  # a node without GPUs: not a candidate of the GPU pod anyway
        for pattern, name in SCHEDULER_FILTERS:
            if pattern.search(text):
                out[name] = out.get(name, 0) + count
    return out


def exported_samples(collector: Any) -> dict[str, list[tuple[dict[str, str], float]]]:
    """The collector's exposition as samples per metric name ({} while it is not ready)."""
    from prometheus_client.parser import text_string_to_metric_families

    from exporter.collect import CollectorUnavailable
    from exporter.exposition import render

    try:
        text = render(collector.collect())
    except CollectorUnavailable:
        return {}
    out: dict[str, list[tuple[dict[str, str], float]]] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            out.setdefault(sample.name, []).append((sample.labels, sample.value))
    return out
