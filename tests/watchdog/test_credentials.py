"""The watchdog's Prometheus client against a real Prometheus 3 behind TLS (a throwaway CA) and basic auth
(its own web config, exporter-toolkit format): credentials from files as a mounted Secret provides them."""

from __future__ import annotations

import ssl
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import bcrypt
import pytest
import trustme
import yaml

from exporter.config import BasicAuth, Tls, WatchdogPrometheus
from exporter.demo.vllm_env import free_port
from exporter.sources.prometheus import PrometheusError
from exporter.watchdog import model
from exporter.watchdog.collector import prometheus_client
from tests.bundle.servers import process
from tests.peers import peer

PASSWORD = "s3cret-for-the-watchdog"


@pytest.fixture(scope="module")
def secured(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Path]]:
    tmp = tmp_path_factory.mktemp("secured")
    ca = trustme.CA()
    cert = ca.issue_cert("127.0.0.1")
    cert.private_key_and_cert_chain_pem.write_to_path(str(tmp / "server.pem"))
    cert.private_key_pem.write_to_path(str(tmp / "server.key"))
    cert.cert_chain_pems[0].write_to_path(str(tmp / "server.crt"))
    ca.cert_pem.write_to_path(str(tmp / "ca.crt"))
    hashed = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()
    web = {
        "tls_server_config": {"cert_file": str(tmp / "server.crt"), "key_file": str(tmp / "server.key")},
        "basic_auth_users": {"watchdog": hashed},
    }
    (tmp / "web.yml").write_text(yaml.safe_dump(web))
    (tmp / "prometheus.yml").write_text(yaml.safe_dump({"global": {"scrape_interval": "1s"}}))
    port = free_port()
    args = [
        peer("prometheus"),
        f"--config.file={tmp / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp / 'data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        f"--web.config.file={tmp / 'web.yml'}",
        "--log.level=warn",
    ]
    url = f"https://127.0.0.1:{port}"
    with process(args, tmp / "prometheus.log") as proc:
        context = ssl.create_default_context(cafile=str(tmp / "ca.crt"))
        deadline = time.monotonic() + 30
        while True:  # /-/ready answers 401 without credentials: any HTTP answer means it is up
            try:
                urllib.request.urlopen(f"{url}/-/ready", timeout=2, context=context)
                break
            except urllib.error.HTTPError:
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, "Prometheus did not start"
                time.sleep(0.2)
        yield url, tmp


def secret(tmp: Path, name: str, text: str) -> str:
    path = tmp / name
    path.write_text(text + "\n")  # as `kubectl create secret --from-file` keeps a trailing newline
    return str(path)


def test_basic_auth_and_a_private_ca_from_mounted_files(secured: tuple[str, Path], tmp_path: Path) -> None:
    url, tmp = secured
    config = WatchdogPrometheus(
        url=url,
        basic_auth=BasicAuth("watchdog", secret(tmp_path, "password", PASSWORD)),
        tls=Tls(ca_file=str(tmp / "ca.crt")),
    )
    assert prometheus_client(config, 5).query("vector(1)")[0]["value"][1] == "1"


def test_a_wrong_password_is_unauthorized(secured: tuple[str, Path], tmp_path: Path) -> None:
    url, tmp = secured
    config = WatchdogPrometheus(
        url=url, basic_auth=BasicAuth("watchdog", secret(tmp_path, "password", "wrong")), tls=Tls(str(tmp / "ca.crt"))
    )
    with pytest.raises(PrometheusError) as info:
        prometheus_client(config, 5).query("vector(1)")
    assert info.value.status == 401
    assert model.error_reason(info.value.status, str(info.value)) == "unauthorized"


def test_an_unknown_ca_fails_unless_verification_is_off(secured: tuple[str, Path], tmp_path: Path) -> None:
    url, _ = secured
    auth = BasicAuth("watchdog", secret(tmp_path, "password", PASSWORD))
    with pytest.raises(PrometheusError, match="CERTIFICATE_VERIFY_FAILED"):
        prometheus_client(WatchdogPrometheus(url=url, basic_auth=auth), 5).query("vector(1)")
    insecure = WatchdogPrometheus(url=url, basic_auth=auth, tls=Tls(insecure_skip_verify=True))
    assert prometheus_client(insecure, 5).query("vector(1)")


def test_a_missing_secret_file_is_named(tmp_path: Path) -> None:
    config = WatchdogPrometheus(url="https://prometheus:9090", bearer_token_file=str(tmp_path / "token"))
    with pytest.raises(PrometheusError, match=f"bearer_token_file {tmp_path / 'token'}: cannot read"):
        prometheus_client(config, 5)
