"""/readyz says what the cluster role waits for, and why, while the API server cannot be reached: `serve
--role cluster` as its own process, its kubeconfig pointing at a closed port. Each resource's failure is
logged once, not at each retry. (A real API server that refuses: tests/kube_real/test_readyz.py.)"""

from __future__ import annotations

import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

from exporter.demo.vllm_env import free_port
from tests.bundle.servers import process
from tests.kube.waiting import eventually

CLUSTER_ONLY = ("--no-collector.routes", "--no-collector.replicas", "--no-collector.audit")
RESOURCES = "nodes, pods, resourceslices, resourceclaims, deviceclasses"


def readyz(url: str) -> tuple[int, str]:
    try:
        with urllib.request.urlopen(f"{url}/readyz", timeout=5) as response:
            return response.status, response.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()
    except OSError:
        return 0, ""


def kubeconfig(path: Path, server: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}', insecure-skip-tls-verify: true}}}}]\n"
        "users: [{name: u, user: {token: not-a-real-token}}]\n"
        "contexts: [{name: c, context: {cluster: c, user: u}}]\n"
    )
    return path


def test_an_unreachable_api_server_is_named_on_readyz_and_logged_once(tmp_path: Path) -> None:
    server = f"https://127.0.0.1:{free_port()}"  # nothing listens there
    address = f"127.0.0.1:{free_port()}"
    args = [sys.executable, "-m", "exporter", "serve", "--role", "cluster", "--listen", address, *CLUSTER_ONLY]
    args += ["--kubeconfig", str(kubeconfig(tmp_path / "kubeconfig", server))]
    log = tmp_path / "serve.log"
    with process(args, log):
        expected = (
            503,
            f"not ready: waiting for the first sync of {RESOURCES} "
            f"(API server: cannot connect: Connection refused on {RESOURCES})\n",
        )
        eventually(lambda: readyz(f"http://{address}") == expected, timeout=30, interval=0.2)
        said = [line for line in log.read_text().splitlines() if "cannot list or watch" in line]
        time.sleep(4)  # three more retries at least (backoff from 0.5 s), none of them said again
        assert readyz(f"http://{address}") == expected
        lines = log.read_text().splitlines()
    assert [line for line in lines if "cannot list or watch" in line] == said
    assert sorted(line.split('msg="')[1].split(":")[0] for line in said) == sorted(RESOURCES.split(", "))
    assert all(
        f"cannot list or watch at {server}: cannot connect: Connection refused (retrying with backoff; said again "
        "only when the error changes)" in line
        for line in said
    )
    assert not [line for line in lines if "Retrying" in line or "Traceback" in line]
