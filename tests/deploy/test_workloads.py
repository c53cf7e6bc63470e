"""The node DaemonSet and the cluster Deployment: GPU access, identity, probes against the real server,
resources and the security context, with the few relaxations the node role needs and nothing more."""

from __future__ import annotations

import posixpath
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from exporter import cli, config, server
from exporter.collect import CollectorSet
from exporter.exposition import Family
from tests.deploy.manifests import BASE, Obj, container, find, mounted_config, pod_spec, render

NODE = ("DaemonSet", "llm-exporter-node")
CLUSTER = ("Deployment", "llm-exporter-cluster")


@pytest.fixture
def objs() -> list[Obj]:
    return render(BASE)


def workload(objs: list[Obj], which: tuple[str, str]) -> Obj:
    return find(objs, *which)


def serve_args(c: Obj, monkeypatch: pytest.MonkeyPatch) -> Any:
    """The container's command line, parsed by the exporter's own CLI (defaults from the code)."""
    for var in ("LLM_EXPORTER_CONFIG", "LLM_EXPORTER_LISTEN", "LLM_EXPORTER_ROLE"):
        monkeypatch.delenv(var, raising=False)
    assert "command" not in c, "the image's ENTRYPOINT is llm-exporter; set args only"
    return cli.parser().parse_args(c["args"])


@pytest.mark.parametrize(("which", "role"), [(NODE, "node"), (CLUSTER, "cluster")])
def test_args_select_the_role_and_a_config_that_loads(
    objs: list[Obj], which: tuple[str, str], role: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    w = workload(objs, which)
    args = serve_args(container(w), monkeypatch)
    assert (args.command, args.role, args.kubeconfig) == ("serve", role, None)  # in-cluster config
    cfg = config.parse(mounted_config(objs, w, args.config), source=args.config)
    if role == "node":
        assert cfg.engines.kubernetes_discovery.enabled
        assert cfg.engines.targets == []


@pytest.mark.parametrize("which", [NODE, CLUSTER])
def test_the_metrics_port_is_the_one_the_server_listens_on(
    objs: list[Obj], which: tuple[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    c = container(workload(objs, which))
    _, port = server.parse_listen(serve_args(c, monkeypatch).listen)
    assert c["ports"] == [{"name": "metrics", "containerPort": port, "protocol": "TCP"}]
    for probe in ("livenessProbe", "readinessProbe"):
        assert c[probe]["httpGet"]["port"] == "metrics"
    assert c["livenessProbe"]["httpGet"]["path"] == "/healthz"
    assert c["readinessProbe"]["httpGet"]["path"] == "/readyz"


class Gate:
    """A ReadyCollector whose readiness the test flips, like a watch that has not listed yet."""

    name = "gate"

    def __init__(self) -> None:
        self.open = False

    def ready(self) -> bool:
        return self.open

    def collect(self) -> list[Family]:
        return []


@pytest.fixture
def live_server() -> Iterator[tuple[str, Gate]]:
    gate = Gate()
    srv = server.ExporterServer(("127.0.0.1", 0), server.Scraper(CollectorSet([gate]), "node"))
    thread = threading.Thread(target=srv.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{srv.server_address[1]}", gate
    finally:
        srv.shutdown()
        srv.server_close()


def status(url: str) -> int:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


@pytest.mark.parametrize("which", [NODE, CLUSTER])
def test_probes_get_the_answers_they_expect_from_the_real_server(
    objs: list[Obj], which: tuple[str, str], live_server: tuple[str, Gate]
) -> None:
    url, gate = live_server
    c = container(workload(objs, which))
    live, ready = c["livenessProbe"]["httpGet"]["path"], c["readinessProbe"]["httpGet"]["path"]
    assert status(url + live) == 200  # alive before the first sync: no restart loop while listing
    assert status(url + ready) == 503
    gate.open = True
    assert status(url + ready) == 200
    assert status(url + live) == 200
    assert status(url + "/metrics") == 200


def test_the_node_pod_reaches_every_gpu_without_requesting_one(objs: list[Obj]) -> None:
    ds = workload(objs, NODE)
    spec = pod_spec(ds)
    for c in spec["containers"] + spec.get("initContainers", []):
        for section in ("requests", "limits"):
            names = set(c.get("resources", {}).get(section, {}))
            assert names <= {"cpu", "memory", "ephemeral-storage"}, f"{c['name']} {section}: {names}"
        assert "claims" not in c.get("resources", {})
    assert "resourceClaims" not in spec
    env = {e["name"]: e for e in container(ds)["env"]}
    assert env["NVIDIA_VISIBLE_DEVICES"]["value"] == "all"
    assert "utility" in env["NVIDIA_DRIVER_CAPABILITIES"]["value"].split(",")  # NVML lives in "utility"
    assert spec["runtimeClassName"] == "nvidia"


def test_the_node_pod_knows_its_node_and_runs_only_on_gpu_nodes(objs: list[Obj]) -> None:
    spec = pod_spec(workload(objs, NODE))
    env = {e["name"]: e for e in container(workload(objs, NODE))["env"]}
    assert env["NODE_NAME"] == {"name": "NODE_NAME", "valueFrom": {"fieldRef": {"fieldPath": "spec.nodeName"}}}
    assert spec["nodeSelector"] == {"nvidia.com/gpu.present": "true"}
    assert {"key": "nvidia.com/gpu", "operator": "Exists", "effect": "NoSchedule"} in spec["tolerations"]


def test_the_pod_resources_directory_is_mounted_read_only_where_the_config_looks(
    objs: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = workload(objs, NODE)
    args = serve_args(container(ds), monkeypatch)
    socket = config.parse(mounted_config(objs, ds, args.config)).gpu.pod_resources_socket
    directory = posixpath.dirname(socket)
    assert directory == "/var/lib/kubelet/pod-resources"
    mounts = {m["mountPath"]: m for m in container(ds)["volumeMounts"]}
    volumes = {v["name"]: v for v in pod_spec(ds)["volumes"]}
    mount = mounts[directory]
    assert mount["readOnly"] is True
    # The directory, not the socket file: a restarted kubelet's new socket shows up in the mount.
    assert volumes[mount["name"]]["hostPath"] == {"path": directory, "type": "Directory"}


def test_the_hosts_proc_is_mounted_read_only_where_the_config_looks(
    objs: list[Obj], monkeypatch: pytest.MonkeyPatch
) -> None:
    ds = workload(objs, NODE)
    args = serve_args(container(ds), monkeypatch)
    proc_root = config.parse(mounted_config(objs, ds, args.config)).gpu.proc_root
    mount = {m["mountPath"]: m for m in container(ds)["volumeMounts"]}[proc_root]
    assert mount["readOnly"] is True
    volumes = {v["name"]: v for v in pod_spec(ds)["volumes"]}
    assert volumes[mount["name"]]["hostPath"] == {"path": "/proc", "type": "Directory"}


@pytest.mark.parametrize("which", [NODE, CLUSTER])
def test_requests_and_limits_are_set(objs: list[Obj], which: tuple[str, str]) -> None:
    resources = container(workload(objs, which))["resources"]
    for section in ("requests", "limits"):
        assert set(resources[section]) == {"cpu", "memory"}
    assert memory_bytes(resources["limits"]["memory"]) >= 2 * memory_bytes(resources["requests"]["memory"])


def memory_bytes(quantity: str) -> int:
    units = {"Ki": 1 << 10, "Mi": 1 << 20, "Gi": 1 << 30}
    for suffix, factor in units.items():
        if quantity.endswith(suffix):
            return int(quantity[: -len(suffix)]) * factor
    return int(quantity)


HARDENED = {
    "allowPrivilegeEscalation": False,
    "privileged": False,
    "readOnlyRootFilesystem": True,
    "capabilities": {"drop": ["ALL"]},
}


@pytest.mark.parametrize("which", [NODE, CLUSTER])
def test_the_container_security_context_is_hardened(objs: list[Obj], which: tuple[str, str]) -> None:
    w = workload(objs, which)
    assert container(w)["securityContext"] == HARDENED  # nothing added: no capability, no privilege
    spec = pod_spec(w)
    assert spec["securityContext"]["seccompProfile"] == {"type": "RuntimeDefault"}
    for host in ("hostNetwork", "hostPID", "hostIPC"):
        assert not spec.get(host, False), host
    writable = [m for m in container(w)["volumeMounts"] if not m.get("readOnly")]
    assert [m["mountPath"] for m in writable] == ["/tmp"]  # the only writable path, a bounded emptyDir
    volumes = {v["name"]: v for v in spec["volumes"]}
    assert volumes[writable[0]["name"]]["emptyDir"]["sizeLimit"]


def test_the_cluster_pod_runs_as_non_root_with_no_host_access(objs: list[Obj]) -> None:
    spec = pod_spec(workload(objs, CLUSTER))
    assert spec["securityContext"]["runAsNonRoot"] is True
    assert spec["securityContext"]["runAsUser"] != 0
    assert not [v for v in spec["volumes"] if "hostPath" in v]
    assert "runtimeClassName" not in spec


def test_the_node_pods_only_relaxations_are_root_and_the_pod_resources_and_proc_mounts(objs: list[Obj]) -> None:
    """The exceptions to the restricted Pod Security profile, and why: UID 0 to open the kubelet's root-only
    pod-resources socket, the hostPath that brings the socket in, and the host's /proc read-only (GPU
    processes to pods). NVML needs none of them."""
    spec = pod_spec(workload(objs, NODE))
    assert spec["securityContext"] == {
        "runAsUser": 0,
        "runAsGroup": 0,
        "runAsNonRoot": False,
        "seccompProfile": {"type": "RuntimeDefault"},
    }
    assert [v["hostPath"]["path"] for v in spec["volumes"] if "hostPath" in v] == [
        "/var/lib/kubelet/pod-resources",
        "/proc",
    ]
    namespace = find(render(BASE), "Namespace", "llm-exporter")["metadata"]["labels"]
    assert namespace["pod-security.kubernetes.io/enforce"] == "privileged"  # baseline forbids hostPath
    assert namespace["pod-security.kubernetes.io/warn"] == "restricted"


def test_the_cluster_role_is_one_replica_replaced_not_rolled(objs: list[Obj]) -> None:
    deployment = workload(objs, CLUSTER)
    assert deployment["spec"]["replicas"] == 1
    assert deployment["spec"]["strategy"] == {"type": "Recreate"}  # never two scraped at once


def test_configs_roll_the_pods_when_they_change(objs: list[Obj]) -> None:
    """configMapGenerator names carry a content hash, and the workloads reference the hashed names."""
    for which, base_name in ((NODE, "llm-exporter-node-config"), (CLUSTER, "llm-exporter-cluster-config")):
        names = [v["configMap"]["name"] for v in pod_spec(workload(objs, which))["volumes"] if "configMap" in v]
        assert len(names) == 1
        assert names[0].startswith(base_name + "-") and len(names[0]) > len(base_name) + 5
