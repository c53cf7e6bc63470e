"""The API side of the test control plane (see tests/kubecluster.py, which starts it): `Cluster` with
its request, object, token and fault helpers, the component processes, certificates and kubeconfigs."""

from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import trustme
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa

from tests.peers import peer

KWOK_ANNOTATION = "kwok.x-k8s.io/node"
KWOK_STAGES = Path(__file__).resolve().parent / "fixtures" / "kwok"  # kwokctl's default stages, unmodified
STARTUP_TIMEOUT = 180.0  # generous: six engineers share two cores


def flags(flags: Mapping[str, str]) -> list[str]:
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


# SIGKILL a component when the test process dies, so that a killed run (a timeout) leaves no control plane
# behind (util-linux's setpriv sets PR_SET_PDEATHSIG and execs; without it, cleanup is the context's alone)
_DIE_WITH_PARENT = ["setpriv", "--pdeathsig", "KILL", "--"] if shutil.which("setpriv") else []


@dataclass
class Component:
    name: str
    args: list[str]
    log: Path
    process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                [*_DIE_WITH_PARENT, *self.args], stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

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
    _components: dict[str, Component] = field(default_factory=dict)

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
        internal_ip: str = "",
    ) -> None:
        """Create a node with cpu/memory/pods plus `capacity`; kwok keeps it Ready unless ready=False. With
        `internal_ip`, kwok gives its host-network pods that IP (a loopback one: a server of the test's)."""
        resources = {"cpu": "64", "memory": "512Gi", "pods": "110", **(capacity or {})}
        # kwok's node-initialize stage writes a managed node's conditions; an unmanaged one stays NotReady
        not_ready = {
            "type": "Ready",
            "status": "False",
            "reason": "KubeletNotReady",
            "lastHeartbeatTime": _now(),
            "lastTransitionTime": _now(),
        }
        node: dict[str, Any] = {
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
        if internal_ip:  # with the Hostname too: kwok's node-initialize stage replaces a list that lacks one
            node["status"]["addresses"] = [
                {"type": "InternalIP", "address": internal_ip},
                {"type": "Hostname", "address": name},
            ]
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

    def _wait_readyz(self, component: Component, timeout: float = STARTUP_TIMEOUT) -> None:
        def ready() -> bool:
            component.check_running()
            try:
                return self.request("GET", "/readyz", timeout=5)[0] == 200
            except OSError:
                return False

        wait_for(ready, timeout, "kube-apiserver /readyz")

    def logs(self, tail: int = 3000) -> str:
        """The tail of each started component's log (one that never started has none)."""
        return "\n".join(
            f"===== {c.name} =====\n{c.log.read_text(errors='replace')[-tail:]}"
            for c in self._components.values()
            if c.log.exists()
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


def client_kubeconfig(ca: trustme.CA, workdir: Path, url: str, name: str, user: str, group: str | None) -> Path:
    cert = ca.issue_cert(f"{name}.client.test", common_name=user, organization_name=group)
    cert.private_key_and_cert_chain_pem.write_to_path(str(workdir / f"{name}.pem"))
    return _write_kubeconfig(
        workdir / f"{name}.kubeconfig",
        url,
        workdir / "ca.pem",
        {"client-certificate": str(workdir / f"{name}.pem"), "client-key": str(workdir / f"{name}.pem")},
    )


def service_account_key(path: Path) -> None:
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


def wait_healthy(component: Component) -> None:
    """Wait for a component's /healthz on its secure port (self-signed), failing early if it exits."""
    port = int(next(a.split("=", 1)[1] for a in component.args if a.startswith("--secure-port=")))

    def healthy() -> bool:
        component.check_running()
        return _healthy(port)

    wait_for(healthy, STARTUP_TIMEOUT, f"{component.name} /healthz")
