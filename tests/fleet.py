"""A GPU fleet on the real control plane: kwok nodes in GPU pools and the workloads of a cluster that serves
LLMs, created in bulk; and the API's own account of it, to hold the cluster role's figures against.

    shape = Fleet.scaled(nodes=100, pods=3000)
    build(cluster, shape, httproutes=True, timeout)  # nodes, namespaces, workloads; every replica placed or
                                                     # refused by the scheduler, the fragmenting ones last
    truth = account(cluster)                         # nodes, allocatable/allocated GPUs, pending GPU pods
                                                     # and the reason DESIGN gives each of them

Nodes: three pools (H100, A100, L40S), 8 `nvidia.com/gpu` each, labelled with the GPU product as the GPU
operator's feature discovery labels them. Engine Deployments (the scrape annotation, one HPA each) ask for
1, 2 or 4 GPUs per replica in one pool, about 60 % of the GPUs in all, and 4 cpu and 32 GiB per GPU; two
Deployments of engine replicas cannot be placed (16 GPUs per replica, and a pool no node is in); the other
pods are cpu-only workloads of about 100 replicas. A fourth pool (H200, 7 % of the nodes, 48 cpu each) is
fragmented by design: one 6-GPU replica per node leaves 2 GPUs and under 24 cpu free on each, then 8-GPU
replicas asking 32 cpu come, two per node, and stay Pending: no node has the GPUs or the cpu, and moving
the 6-GPU replicas would free both (`fragmented`). Services select every Deployment (and a few selectors of
nothing), Ingresses and HTTPRoutes send traffic to engine Services. Ratios are those of 1,000 nodes and
30,000 pods: 60 engine Deployments (and the 4 of the unplaceable and fragmented pools), ~1,130 Services,
~240 Ingresses, 20 HTTPRoutes, ~200 unplaceable and 140 fragmented GPU pods.
"""

from __future__ import annotations

import http.client
import json
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

from tests.fleet_reasons import pending_reasons
from tests.kubeapi import KWOK_ANNOTATION, Cluster, _object_path, wait_for

Obj = dict[str, Any]
GPU = "nvidia.com/gpu"
PRODUCT = "nvidia.com/gpu.product"
POOL = "test.llm-exporter/pool"
POOLS = (("h100", "NVIDIA-H100-80GB-HBM3"), ("a100", "NVIDIA-A100-SXM4-80GB"), ("l40s", "NVIDIA-L40S"))
FRAGMENTED_POOL = ("h200", "NVIDIA-H200")  # one 6-GPU replica per node, then 8-GPU replicas that cannot fit
FRAGMENTED_SHARE = 0.07  # of the nodes
FRAGMENTING = "vllm-h200-tp8"  # the Deployment whose replicas are fragmented by design
GPUS_PER_NODE = 8
CPU_PER_GPU, MEMORY_PER_GPU_GI = 4, 32  # what an engine pod asks for besides each GPU
ENGINE_SHARE = 0.6  # of each pool's GPUs asked for by its engine Deployments
TEAMS = 20  # namespaces


@dataclass(frozen=True)
class Fleet:
    node_count: int
    pod_count: int
    engine_deployments: int
    unplaceable: int
    fragmented_nodes: int
    services: int
    ingresses: int
    httproutes: int

    @classmethod
    def scaled(cls, nodes: int, pods: int) -> Fleet:
        """The issue's fleet (1,000 nodes, 30,000 pods) at another size, in its proportions."""
        per_pod = pods / 30_000
        return cls(
            node_count=nodes,
            pod_count=pods,
            engine_deployments=max(3, round(60 * nodes / 1000) // 3 * 3),
            unplaceable=max(2, round(200 * nodes / 1000) // 2 * 2),
            fragmented_nodes=max(1, round(FRAGMENTED_SHARE * nodes)),
            services=max(10, round(1130 * per_pod)),
            ingresses=max(3, round(240 * per_pod)),
            httproutes=max(2, round(20 * per_pod)),
        )

    @property
    def fragmented(self) -> int:
        """The 8-GPU replicas that stay Pending with free GPUs, by design: two per node of their pool."""
        return 2 * self.fragmented_nodes

    # -- nodes ------------------------------------------------------------------------------------------
    def node_objects(self) -> list[Obj]:
        pooled = [node(f"gpu-{pool}-{i:05d}", pool, product) for i, (pool, product) in enumerate(self._pools())]
        pool, product = FRAGMENTED_POOL
        first = len(pooled)
        return pooled + [
            node(f"gpu-{pool}-{first + i:05d}", pool, product, cpu=48) for i in range(self.fragmented_nodes)
        ]

    def _pools(self) -> Iterator[tuple[str, str]]:
        for i in range(self.node_count - self.fragmented_nodes):
            yield POOLS[i % len(POOLS)]

    # -- namespaces and workloads -----------------------------------------------------------------------
    def namespaces(self) -> list[Obj]:
        return [{"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": team(t)}} for t in range(TEAMS)]

    def engines(self) -> list[tuple[str, str, str, int, int]]:
        """(namespace, name, pool, GPUs per replica, replicas) of each engine Deployment."""
        per_pool = self.engine_deployments // len(POOLS)
        pool_gpus = (self.node_count - self.fragmented_nodes) / len(POOLS) * GPUS_PER_NODE
        out = []
        for d in range(self.engine_deployments):
            pool = POOLS[d % len(POOLS)][0]
            gpus = (1, 2, 4)[d // len(POOLS) % 3]
            replicas = max(1, int(pool_gpus * ENGINE_SHARE / per_pool / gpus))
            out.append((team(d), f"vllm-{pool}-{d:03d}", pool, gpus, replicas))
        half = self.unplaceable // 2
        out.append((team(0), "vllm-tp16", "h100", 16, half))  # no node has 16 GPUs
        out.append((team(1), "vllm-b200", "b200", 8, self.unplaceable - half))  # no node is in that pool
        pool = FRAGMENTED_POOL[0]
        out.append((team(2), "vllm-h200-pp3", pool, 6, self.fragmented_nodes))  # one per node: 2 GPUs left on each
        out.append((team(3), FRAGMENTING, pool, 8, self.fragmented))  # created once those are placed
        return out

    def others(self) -> list[tuple[str, str, int]]:
        """(namespace, name, replicas) of the cpu-only Deployments that make up the rest of the pods."""
        rest = self.pod_count - sum(e[4] for e in self.engines())
        count = max(1, round(rest / 100))
        return [(team(d), f"app-{d:04d}", rest // count + (1 if d < rest % count else 0)) for d in range(count)]

    def workloads(self, httproutes: bool) -> list[Obj]:
        """Deployments, HPAs, Services, Ingresses and (with the CRD served) HTTPRoutes; not the fragmenting
        Deployment (`fragmenting`), which comes once these are placed."""
        objs: list[Obj] = []
        engine_services: list[tuple[str, str]] = []
        for namespace, name, pool, gpus, replicas in self.engines():
            if name == FRAGMENTING:
                continue
            objs.append(deployment(namespace, name, replicas, engine_pod(pool, gpus)))
            objs.append(hpa(namespace, name, replicas))
            objs.append(service(namespace, name, {"app": name}, 8000))
            engine_services.append((namespace, name))
        for namespace, name, replicas in self.others():
            objs.append(deployment(namespace, name, replicas, app_pod()))
            objs.append(service(namespace, name, {"app": name}, 8080))
        named = {(o["metadata"]["namespace"], o["metadata"]["name"]) for o in objs if o["kind"] == "Service"}
        for s in range(max(0, self.services - len(named))):  # selectors that select nothing, as clusters have
            objs.append(service(team(s), f"legacy-{s:04d}", {"app": f"retired-{s}"}, 80))
        for i in range(self.ingresses):
            namespace, name = engine_services[i % len(engine_services)]
            objs.append(ingress(namespace, f"{name}-{i:04d}", name))
        if httproutes:
            for i in range(self.httproutes):
                namespace, name = engine_services[i % len(engine_services)]
                objs.append(httproute(namespace, f"{name}-{i:03d}", name))
        return objs

    def fragmenting(self) -> list[Obj]:
        """The 8-GPU Deployment of the fragmented pool, its HPA and Service: created last, so that no node of
        the pool is empty when its replicas come."""
        objs: list[Obj] = []
        for namespace, name, pool, gpus, replicas in self.engines():
            if name == FRAGMENTING:
                objs.append(deployment(namespace, name, replicas, engine_pod(pool, gpus)))
                objs.append(hpa(namespace, name, replicas))
                objs.append(service(namespace, name, {"app": name}, 8000))
        return objs


def team(i: int) -> str:
    return f"team-{i % TEAMS:02d}"


def node(name: str, pool: str, product: str, cpu: int = 96) -> Obj:
    resources = {"cpu": str(cpu), "memory": "1024Gi", "pods": "110", GPU: str(GPUS_PER_NODE)}
    labels = {"kubernetes.io/hostname": name, "kubernetes.io/os": "linux", "type": "kwok", POOL: pool, PRODUCT: product}
    return {
        "apiVersion": "v1",
        "kind": "Node",
        "metadata": {"name": name, "annotations": {KWOK_ANNOTATION: "fake"}, "labels": labels},
        "spec": {},
        "status": {"capacity": resources, "allocatable": resources},
    }


def engine_pod(pool: str, gpus: int) -> Obj:
    container = {
        "name": "vllm",
        "image": "vllm/vllm-openai:v0.11.0",
        "args": ["--model", "/models/llama", "--tensor-parallel-size", str(gpus)],
        "ports": [{"containerPort": 8000, "name": "http"}],
        "resources": {
            "limits": {GPU: str(gpus)},
            "requests": {"cpu": str(CPU_PER_GPU * gpus), "memory": f"{MEMORY_PER_GPU_GI * gpus}Gi", GPU: str(gpus)},
        },
    }
    return {
        "annotations": {"llm-exporter.io/scrape": "true", "llm-exporter.io/port": "8000"},
        "spec": {"nodeSelector": {POOL: pool}, "containers": [container]},
    }


def app_pod() -> Obj:
    container = {"name": "app", "image": "app:1", "resources": {"requests": {"cpu": "50m", "memory": "64Mi"}}}
    return {"annotations": {}, "spec": {"containers": [container]}}


def deployment(namespace: str, name: str, replicas: int, pod: Obj) -> Obj:
    template = {"metadata": {"labels": {"app": name}, "annotations": pod["annotations"]}, "spec": pod["spec"]}
    return {
        "apiVersion": "apps/v1",
        "kind": "Deployment",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"replicas": replicas, "selector": {"matchLabels": {"app": name}}, "template": template},
    }


def hpa(namespace: str, name: str, replicas: int) -> Obj:
    """Bounds at the Deployment's replicas: without a metrics server nothing would move it anyway."""
    metric = {
        "type": "Resource",
        "resource": {"name": "cpu", "target": {"type": "Utilization", "averageUtilization": 80}},
    }
    return {
        "apiVersion": "autoscaling/v2",
        "kind": "HorizontalPodAutoscaler",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {
            "scaleTargetRef": {"apiVersion": "apps/v1", "kind": "Deployment", "name": name},
            "minReplicas": replicas,
            "maxReplicas": replicas,
            "metrics": [metric],
        },
    }


def service(namespace: str, name: str, selector: dict[str, str], port: int) -> Obj:
    return {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"selector": selector, "ports": [{"port": port, "targetPort": port}]},
    }


def ingress(namespace: str, name: str, backend: str) -> Obj:
    path = {"path": "/v1", "pathType": "Prefix", "backend": {"service": {"name": backend, "port": {"number": 8000}}}}
    return {
        "apiVersion": "networking.k8s.io/v1",
        "kind": "Ingress",
        "metadata": {
            "name": name,
            "namespace": namespace,
            "annotations": {"nginx.ingress.kubernetes.io/proxy-read-timeout": "300"},
        },
        "spec": {"ingressClassName": "nginx", "rules": [{"host": f"{name}.example.com", "http": {"paths": [path]}}]},
    }


def httproute(namespace: str, name: str, backend: str) -> Obj:
    rule = {"backendRefs": [{"name": backend, "port": 8000}], "timeouts": {"request": "300s"}}
    return {
        "apiVersion": "gateway.networking.k8s.io/v1",
        "kind": "HTTPRoute",
        "metadata": {"name": name, "namespace": namespace},
        "spec": {"parentRefs": [{"name": "inference-gateway"}], "rules": [rule]},
    }


# -- bulk access ----------------------------------------------------------------------------------------


class Connections(threading.local):
    """One kept-alive TLS connection per thread, authenticated as the admin."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster
        self.conn: http.client.HTTPSConnection | None = None

    def request(
        self, method: str, path: str, body: Any = None, content_type: str = "application/json"
    ) -> tuple[int, Any]:
        data = None if body is None else json.dumps(body).encode()
        for attempt in range(3):
            if self.conn is None:
                context = self.cluster._context()
                host, port = self.cluster.url.removeprefix("https://").split(":")
                self.conn = http.client.HTTPSConnection(host, int(port), context=context, timeout=120)
            try:
                self.conn.request(method, path, body=data, headers={"Content-Type": content_type})
                resp = self.conn.getresponse()
                raw = resp.read()
                return resp.status, json.loads(raw) if raw else None
            except (OSError, http.client.HTTPException):
                self.conn.close()
                self.conn = None
                if attempt == 2:
                    raise
        raise AssertionError("unreachable")


def create(cluster: Cluster, objs: Sequence[Obj], workers: int = 8) -> None:
    """POST every object, `workers` at a time; a 409 (already there) is fine, any other refusal fails."""
    connections = Connections(cluster)

    def post(obj: Obj) -> None:
        path = _object_path(obj["apiVersion"], obj["kind"], obj["metadata"].get("namespace"))
        for _ in range(30):
            status, answer = connections.request("POST", path, obj)
            if status in (200, 201, 409):
                return
            if status not in (429, 500, 503) and "serviceaccount" not in json.dumps(answer).lower():
                break
            time.sleep(0.5)  # throttled, or the namespace's default ServiceAccount is not there yet
        raise AssertionError(f"POST {path} {obj['metadata']['name']}: {status} {answer}")

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(post, objs))


def patch_all(cluster: Cluster, paths: Iterable[str], patch: Obj, workers: int = 8) -> None:
    """A JSON merge patch of each object at `paths`."""
    connections = Connections(cluster)

    def one(path: str) -> None:
        status, answer = connections.request("PATCH", path, patch, "application/merge-patch+json")
        assert status == 200, f"PATCH {path}: {status} {answer}"

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, paths))


def delete_all(cluster: Cluster, paths: Iterable[str], workers: int = 8) -> None:
    connections = Connections(cluster)

    def one(path: str) -> None:
        status, answer = connections.request("DELETE", path)
        assert status in (200, 202, 404), f"DELETE {path}: {status} {answer}"

    with ThreadPoolExecutor(workers) as pool:
        list(pool.map(one, paths))


def list_all(cluster: Cluster, path: str, page: int = 1000) -> list[Obj]:
    """Every item of a paginated list, as the admin."""
    items: list[Obj] = []
    token = ""
    while True:
        sep = "&" if "?" in path else "?"
        status, body = cluster.request("GET", f"{path}{sep}limit={page}" + (f"&continue={token}" if token else ""))
        assert status == 200, f"GET {path}: {status} {body}"
        items += body["items"]
        token = body["metadata"].get("continue") or ""
        if not token:
            return items


# -- the API's account ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Account:
    nodes: frozenset[str]
    allocatable: dict[str, int]  # node -> nvidia.com/gpu allocatable
    allocated: dict[str, int]  # node -> GPUs requested by its unfinished bound pods
    pending: frozenset[tuple[str, str]]  # unbound, unfinished pods that ask for GPUs
    pods: int  # unfinished pods
    reasons: dict[tuple[str, str], str]  # the pending GPU pods' reasons by DESIGN (tests/fleet_reasons.py)

    @property
    def free(self) -> dict[str, int]:
        return {n: self.allocatable[n] - self.allocated.get(n, 0) for n in self.allocatable}


def pod_gpus(pod: Obj) -> int:
    """The scheduler's request: max(sum of app containers, largest init container) (no overhead here)."""
    spec = pod["spec"]

    def of(c: Obj) -> int:
        resources = c.get("resources") or {}
        return int((resources.get("requests") or {}).get(GPU) or (resources.get("limits") or {}).get(GPU) or 0)

    app = sum(of(c) for c in spec.get("containers") or ())
    return max(app, max((of(c) for c in spec.get("initContainers") or ()), default=0))


def account(cluster: Cluster) -> Account:
    nodes = list_all(cluster, "/api/v1/nodes")
    pods = [p for p in list_all(cluster, "/api/v1/pods") if p["status"].get("phase") not in ("Succeeded", "Failed")]
    allocated: dict[str, int] = {}
    pending = set()
    for p in pods:
        gpus, bound = pod_gpus(p), p["spec"].get("nodeName")
        if bound:
            allocated[bound] = allocated.get(bound, 0) + gpus
        elif gpus:
            pending.add((p["metadata"]["namespace"], p["metadata"]["name"]))
    allocatable = {n["metadata"]["name"]: int(n["status"]["allocatable"].get(GPU, 0)) for n in nodes}
    return Account(
        nodes=frozenset(n["metadata"]["name"] for n in nodes),
        allocatable={n: v for n, v in allocatable.items() if v},
        allocated=allocated,
        pending=frozenset(pending),
        pods=len(pods),
        reasons=pending_reasons(nodes, pods),
    )


def settled(cluster: Cluster, expected_pods: int) -> bool:
    """Every replica exists, and each is bound or the scheduler has said why not (Unschedulable)."""
    pods = [p for p in list_all(cluster, "/api/v1/pods") if not p["metadata"].get("deletionTimestamp")]
    if len(pods) < expected_pods:
        return False
    for p in pods:
        if p["spec"].get("nodeName"):
            continue
        conditions = {c["type"]: c.get("reason") for c in p["status"].get("conditions") or ()}
        if conditions.get("PodScheduled") != "Unschedulable":
            return False
    return True


def wait_settled(cluster: Cluster, shape: Fleet, timeout: float, pods: int | None = None) -> None:
    """Until `pods` (default: all the shape's) exist and are placed or refused."""
    expected = shape.pod_count if pods is None else pods
    wait_for(lambda: settled(cluster, expected), timeout, f"{expected} pods placed", interval=2)


def build(cluster: Cluster, shape: Fleet, httproutes: bool, timeout: float) -> None:
    """Nodes and namespaces; once the nodes are Ready, the workloads, placed or refused; then the
    fragmenting Deployment (its pool has no empty node by then), placed or refused."""
    nodes = shape.node_objects()
    create(cluster, nodes)
    create(cluster, shape.namespaces())
    names = [n["metadata"]["name"] for n in nodes]
    wait_for(lambda: nodes_ready(cluster, names), timeout, "fleet nodes Ready", interval=2)
    create(cluster, shape.workloads(httproutes=httproutes))
    wait_settled(cluster, shape, timeout, shape.pod_count - shape.fragmented)
    create(cluster, shape.fragmenting())
    wait_settled(cluster, shape, timeout)


def nodes_ready(cluster: Cluster, names: Iterable[str]) -> bool:
    wanted = set(names)
    ready = {
        n["metadata"]["name"]
        for n in list_all(cluster, "/api/v1/nodes")
        if any(c["type"] == "Ready" and c["status"] == "True" for c in n["status"].get("conditions") or ())
        and not any(t["key"] == "node.kubernetes.io/not-ready" for t in n["spec"].get("taints") or ())
    }
    return wanted <= ready


# the control plane's own clients, which create, bind and run the pods, at the pace of a bulk bring-up
TUNING = {
    "kube-controller-manager": {"kube-api-qps": "400", "kube-api-burst": "800", "concurrent-replicaset-syncs": "10"},
    "kube-scheduler": {"kube-api-qps": "400", "kube-api-burst": "800"},
}
