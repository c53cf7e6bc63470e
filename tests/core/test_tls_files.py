"""Every TLS file error names the key it was configured under and the file: the exporter's own web config
(cert_file, key_file, client_ca_file, at start and at a rotation) and the watchdog's Prometheus CA."""

from __future__ import annotations

import logging
import ssl
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from exporter import webconfig
from exporter.sources.prometheus import PrometheusError, tls_context
from exporter.typed_loader import ConfigError


@pytest.fixture(scope="module")
def ca() -> trustme.CA:
    return trustme.CA()


@pytest.fixture
def files(ca: trustme.CA, tmp_path: Path) -> Path:
    """tls.crt/tls.key, other.key (of another certificate), encrypted.key, ca.crt, garbage.txt, a folder."""
    leaf = ca.issue_cert("127.0.0.1")
    leaf.cert_chain_pems[0].write_to_path(str(tmp_path / "tls.crt"))
    leaf.private_key_pem.write_to_path(str(tmp_path / "tls.key"))
    ca.issue_cert("127.0.0.1").private_key_pem.write_to_path(str(tmp_path / "other.key"))
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), None)
    encrypted = serialization.BestAvailableEncryption(b"secret")
    pem = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encrypted)
    (tmp_path / "encrypted.key").write_bytes(pem)
    ca.cert_pem.write_to_path(str(tmp_path / "ca.crt"))
    (tmp_path / "garbage.txt").write_text("not a certificate\n")
    (tmp_path / "folder").mkdir()
    return tmp_path


def load_error(files: Path, cert: str, key: str, client_ca: str | None = None) -> str:
    auth = f"\n  client_auth_type: RequireAndVerifyClientCert\n  client_ca_file: {client_ca}" if client_ca else ""
    (files / "web.yml").write_text(f"tls_server_config:\n  cert_file: {cert}\n  key_file: {key}{auth}\n")
    with pytest.raises(ConfigError) as raised:
        webconfig.load(files / "web.yml")
    (error,) = raised.value.errors
    return error.replace(str(files), "DIR")


@pytest.mark.parametrize(
    ("cert", "key", "client_ca", "error"),
    [
        ("missing.crt", "tls.key", None, "cert_file DIR/missing.crt: cannot read: No such file or directory"),
        ("folder", "tls.key", None, "cert_file DIR/folder: cannot read: Is a directory"),
        ("tls.crt", "missing.key", None, "key_file DIR/missing.key: cannot read: No such file or directory"),
        ("garbage.txt", "tls.key", None, "cert_file DIR/garbage.txt: no PEM certificate in it"),
        ("tls.crt", "garbage.txt", None, "key_file DIR/garbage.txt: no PEM private key in it"),
        ("tls.crt", "tls.crt", None, "key_file DIR/tls.crt: no PEM private key in it"),
        ("tls.crt", "other.key", None,
         "key_file DIR/other.key: not the private key of the certificate in DIR/tls.crt"),
        ("tls.crt", "encrypted.key", None,
         "key_file DIR/encrypted.key: an encrypted private key; give it unencrypted"),
        ("tls.crt", "tls.key", "missing.crt",
         "client_ca_file DIR/missing.crt: cannot read: No such file or directory"),
        ("tls.crt", "tls.key", "garbage.txt",
         "client_ca_file DIR/garbage.txt: no PEM certificate in it (no certificate or crl found)"),
    ],
)  # fmt: skip
def test_web_config_tls_errors_name_the_key_and_the_file(
    files: Path, cert: str, key: str, client_ca: str | None, error: str
) -> None:
    assert load_error(files, cert, key, client_ca) == f"DIR/web.yml: tls_server_config.{error}"


def test_good_files_load(files: Path) -> None:
    (files / "web.yml").write_text(
        "tls_server_config: {cert_file: tls.crt, key_file: tls.key, client_ca_file: ca.crt}\n"
    )
    assert webconfig.load(files / "web.yml").tls is not None


def test_a_rotation_that_cannot_load_keeps_the_old_pair_and_says_so_once(
    files: Path, caplog: pytest.LogCaptureFixture
) -> None:
    (files / "web.yml").write_text("tls_server_config: {cert_file: tls.crt, key_file: tls.key}\n")
    web = webconfig.load(files / "web.yml")
    assert web.tls is not None
    contexts = webconfig.TlsContexts(web.tls)
    first = contexts.current()
    (files / "tls.key").write_text("half written\n")
    with caplog.at_level(logging.WARNING, logger="exporter.webconfig"):
        assert contexts.current() is first
        assert contexts.current() is first  # the same state of the files: not said again
    assert [r.getMessage() for r in caplog.records] == [
        "TLS files changed but cannot be loaded, serving the previous ones: "
        f"tls_server_config.key_file {files}/tls.key: no PEM private key in it"
    ]


@pytest.mark.parametrize(
    ("name", "error"),
    [
        ("missing.crt", "cannot read: No such file or directory"),
        ("garbage.txt", "no PEM certificate in it (no certificate or crl found)"),
    ],
)
def test_the_watchdog_prometheus_ca_error_names_its_key(files: Path, name: str, error: str) -> None:
    with pytest.raises(PrometheusError) as raised:
        tls_context(str(files / name))
    assert str(raised.value) == f"cluster.watchdog.prometheus.tls.ca_file {files / name}: {error}"


def test_the_watchdog_prometheus_ca_alone_is_trusted(files: Path) -> None:
    context = tls_context(str(files / "ca.crt"))
    assert context is not None and context.verify_mode == ssl.CERT_REQUIRED
    assert len(context.get_ca_certs()) == 1
