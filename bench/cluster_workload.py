"""The cluster benchmarks' workload: nodes with time-sliced GPUs and pods shaped like Deployments' replicas,
as the API server serves them (bench_cluster.py serves it; cluster_costs.py reduces it in process)."""

from __future__ import annotations

from typing import Any

NODES, PODS = 5000, 150_000  # scale 1.0


def sized(scale: float) -> tuple[int, int]:
    """Nodes and pods at `scale` (a fraction of NODES / PODS), at least one of each."""
    return max(1, int(NODES * scale)), max(1, int(PODS * scale))


def workload(nodes: int, pods: int) -> list[dict[str, Any]]:
    """Nodes with time-sliced GPUs and pods shaped like a Deployment's replicas (shared spec objects)."""
    objects: list[dict[str, Any]] = []
    labels = {f"topology.kubernetes.io/{k}": v for k, v in (("region", "eu-west-1"), ("zone", "eu-west-1a"))}
    labels.update({"nvidia.com/gpu.product": "NVIDIA-H100-80GB-HBM3", "nvidia.com/gpu.count": "8"})
    for n in range(nodes):
        objects.append(
            {
                "kind": "Node",
                "apiVersion": "v1",
                "metadata": {
                    "name": f"gpu-node-{n:05d}",
                    "labels": {**labels, "kubernetes.io/hostname": f"gpu-node-{n:05d}"},
                },
                "spec": {"taints": [{"key": "nvidia.com/gpu", "value": "present", "effect": "NoSchedule"}]},
                "status": {
                    "allocatable": {"cpu": "191", "memory": "2000Gi", "pods": "110", "nvidia.com/gpu": "32"},
                    "capacity": {"cpu": "192", "memory": "2015Gi", "pods": "110", "nvidia.com/gpu": "32"},
                    "conditions": [
                        {"type": t, "status": s, "reason": r, "lastHeartbeatTime": "2026-01-01T00:00:00Z"}
                        for t, s, r in (
                            ("MemoryPressure", "False", "KubeletHasSufficientMemory"),
                            ("DiskPressure", "False", "KubeletHasNoDiskPressure"),
                            ("Ready", "True", "KubeletReady"),
                        )
                    ],
                    "nodeInfo": {
                        "kubeletVersion": "v1.34.1",
                        "containerRuntimeVersion": "containerd://2.1.4",
                        "osImage": "Ubuntu 24.04.3 LTS",
                        "kernelVersion": "6.8.0-86-generic",
                        "architecture": "amd64",
                        "operatingSystem": "linux",
                        "kubeProxyVersion": "",
                        "bootID": f"boot-{n}",
                        "machineID": f"machine-{n}",
                        "systemUUID": f"uuid-{n}",
                    },
                },
            }
        )
    per_workload = 30
    for w in range(0, pods, per_workload):
        spec_containers = [
            {
                "name": "vllm",
                "image": "vllm/vllm-openai:v0.11.0",
                "args": ["--model", f"/models/m{w % 50}", "--tensor-parallel-size", "1", "--max-model-len", "8192"],
                "env": [{"name": k, "value": v} for k, v in (("VLLM_LOGGING_LEVEL", "INFO"), ("HF_HOME", "/cache"))],
                "ports": [{"containerPort": 8000, "name": "http", "protocol": "TCP"}],
                "resources": {
                    "limits": {"nvidia.com/gpu": "1", "memory": "64Gi"},
                    "requests": {"cpu": "4", "memory": "64Gi", "nvidia.com/gpu": "1"},
                },
                "volumeMounts": [{"name": "cache", "mountPath": "/cache"}, {"name": "shm", "mountPath": "/dev/shm"}],
                "readinessProbe": {"httpGet": {"path": "/health", "port": 8000}, "periodSeconds": 5},
            }
        ]
        tolerations = [{"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"}]
        volumes = [{"name": "cache", "emptyDir": {}}, {"name": "shm", "emptyDir": {"medium": "Memory"}}]
        app = f"vllm-{w // per_workload:05d}"
        placement: dict[str, Any] = {}
        if (w // per_workload) % 2 == 0:  # one replica per node
            term = {"labelSelector": {"matchLabels": {"app": app}}, "topologyKey": "kubernetes.io/hostname"}
            placement["affinity"] = {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
        if (w // per_workload) % 3 == 0:
            placement["topologySpreadConstraints"] = [
                {
                    "maxSkew": 1,
                    "topologyKey": "topology.kubernetes.io/zone",
                    "whenUnsatisfiable": "DoNotSchedule",
                    "labelSelector": {"matchLabels": {"app": app}},
                }
            ]
        for r in range(min(per_workload, pods - w)):
            i = w + r
            pending = i % 300 == 0  # 500 unschedulable pods at full scale
            meta = {
                "name": f"vllm-{w // per_workload:05d}-{r:02d}",
                "namespace": f"team-{w % 40:02d}",
                "labels": {"app": app, "pod-template-hash": "5d9c8f7b6"},
                "annotations": {"llm-exporter.io/scrape": "true"},
                "ownerReferences": [
                    {
                        "apiVersion": "apps/v1",
                        "kind": "ReplicaSet",
                        "name": f"vllm-{w}-5d9c8f7b6",
                        "uid": f"00000000-0000-0000-0000-{w:012d}",
                        "controller": True,
                    }
                ],
            }
            spec: dict[str, Any] = {
                "containers": spec_containers,
                "tolerations": tolerations,
                "volumes": volumes,
                "restartPolicy": "Always",
                "schedulerName": "default-scheduler",
                **placement,
            }
            if pending:
                status = {
                    "phase": "Pending",
                    "conditions": [
                        {
                            "type": "PodScheduled",
                            "status": "False",
                            "reason": "Unschedulable",
                            "message": "0/5000 nodes are available: 5000 Insufficient nvidia.com/gpu.",
                        }
                    ],
                }
            else:
                spec = {**spec, "nodeName": f"gpu-node-{i % nodes:05d}"}
                status = {
                    "phase": "Running",
                    "podIP": f"10.{i >> 16 & 255}.{i >> 8 & 255}.{i & 255}",
                    "qosClass": "Burstable",
                    "conditions": [{"type": t, "status": "True"} for t in ("PodScheduled", "Initialized", "Ready")],
                    "containerStatuses": [
                        {
                            "name": "vllm",
                            "ready": True,
                            "restartCount": 0,
                            "image": "vllm/vllm-openai:v0.11.0",
                            "imageID": "docker.io/vllm/vllm-openai@sha256:0123456789abcdef",
                            "containerID": f"containerd://{i:064x}",
                            "state": {"running": {"startedAt": "2026-01-01T00:00:00Z"}},
                        }
                    ],
                }
            objects.append({"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec, "status": status})
    for n in range(nodes):  # a DaemonSet's pod on every node: no GPU, but cpu, memory and a pod slot
        meta = {"name": f"node-exporter-{n:05d}", "namespace": "monitoring", "labels": {"app": "node-exporter"}}
        resources = {"requests": {"cpu": "100m", "memory": "180Mi"}, "limits": {"memory": "180Mi"}}
        spec = {
            "containers": [
                {"name": "node-exporter", "image": "quay.io/prometheus/node-exporter:v1.9.1", "resources": resources}
            ],
            "tolerations": [{"operator": "Exists"}],
            "nodeName": f"gpu-node-{n:05d}",
        }
        status = {"phase": "Running", "conditions": [{"type": "PodScheduled", "status": "True"}]}
        objects.append({"kind": "Pod", "apiVersion": "v1", "metadata": meta, "spec": spec, "status": status})
    return objects
