"""A real control plane for the manifest tests: etcd and kube-apiserver (the pinned peers) with RBAC
authorization and service-account token signing, so TokenRequest issues real tokens and the authorizer
decides what they may do. No scheduler, controllers or nodes: applying manifests, dry-run installs and
the exporter's list/watch need none of them (the DaemonSet and Deployment simply never get pods).

The admin identity is a static bearer token in group system:masters; everything the tests prove about
the exporter's rights uses the token the API server issues for the shipped ServiceAccount.
"""

from __future__ import annotations

import json
import os
import signal
import ssl
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from exporter.demo.vllm_env import free_port
from tests.peers import peer

ADMIN_TOKEN = "admin-token-for-tests"
_INSECURE = ssl.create_default_context()
_INSECURE.check_hostname = False
_INSECURE.verify_mode = ssl.CERT_NONE  # the API server's self-signed serving certificate, on loopback


@dataclass
class APIServer:
    url: str
    admin_kubeconfig: Path
    workdir: Path

    def kubeconfig(self, token: str, name: str) -> Path:
        """A kubeconfig file that authenticates with `token`."""
        path = self.workdir / f"{name}.kubeconfig"
        config = {
            "apiVersion": "v1",
            "kind": "Config",
            "clusters": [{"name": "test", "cluster": {"server": self.url, "insecure-skip-tls-verify": True}}],
            "users": [{"name": name, "user": {"token": token}}],
            "contexts": [{"name": "test", "context": {"cluster": "test", "user": name}}],
            "current-context": "test",
        }
        path.write_text(json.dumps(config))
        return path

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

    def request(
        self, method: str, path: str, *, token: str = ADMIN_TOKEN, body: Any = None, timeout: float = 30
    ) -> tuple[int, Any]:
        """(status, decoded JSON body) of one API request; errors are returned, not raised."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {token}")
        req.add_header("Content-Type", "application/json")
        try:
            with urllib.request.urlopen(req, timeout=timeout, context=_INSECURE) as resp:
                raw = resp.read()
                status = resp.status
        except urllib.error.HTTPError as err:
            raw, status = err.read(), err.code
        try:
            return status, json.loads(raw) if raw else None
        except json.JSONDecodeError:  # a watch answers one JSON event per line
            return status, [json.loads(line) for line in raw.splitlines() if line.strip()]

    def service_account_token(self, namespace: str, name: str) -> str:
        """A token for the ServiceAccount from the TokenRequest API, as the kubelet would mount it."""
        status, body = self.request(
            "POST",
            f"/api/v1/namespaces/{namespace}/serviceaccounts/{name}/token",
            body={
                "apiVersion": "authentication.k8s.io/v1",
                "kind": "TokenRequest",
                "spec": {"expirationSeconds": 3600},
            },
        )
        assert status == 201, f"TokenRequest for {namespace}/{name}: {status} {body}"
        token: str = body["status"]["token"]
        return token


def _flags(flags: dict[str, str]) -> list[str]:
    return [arg for name, value in flags.items() for arg in (f"--{name}", value)]


def _wait_ready(url: str, process: subprocess.Popen[bytes], log: Path, timeout: float = 90) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"{log.stem} exited {process.returncode}:\n{log.read_text()[-3000:]}")
        req = urllib.request.Request(url, headers={"Authorization": f"Bearer {ADMIN_TOKEN}"})
        try:
            with urllib.request.urlopen(req, timeout=2, context=_INSECURE) as resp:
                if resp.status == 200:
                    return
        except (OSError, urllib.error.URLError):
            pass
        time.sleep(0.2)
    raise RuntimeError(f"{url} not ready after {timeout}s:\n{log.read_text()[-3000:]}")


@contextmanager
def _process(args: list[str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        process = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        yield process
    finally:
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
            try:
                process.wait(15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait(5)


@contextmanager
def control_plane(workdir: Path) -> Iterator[APIServer]:
    """etcd and kube-apiserver on free loopback ports, stopped when the block ends."""
    workdir.mkdir(parents=True, exist_ok=True)
    key = workdir / "sa.key"
    subprocess.run(["openssl", "genrsa", "-out", str(key), "2048"], check=True, capture_output=True)
    (workdir / "tokens.csv").write_text(f"{ADMIN_TOKEN},admin,admin,system:masters\n")
    etcd_client, etcd_peer, secure = free_port(), free_port(), free_port()
    with ExitStack() as stack:
        etcd_flags = {
            "data-dir": str(workdir / "etcd"),
            "listen-client-urls": f"http://127.0.0.1:{etcd_client}",
            "advertise-client-urls": f"http://127.0.0.1:{etcd_client}",
            "listen-peer-urls": f"http://127.0.0.1:{etcd_peer}",
            "initial-advertise-peer-urls": f"http://127.0.0.1:{etcd_peer}",
            "initial-cluster": f"default=http://127.0.0.1:{etcd_peer}",
        }
        etcd = stack.enter_context(_process([peer("etcd"), *_flags(etcd_flags)], workdir / "etcd.log"))
        apiserver_flags = {
            "etcd-servers": f"http://127.0.0.1:{etcd_client}",
            "bind-address": "127.0.0.1",
            "secure-port": str(secure),
            "cert-dir": str(workdir / "certs"),
            "token-auth-file": str(workdir / "tokens.csv"),
            "authorization-mode": "RBAC",
            "service-account-issuer": "https://kubernetes.default.svc",
            "service-account-key-file": str(key),
            "service-account-signing-key-file": str(key),
            "service-cluster-ip-range": "10.96.0.0/16",
        }
        apiserver = stack.enter_context(
            _process([peer("kube-apiserver"), *_flags(apiserver_flags)], workdir / "kube-apiserver.log")
        )
        url = f"https://127.0.0.1:{secure}"
        assert etcd.poll() is None, (workdir / "etcd.log").read_text()
        _wait_ready(url + "/readyz", apiserver, workdir / "kube-apiserver.log")
        server = APIServer(url=url, admin_kubeconfig=workdir / "admin.kubeconfig", workdir=workdir)
        server.admin_kubeconfig = server.kubeconfig(ADMIN_TOKEN, "admin")
        yield server
