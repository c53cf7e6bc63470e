"""A real Kubernetes control plane for the tests: etcd, kube-apiserver, kube-controller-manager,
kube-scheduler and kwok (the pinned peers), on free loopback ports, in one temporary directory.

    with start_cluster(workdir) as cluster:        # or the session fixture `kube_cluster`
        cluster.url                                 # https://127.0.0.1:PORT
        cluster.ca_file                             # the CA that signed the serving and client certificates
        cluster.admin_kubeconfig                    # client certificate in group system:masters
        cluster.etcd_url                            # http://127.0.0.1:PORT (compaction, see compact_etcd)
        cluster.request("GET", "/api/v1/nodes")     # (status, JSON body) as admin; errors returned
        cluster.kubectl("get", "pods", "-A")        # CompletedProcess; raises on failure unless check=False
        cluster.apply(obj)                          # server-side apply of one object (a dict)
        cluster.service_account_token(ns, name)     # a TokenRequest token for a ServiceAccount
        cluster.kubeconfig(token, "name")           # a kubeconfig file that authenticates with a token
        cluster.add_node(name, capacity={"nvidia.com/gpu": "4"}, labels=..., taints=...,
                         unschedulable=False, ready=True)   # a kwok node; ready=False: not managed by kwok
        cluster.delete_nodes(names)                 # and wait until they are gone
        cluster.namespace()                         # a fresh namespace (with its default ServiceAccount)
        cluster.compact_etcd()                      # compact etcd at its current revision (410 for old RVs)
        cluster.etcd_put(key, value)                # a write outside the API: etcd's revision moves on
        cluster.restart_apiserver(down_seconds)     # stop and start kube-apiserver on the same port
        cluster.stop_apiserver(); cluster.start_apiserver()   # the same in two steps
        cluster.logs()                              # the tail of every component's log

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

import base64
import json
import os
import signal
import ssl
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from exporter.demo.vllm_env import free_port
from tests.peers import peer

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_STAGES = Path(__file__).resolve().parent / "fixtures" / "kwok"  # kwokctl's default stages, unmodified
STARTUP_TIMEOUT = 180.0  # generous: six engineers share two cores


def _flags(flags: Mapping[str, str]) -> list[str]:
    return [f"--{name}={value}" for name, value in flags.items()]


def wait_for(check: Callable[[], Any], timeout: float, what: str, interval: float = 0.25) -> Any:
    """Poll `check` until truthy; AssertionError naming `what` and the last value after `timeout`."""
    deadline = time.monotonic() + timeout
    while True:
        value = check()
        if value or time.monotonic() > deadline:
            break
        time.sleep(interval)
    assert value, f"{what}: not within {timeout:.0f}s (last: {value!r})"
    return value


@dataclass
class _Component:
    name: str
    args: list[str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(self.args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)

    def stop(self) -> None:
        process = self.process
        if process is None or process.poll() is not None:
            return
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(20)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(10)

    def check_running(self) -> None:
        if self.process is not None and self.process.poll() is not None:
            raise RuntimeError(f"{self.name} exited {self.process.returncode}:\n{self.log.read_text()[-4000:]}")


@dataclass
class Cluster:
    url: str
    workdir: Path
    ca_file: Path
    admin_kubeconfig: Path
    etcd_url: str
    _admin_cert: Path
    _components: dict[str, _Component] = field(default_factory=dict)

    # -- API access ------------------------------------------------------------------------------------
    def _context(self) -> ssl.SSLContext:
        context = ssl.create_default_context(cafile=str(self.ca_file))
        context.load_cert_chain(str(self._admin_cert))
        return context

    def request(
        self,
        method: str,
        path: str,
        *,
        body: Any = None,
        token: str | None = None,
        timeout: float = 30,
        content_type: str = "application/json",
    ) -> tuple[int, Any]:
        """(status, decoded JSON body) of one request as admin (or with `token`); errors are returned."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Content-Type", content_type)
        context = ssl.create_default_context(cafile=str(self.ca_file)) if token else self._context()
        if token:
            req.add_header("Authorization", f"Bearer {token}")
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=context) as resp:
                raw, status = resp.read(), resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read(), err.code
        try:
            return status, json.loads(raw) if raw else None
        except json.JSONDecodeError:
            return status, raw.decode(errors="replace")

    def must(self, method: str, path: str, body: Any = None, ok: Sequence[int] = (200, 201)) -> Any:
        status, answer = self.request(method, path, body=body)
        assert status in ok, f"{method} {path}: {status} {answer}"
        return answer

    def apply(self, obj: Mapping[str, Any]) -> Any:
        """Server-side apply of one object (field manager `tests`, conflicts forced)."""
        meta, kind = obj["metadata"], obj["kind"]
        status, answer = self.request(
            "PATCH",
            _object_path(obj["apiVersion"], kind, meta.get("namespace"))
            + f"/{meta['name']}"
            + "?fieldManager=tests&force=true",
            body=obj,
            content_type="application/apply-patch+yaml",
        )
        assert status in (200, 201), f"apply {kind} {meta['name']}: {status} {answer}"
        return answer

    def kubectl(
        self, *args: str, check: bool = True, timeout: float = 120, input_text: str | None = None
    ) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, "KUBECONFIG": str(self.admin_kubeconfig)}
        result = subprocess.run(
            [peer("kubectl"), *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=timeout,
            check=False,
            input=input_text,
        )
        if check and result.returncode != 0:
            raise AssertionError(f"kubectl {' '.join(args)} failed:\n{result.stdout}{result.stderr}")
        return result

    def kubeconfig(self, token: str, name: str) -> Path:
        """A kubeconfig file that authenticates with `token` (a ServiceAccount's, say)."""
        return _write_kubeconfig(self.workdir / f"{name}.kubeconfig", self.url, self.ca_file, {"token": token})

    def service_account_token(self, namespace: str, name: str, seconds: int = 3600) -> str:
        """A token for the ServiceAccount from the TokenRequest API, as the kubelet would mount it."""
        body = {
            "apiVersion": "authentication.k8s.io/v1",
            "kind": "TokenRequest",
            "spec": {"expirationSeconds": seconds},
        }
        answer = self.must("POST", f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token", body)
        token: str = answer["status"]["token"]
        return token

    # -- objects ---------------------------------------------------------------------------------------
    def namespace(self, prefix: str = "t") -> str:
        """A fresh namespace whose default ServiceAccount exists (pods are admitted only then)."""
        name = f"{prefix}-{uuid.uuid4().hex[:8]}"
        self.must("POST", "/api/v1/namespaces", {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}})
        wait_for(
            lambda: self.request("GET", f"/api/v1/namespaces/{name}/serviceaccounts/default")[0] == 200,
            60,
            f"default ServiceAccount in {name}",
        )
        return name

    def add_node(
        self,
        name: str,
        *,
        capacity: Mapping[str, str] | None = None,
        labels: Mapping[str, str] | None = None,
        taints: Sequence[Mapping[str, str]] = (),
        unschedulable: bool = False,
        ready: bool = True,
    ) -> None:
        """Create a node with cpu/memory/pods plus `capacity`; kwok keeps it Ready unless ready=False."""
        resources = {"cpu": "64", "memory": "512Gi", "pods": "110", **(capacity or {})}
        # kwok's node-initialize stage writes a managed node's conditions; an unmanaged one stays NotReady
        not_ready = {
            "type": "Ready",
            "status": "False",
            "reason": "KubeletNotReady",
            "lastHeartbeatTime": _now(),
            "lastTransitionTime": _now(),
        }
        node = {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {
                "name": name,
                "annotations": {KWOK_ANNOTATION: "fake"} if ready else {},
                "labels": {
                    "kubernetes.io/hostname": name,
                    "kubernetes.io/os": "linux",
                    "type": "kwok",
                    **(labels or {}),
                },
            },
            "spec": {"taints": [dict(t) for t in taints], "unschedulable": unschedulable},
            "status": {"capacity": resources, "allocatable": resources, "conditions": [] if ready else [not_ready]},
        }
        self.must("POST", "/api/v1/nodes", node)

    def delete_nodes(self, names: Sequence[str], timeout: float = 60) -> None:
        for name in names:
            self.must("DELETE", f"/api/v1/nodes/{name}", ok=(200, 202, 404))
        wait_for(
            lambda: all(self.request("GET", f"/api/v1/nodes/{n}")[0] == 404 for n in names),
            timeout,
            f"nodes {names} deleted",
        )

    def node_ready(self, name: str) -> bool:
        """Ready=True and without the not-ready taint: the scheduler may place pods on it."""
        status, node = self.request("GET", f"/api/v1/nodes/{name}")
        if status != 200:
            return False
        conditions = {c["type"]: c["status"] for c in node.get("status", {}).get("conditions", [])}
        taints = {t["key"] for t in node.get("spec", {}).get("taints", [])}
        return conditions.get("Ready") == "True" and "node.kubernetes.io/not-ready" not in taints

    # -- faults ----------------------------------------------------------------------------------------
    def compact_etcd(self) -> int:
        """Compact etcd's history at its current revision; returns that revision."""
        revision = int(_etcd_post(self.etcd_url, "/v3/kv/range", {"key": "AA==", "limit": 1})["header"]["revision"])
        _etcd_post(self.etcd_url, "/v3/kv/compaction", {"revision": revision, "physical": True})
        return revision

    def stop_apiserver(self) -> None:
        """Stop kube-apiserver (SIGTERM, as a rolling upgrade does); etcd and the rest keep running."""
        self._components["kube-apiserver"].stop()

    def start_apiserver(self) -> None:
        """Start kube-apiserver again on the same port and wait for /readyz."""
        component = self._components["kube-apiserver"]
        component.start()
        self._wait_readyz(component)

    def restart_apiserver(self, down_seconds: float = 0.0) -> None:
        """Stop kube-apiserver, stay down `down_seconds`, start it again and wait for /readyz."""
        self.stop_apiserver()
        time.sleep(down_seconds)
        self.start_apiserver()

    def etcd_put(self, key: str, value: str) -> int:
        """Write a key straight into etcd (outside the API's prefix): the revision moves on; returns it."""
        body = {"key": base64.b64encode(key.encode()).decode(), "value": base64.b64encode(value.encode()).decode()}
        return int(_etcd_post(self.etcd_url, "/v3/kv/put", body)["header"]["revision"])

    def _wait_readyz(self, component: _Component, timeout: float = STARTUP_TIMEOUT) -> None:
        def ready() -> bool:
            component.check_running()
            try:
                return self.request("GET", "/readyz", timeout=5)[0] == 200
            except OSError:
                return False

        wait_for(ready, timeout, "kube-apiserver /readyz")

    def logs(self, tail: int = 3000) -> str:
        return "\n".join(
            f"===== {c.name} =====\n{c.log.read_text(errors='replace')[-tail:]}" for c in self._components.values()
        )


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


def _object_path(api_version: str, kind: str, namespace: str | None) -> str:
    plural = kind.lower() + ("es" if kind.endswith("s") else "s")
    prefix = f"/api/{api_version}" if "/" not in api_version else f"/apis/{api_version}"
    return f"{prefix}/namespaces/{namespace}/{plural}" if namespace else f"{prefix}/{plural}"


def _etcd_post(url: str, path: str, body: Any) -> Any:
    req = urllib.request.Request(url + path, data=json.dumps(body).encode(), method="POST")
    with urllib.request.urlopen(req, timeout=30) as resp:
        return json.loads(resp.read())


def _write_kubeconfig(path: Path, url: str, ca: Path, user: Mapping[str, str]) -> Path:
    config = {
        "apiVersion": "v1",
        "kind": "Config",
        "clusters": [{"name": "test", "cluster": {"server": url, "certificate-authority": str(ca)}}],
        "users": [{"name": "user", "user": dict(user)}],
        "contexts": [{"name": "test", "context": {"cluster": "test", "user": "user"}}],
        "current-context": "test",
    }
    path.write_text(json.dumps(config))
    return path


def _client_kubeconfig(ca: trustme.CA, workdir: Path, url: str, name: str, user: str, group: str | None) -> Path:
    cert = ca.issue_cert(f"{name}.client.test", common_name=user, organization_name=group)
    cert.private_key_and_cert_chain_pem.write_to_path(str(workdir / f"{name}.pem"))
    return _write_kubeconfig(
        workdir / f"{name}.kubeconfig",
        url,
        workdir / "ca.pem",
        {"client-certificate": str(workdir / f"{name}.pem"), "client-key": str(workdir / f"{name}.pem")},
    )


def _service_account_key(path: Path) -> None:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.TraditionalOpenSSL, serialization.NoEncryption()
        )
    )


def _healthy(port: int) -> bool:
    context = ssl.create_default_context()
    context.check_hostname, context.verify_mode = False, ssl.CERT_NONE  # self-signed serving certificate
    try:
        with urllib.request.urlopen(f"https://127.0.0.1:{port}/healthz", timeout=5, context=context) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


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


@contextmanager
def start_cluster(workdir: Path) -> Iterator[Cluster]:
    """The control plane and kwok, ready (see the module docstring); everything stopped afterwards."""
    workdir.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA(organization_name="llm-inference-exporter tests")
    ca.cert_pem.write_to_path(str(workdir / "ca.pem"))
    serving = ca.issue_cert("127.0.0.1", "localhost", "kubernetes.default.svc")
    serving.private_key_and_cert_chain_pem.write_to_path(str(workdir / "serving.pem"))
    _service_account_key(workdir / "sa.key")
    etcd_client, etcd_peer, secure = free_port(), free_port(), free_port()
    url = f"https://127.0.0.1:{secure}"
    kubeconfigs = {
        name: _client_kubeconfig(ca, workdir, url, name, user, group)
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

    def component(name: str, flags: Mapping[str, str]) -> _Component:
        made = _Component(name, [peer(name), *_flags(flags)], workdir / f"{name}.log")
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
        etcd.start()
        apiserver.start()
        cluster._wait_readyz(apiserver)
        for started in (controller_manager, scheduler, kwok):
            started.start()
        for started in (controller_manager, scheduler):
            _wait_healthy(started)
        try:
            _probe(cluster)
        except (AssertionError, RuntimeError) as err:
            raise RuntimeError(f"{err}\n{cluster.logs()}") from err
        yield cluster


def _wait_healthy(component: _Component) -> None:
    port = int(next(a.split("=", 1)[1] for a in component.args if a.startswith("--secure-port=")))

    def healthy() -> bool:
        component.check_running()
        return _healthy(port)

    wait_for(healthy, STARTUP_TIMEOUT, f"{component.name} /healthz")


@pytest.fixture(scope="session")
def kube_cluster(request: pytest.FixtureRequest) -> Iterator[Cluster]:
    """One control plane for the whole session; the components' logs are printed if a test failed."""
    workdir = Path(tempfile.mkdtemp(prefix="kube-cluster-"))
    with start_cluster(workdir) as cluster:
        failed_before = request.session.testsfailed
        yield cluster
        if request.session.testsfailed > failed_before:
            print(f"\ncontrol plane logs ({workdir}):\n{cluster.logs()}")
