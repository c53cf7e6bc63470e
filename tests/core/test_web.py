"""TLS and basic auth on the endpoints (web config file), the connection bound, and a real Prometheus
scraping through both."""

from __future__ import annotations

import base64
import http.client
import socket
import ssl
import threading
import time
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import bcrypt
import pytest
import trustme
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from exporter import webconfig
from exporter.collect import CollectorSet
from exporter.config import ConfigError
from tests.bundle.servers import prometheus, query, wait_for
from tests.core.serving import serving
from tests.core.test_server import Fixed

PASSWORD = "correct horse battery staple"
HASH = bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)).decode()  # cheap rounds: tests only


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def certs(ca: trustme.CA, tmp_path: Path) -> Path:
    """tls.crt/tls.key for 127.0.0.1, ca.crt, and a client pair client.pem signed by the same CA."""
    ca.cert_pem.write_to_path(str(tmp_path / "ca.crt"))
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    leaf.private_key_pem.write_to_path(str(tmp_path / "tls.key"))
    leaf.cert_chain_pems[0].write_to_path(str(tmp_path / "tls.crt"))
    client = ca.issue_cert("prometheus@example.com")
    client.private_key_and_cert_chain_pem.write_to_path(str(tmp_path / "client.pem"))
    return tmp_path


def running(web: webconfig.WebConfig | None, max_connections: int = 64) -> AbstractContextManager[int]:
    return serving(CollectorSet([Fixed()]), web=web, max_connections=max_connections)


def request(
    port: int,
    path: str = "/metrics",
    *,
    context: ssl.SSLContext | None = None,
    auth: tuple[str, str] | None = None,
) -> tuple[int, str, dict[str, str]]:
    conn: http.client.HTTPConnection
    if context is None:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=10)
    else:
        conn = http.client.HTTPSConnection("127.0.0.1", port, timeout=10, context=context)
    headers = {}
    if auth:
        headers["Authorization"] = "Basic " + base64.b64encode(f"{auth[0]}:{auth[1]}".encode()).decode()
    try:
        conn.request("GET", path, headers=headers)
        response = conn.getresponse()
        return response.status, response.read().decode(), dict(response.getheaders())
    finally:
        conn.close()


def client_context(certs: Path, with_cert: bool = False) -> ssl.SSLContext:
    context = ssl.create_default_context(cafile=str(certs / "ca.crt"))
    if with_cert:
        context.load_cert_chain(str(certs / "client.pem"))
    return context


def rejected(port: int, context: ssl.SSLContext | None, auth: tuple[str, str] | None, reason: str) -> float:
    _, body, _ = request(port, context=context, auth=auth)
    line = next(x for x in body.splitlines() if x.startswith(f'llm_exporter_http_rejected_total{{reason="{reason}"}}'))
    return float(line.rsplit(" ", 1)[1])


def test_web_config_errors_are_all_named(tmp_path: Path) -> None:
    text = """
tls_server_config:
  cert_file: tls.crt
  client_auth_type: RequireAndVerifyClientCert
  min_version: TLS10
  cipher_suites: [TLS_AES_128_GCM_SHA256]
basic_auth_users:
  alice: hunter2
  "bob:x": $2y$10$abcdefghijklmnopqrstuvabcdefghijklmnopqrstuvwxyzabcde
http_server_config:
  headers: {Content-Type: text/html, X-Frame-Options: deny}
  compress: true
colour: blue
"""
    with pytest.raises(ConfigError) as err:
        webconfig.parse(text, base=tmp_path)
    assert err.value.errors == [
        "colour: unknown key (known: tls_server_config, http_server_config, basic_auth_users)",
        "tls_server_config.cipher_suites: Go cipher suite names do not map onto OpenSSL's; the defaults exclude "
        "weak suites",
        "tls_server_config.key_file: required when TLS is configured",
        "tls_server_config.client_ca_file: required when client_auth_type is RequireAndVerifyClientCert",
        "tls_server_config.min_version: must be one of TLS12, TLS13, got 'TLS10'",
        "basic_auth_users.alice: expected a bcrypt hash ($2y$…, 60 characters), never a clear-text password",
        "basic_auth_users.bob:x: a user name is a non-empty string without ':'",
        "http_server_config.compress: unknown key (known: headers, http2)",
        "http_server_config.headers.Content-Type: set by the server, cannot be configured",
    ]


def test_unloadable_certificate_fails_at_start_with_the_reason(tmp_path: Path) -> None:
    (tmp_path / "web.yml").write_text("tls_server_config: {cert_file: missing.crt, key_file: missing.key}\n")
    with pytest.raises(ConfigError) as raised:
        webconfig.load(tmp_path / "web.yml")
    assert raised.value.errors == [
        f"{tmp_path / 'web.yml'}: tls_server_config.cert_file {tmp_path / 'missing.crt'}: cannot read: "
        "No such file or directory"
    ]


def test_off_by_default_plain_http_without_credentials() -> None:
    with running(None) as port:
        status, body, _ = request(port)
    assert status == 200 and 'llm_exporter_http_rejected_total{reason="unauthorized"} 0' in body


def test_tls_and_basic_auth(certs: Path) -> None:
    (certs / "web.yml").write_text(
        "tls_server_config: {cert_file: tls.crt, key_file: tls.key}\n"
        f"basic_auth_users: {{prometheus: '{HASH}'}}\n"
        "http_server_config: {headers: {X-Content-Type-Options: nosniff}}\n"
    )
    web = webconfig.load(certs / "web.yml")
    tls = client_context(certs)
    with running(web) as port:
        status, body, headers = request(port, context=tls, auth=("prometheus", PASSWORD))
        assert status == 200 and "llm_engine_up" in body
        assert headers["X-Content-Type-Options"] == "nosniff"
        for auth in (None, ("prometheus", "wrong"), ("mallory", PASSWORD)):
            status, _, headers = request(port, context=tls, auth=auth)
            assert status == 401 and headers["WWW-Authenticate"] == 'Basic realm="llm-exporter"'
        # probes need no credentials; TLS still applies
        assert request(port, "/healthz", context=tls)[0] == 200
        assert request(port, "/", context=tls)[0] == 401
        # a plain-HTTP client gets no answer, and the refusal is counted (as is a bare TCP probe)
        before = rejected(port, tls, ("prometheus", PASSWORD), "tls_handshake")
        with pytest.raises((http.client.HTTPException, OSError)):
            request(port)
        assert rejected(port, tls, ("prometheus", PASSWORD), "tls_handshake") == before + 1
        assert rejected(port, tls, ("prometheus", PASSWORD), "unauthorized") == 4


def test_client_certificates_required(certs: Path) -> None:
    (certs / "web.yml").write_text(
        "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n"
        "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n  min_version: TLS13\n"
    )
    web = webconfig.load(certs / "web.yml")
    with running(web) as port:
        assert request(port, context=client_context(certs, with_cert=True))[0] == 200
        with pytest.raises((ssl.SSLError, OSError, http.client.HTTPException)):
            request(port, context=client_context(certs))


def test_rotated_certificate_is_served_without_a_restart(certs: Path, ca: trustme.CA) -> None:
    (certs / "web.yml").write_text("tls_server_config: {cert_file: tls.crt, key_file: tls.key}\n")
    web = webconfig.load(certs / "web.yml")
    with running(web) as port:
        first = ssl.get_server_certificate(("127.0.0.1", port))
        fresh = ca.issue_cert("127.0.0.1")
        fresh.private_key_pem.write_to_path(str(certs / "tls.key"))
        fresh.cert_chain_pems[0].write_to_path(str(certs / "tls.crt"))
        second = ssl.get_server_certificate(("127.0.0.1", port))
        assert first != second
        assert request(port, context=client_context(certs))[0] == 200


def test_a_scrape_storm_is_bounded_and_counted() -> None:
    with running(None, max_connections=4) as port:
        idle = [socket.create_connection(("127.0.0.1", port)) for _ in range(4)]  # hold every slot
        try:
            time.sleep(0.2)
            extra = socket.create_connection(("127.0.0.1", port), timeout=5)
            extra.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            assert extra.recv(100) == b""  # closed at once, without an answer
            extra.close()
        finally:
            for sock in idle:
                sock.close()
        time.sleep(0.2)
        # the slots come back; many concurrent scrapes all get an answer or a prompt refusal, never a hang
        results: list[int] = []

        def scrape() -> None:
            try:
                results.append(request(port)[0])
            except OSError:
                results.append(0)

        threads = [threading.Thread(target=scrape) for _ in range(40)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(15)
        assert len(results) == 40 and 200 in results and set(results) <= {200, 0}
        wait_for(lambda: request(port)[0] == 200, 5, "a free slot")
        _, body, _ = request(port)
    refused = float(body.split('llm_exporter_http_rejected_total{reason="connection_limit"} ')[1].split()[0])
    assert refused >= 1 + results.count(0)


def test_real_prometheus_scrapes_through_tls_and_basic_auth(certs: Path, tmp_path: Path) -> None:
    (certs / "web.yml").write_text(
        "tls_server_config:\n  cert_file: tls.crt\n  key_file: tls.key\n"
        "  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: ca.crt\n"
        f"basic_auth_users: {{prometheus: '{HASH}'}}\n"
    )
    web = webconfig.load(certs / "web.yml")
    with running(web) as port:
        target = {"targets": [f"127.0.0.1:{port}"]}
        tls = {"ca_file": str(certs / "ca.crt"), "cert_file": str(certs / "client.pem"),
               "key_file": str(certs / "client.pem")}  # fmt: skip
        jobs: list[dict[str, Any]] = [
            {"job_name": "secure", "scheme": "https", "tls_config": tls, "static_configs": [target],
             "basic_auth": {"username": "prometheus", "password": PASSWORD}},
            {"job_name": "wrong-password", "scheme": "https", "tls_config": tls, "static_configs": [target],
             "basic_auth": {"username": "prometheus", "password": "guess"}},
            {"job_name": "plain", "static_configs": [target]},
        ]  # fmt: skip
        with prometheus(tmp_path / "prom", jobs) as url:
            wait_for(lambda: len(query(url, "up")) == 3, 30, "three scraped jobs")
            wait_for(lambda: query(url, 'llm_engine_up{job="secure"}') != [], 30, "the secure job's samples")
            up = {r["metric"]["job"]: r["value"][1] for r in query(url, "up")}
    assert up == {"secure": "1", "wrong-password": "0", "plain": "0"}


def test_the_documented_example_is_a_valid_web_config() -> None:
    doc = (Path(__file__).resolve().parents[2] / "docs" / "security.md").read_text()
    example = doc.split("```yaml\n", 1)[1].split("```", 1)[0]
    web = webconfig.parse(example, base=Path("/etc/llm-exporter/web"))
    assert web.tls is not None and web.tls.client_auth is ssl.CERT_REQUIRED
    assert web.tls.cert_file == Path("/etc/llm-exporter/web/tls.crt")
    assert webconfig.BasicAuth(web.users).check("prometheus", "change-me")
    assert not webconfig.BasicAuth(web.users).check("prometheus", "change-me ")


_scalars = st.one_of(st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=20))
_keys = st.sampled_from(
    ["tls_server_config", "http_server_config", "basic_auth_users", "cert_file", "key_file", "client_auth_type",
     "client_ca_file", "min_version", "max_version", "headers", "http2", "prometheus", "cipher_suites", "x"]
)  # fmt: skip
_documents = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_keys | st.text(max_size=8), inner, max_size=4),
    max_leaves=12,
)


_sections = st.dictionaries(
    st.sampled_from(["tls_server_config", "http_server_config", "basic_auth_users"]),
    st.dictionaries(_keys, _documents, max_size=5) | _documents,
    max_size=3,
)


@settings(max_examples=400, deadline=None)
@given(_documents | _sections)
def test_any_yaml_document_is_a_web_config_or_named_errors(document: object) -> None:
    text = yaml.safe_dump(document)
    try:
        webconfig.parse(text, base=Path("/nonexistent"))
    except ConfigError as exc:
        assert exc.errors and all(isinstance(e, str) and e for e in exc.errors)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=200))
def test_any_text_is_a_web_config_or_named_errors(text: str) -> None:
    try:
        webconfig.parse(text)
    except ConfigError as exc:
        assert exc.errors


def test_yaml_pyyaml_cannot_build_and_non_utf8_files_are_named_errors(tmp_path: Path) -> None:
    for text in ("basic_auth_users: {a: !!int abc}", "[" * 1000, "x: 2001-13-45"):
        with pytest.raises(ConfigError, match="not valid YAML"):
            webconfig.parse(text)
    (tmp_path / "web.yml").write_bytes(b"basic_auth_users: {a: \xff}\n")
    with pytest.raises(ConfigError, match="not UTF-8 text"):
        webconfig.load(tmp_path / "web.yml")
