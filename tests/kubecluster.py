"""A real Kubernetes control plane for the tests: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok (the pinned peers), on free loopback ports, in one temporary directory.

    with start_cluster(workdir) as cluster:        # or the session fixture `kube_cluster`
        cluster.url                                 # https://127.0.0.1:PORT
        cluster.ca_file                             # the CA that signed the serving and client certificates
        cluster.admin_kubeconfig                    # client certificate in group system:masters
        cluster.etcd_url                            # http://127.0.0.1:PORT (compaction, see compact_etcd)
        cluster.request("GET", "/api/v1/nodes")     # (status, JSON body) as admin (or token=...); errors returned
        cluster.must("POST", path, body)            # the same, asserting a 200/201 (ok=...) answer
        cluster.kubectl("get", "pods", "-A")        # CompletedProcess; raises on failure unless check=False
        cluster.apply(obj)                          # server-side apply of one object (a dict)
        cluster.service_account_token(ns, name)     # a TokenRequest token for a ServiceAccount
        cluster.kubeconfig(token, "name")           # a kubeconfig file that authenticates with a token
        cluster.add_node(name, capacity={"nvidia.com/gpu": "4"}, labels=..., taints=...,
                         unschedulable=False, ready=True,   # a kwok node; ready=False: not managed by kwok
                         internal_ip="127.0.0.1")           # host-network pods get this IP
        cluster.delete_nodes(names)                 # and wait until they are gone
        cluster.node_ready(name)                    # Ready and without the not-ready taint
        cluster.namespace()                         # a fresh namespace (with its default ServiceAccount)
        cluster.compact_etcd()                      # compact etcd at its current revision (410 for old RVs)
        cluster.etcd_put(key, value)                # a write outside the API: etcd's revision moves on
        cluster.restart_apiserver(down_seconds)     # stop and start kube-apiserver on the same port
        cluster.stop_apiserver(); cluster.start_apiserver()   # the same in two steps
        cluster.logs()                              # the tail of every component's log
    wait_for(check, timeout, "what")                # poll until truthy; the assertion names `what`

The API server runs `--authorization-mode=Node,RBAC` with client-certificate authentication; the
scheduler and controller manager use their own identities (system:kube-scheduler,
system:kube-controller-manager with per-controller service accounts), as kubeadm sets them up. DRA
(`resource.k8s.io/v1`) is GA and on by default in 1.37: no feature gate or runtime-config is needed.

kwok manages the nodes annotated `kwok.x-k8s.io/node=fake`: it keeps them Ready (with leases, so the
node lifecycle controller removes the `not-ready` taint the admission plugin puts on a new node) and
makes the pods bound to them Running. A node created with ready=False carries no such annotation; its
Ready condition is False and the controller manager taints it as it would a failed kubelet.

Start-up is ready when /readyz answers, a probe node has become Ready and untainted and a probe pod has
been bound by the scheduler: each component has done its first job, however busy the machine.
"""

from __future__ import annotations

import tempfile
from collections.abc import Iterator, Mapping
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest
import trustme

from exporter.demo.vllm_env import free_port
from tests.kubeapi import (
    KWOK_ANNOTATION,
    KWOK_STAGES,
    STARTUP_TIMEOUT,
    Cluster,
    Component,
    client_kubeconfig,
    flags,
    service_account_key,
    wait_for,
    wait_healthy,
)
from tests.peers import peer

__all__ = ["KWOK_ANNOTATION", "Cluster", "kube_cluster", "start_cluster", "wait_for"]


def _probe(cluster: Cluster) -> None:
    """Each component's first job: kwok readies a node, the controllers untaint it, the scheduler binds."""
    cluster.add_node("probe-node")
    wait_for(lambda: cluster.node_ready("probe-node"), STARTUP_TIMEOUT, "probe node Ready (kwok, controllers)")
    namespace = cluster.namespace("probe")
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "probe", "namespace": namespace},
        "spec": {"containers": [{"name": "c", "image": "probe"}]},
    }
    cluster.must("POST", f"/api/v1/namespaces/{namespace}/pods", pod)

    def running() -> bool:
        status, body = cluster.request("GET", f"/api/v1/namespaces/{namespace}/pods/probe")
        return status == 200 and body["status"].get("phase") == "Running"

    wait_for(running, STARTUP_TIMEOUT, "probe pod bound (scheduler) and Running (kwok)")
    cluster.must("DELETE", f"/api/v1/namespaces/{namespace}", ok=(200, 202))
    cluster.delete_nodes(["probe-node"])


PORT_ATTEMPTS = 3


class PortTaken(RuntimeError):
    """A component could not listen: the free port picked for it was taken before it bound it."""


@contextmanager
def start_cluster(workdir: Path, tuning: Mapping[str, Mapping[str, str]] | None = None) -> Iterator[Cluster]:
    """The control plane and kwok, ready (see the module docstring); everything stopped afterwards.
    `tuning`: extra flags per component ({"kube-controller-manager": {"kube-api-qps": "500"}}).

    Ports are picked free and bound by the components moments later; in between, any process (an outgoing
    connection's ephemeral port) may take one. Then the bring-up starts again, on fresh ports and in a
    fresh folder."""
    for attempt in range(1, PORT_ATTEMPTS + 1):
        stack = ExitStack()
        try:
            folder = workdir if attempt == 1 else workdir / f"retry-{attempt}"
            cluster = stack.enter_context(_started(folder, tuning or {}))
        except PortTaken:
            stack.close()
            if attempt == PORT_ATTEMPTS:
                raise
            continue
        with stack:
            yield cluster
        return


@contextmanager
def _started(workdir: Path, tuning: Mapping[str, Mapping[str, str]]) -> Iterator[Cluster]:
    workdir.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="llm-inference-exporter tests")
    ca.cert_pem.write_to_path(str(workdir / "ca.pem"))
    serving = ca.issue_cert("127.0.0.1", "localhost", "kubernetes.default.svc")
    serving.private_key_and_cert_chain_pem.write_to_path(str(workdir / "serving.pem"))
    service_account_key(workdir / "sa.key")
    etcd_client, etcd_peer, secure = free_port(), free_port(), free_port()
    url = f"https://127.0.0.1:{secure}"
    kubeconfigs = {
        name: client_kubeconfig(ca, workdir, url, name, user, group)
        for name, user, group in (
            ("admin", "admin", "system:masters"),
            ("scheduler", "system:kube-scheduler", None),
            ("controller-manager", "system:kube-controller-manager", None),
        )
    }
    etcd_url = f"http://127.0.0.1:{etcd_client}"
    cluster = Cluster(
        url=url,
        workdir=workdir,
        ca_file=workdir / "ca.pem",
        admin_kubeconfig=kubeconfigs["admin"],
        etcd_url=etcd_url,
        _admin_cert=workdir / "admin.pem",
    )

    def component(name: str, options: Mapping[str, str]) -> Component:
        made = Component(name, [peer(name), *flags({**options, **tuning.get(name, {})})], workdir / f"{name}.log")
        cluster._components[name] = made
        return made

    def secure_serving(name: str) -> dict[str, str]:
        return {
            "kubeconfig": str(kubeconfigs[name]),
            "authentication-kubeconfig": str(kubeconfigs[name]),
            "authorization-kubeconfig": str(kubeconfigs[name]),
            "bind-address": "127.0.0.1",
            "secure-port": str(free_port()),
            "leader-elect": "false",
        }

    etcd = component(
        "etcd",
        {
            "data-dir": str(workdir / "etcd"),
            "listen-client-urls": etcd_url,
            "advertise-client-urls": etcd_url,
            "listen-peer-urls": f"http://127.0.0.1:{etcd_peer}",
            "initial-advertise-peer-urls": f"http://127.0.0.1:{etcd_peer}",
            "initial-cluster": f"default=http://127.0.0.1:{etcd_peer}",
        },
    )
    apiserver = component(
        "kube-apiserver",
        {
            "etcd-servers": etcd_url,
            "bind-address": "127.0.0.1",
            "secure-port": str(secure),
            "tls-cert-file": str(workdir / "serving.pem"),
            "tls-private-key-file": str(workdir / "serving.pem"),
            "client-ca-file": str(workdir / "ca.pem"),
            "authorization-mode": "Node,RBAC",
            "service-account-issuer": "https://kubernetes.default.svc",
            "service-account-key-file": str(workdir / "sa.key"),
            "service-account-signing-key-file": str(workdir / "sa.key"),
            "service-cluster-ip-range": "10.96.0.0/16",
        },
    )
    controller_manager_flags = secure_serving("controller-manager")
    controller_manager_flags.update(
        {
            "use-service-account-credentials": "true",
            "service-account-private-key-file": str(workdir / "sa.key"),
            "root-ca-file": str(workdir / "ca.pem"),
            "node-monitor-period": "2s",
            "controllers": "*,-bootstrapsigner,-tokencleaner",
        }
    )
    controller_manager = component("kube-controller-manager", controller_manager_flags)
    scheduler = component("kube-scheduler", secure_serving("scheduler"))
    kwok = component(
        "kwok",
        {
            "kubeconfig": str(kubeconfigs["admin"]),
            "manage-all-nodes": "false",
            "manage-nodes-with-annotation-selector": f"{KWOK_ANNOTATION}=fake",
            "cidr": "10.244.0.0/16",
            "node-ip": "10.0.0.1",
            "node-lease-duration-seconds": "40",
            "config": ",".join(str(p) for p in sorted(KWOK_STAGES.glob("*.yaml"))),
        },
    )
    with ExitStack() as stack:
        for started in (etcd, apiserver, controller_manager, scheduler, kwok):
            stack.callback(started.stop)
        try:
            etcd.start()
            apiserver.start()
            cluster._wait_readyz(apiserver)
            for started in (controller_manager, scheduler, kwok):
                started.start()
            for started in (controller_manager, scheduler):
                wait_healthy(started)
            _probe(cluster)
        except (AssertionError, RuntimeError) as err:
            logs = cluster.logs()
            if "address already in use" in logs:
                raise PortTaken(f"{err}\n{logs}") from err
            raise RuntimeError(f"{err}\n{logs}") from err
        yield cluster


@pytest.fixture(scope="session")
def kube_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """One control plane for the whole session; the components' logs are printed if a test failed."""
    workdir = Path(tempfile.mkdtemp(prefix="kube-cluster-"))
    with start_cluster(workdir) as cluster:
        failed_before = request.session.testsfailed
        yield cluster
        if request.session.testsfailed > failed_before:
            print(f"\ncontrol plane logs ({workdir}):\n{cluster.logs()}")
