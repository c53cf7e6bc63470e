"""The web config file (`--web-config`): TLS and basic auth for the HTTP endpoints, off by default.

The format is the Prometheus exporter-toolkit's, so one file serves this exporter and node_exporter alike:

    tls_server_config:
      cert_file: /etc/llm-exporter/tls.crt
      key_file: /etc/llm-exporter/tls.key
      client_auth_type: RequireAndVerifyClientCert   # or NoClientCert (default), VerifyClientCertIfGiven
      client_ca_file: /etc/llm-exporter/ca.crt
      min_version: TLS12                             # TLS12 (default) or TLS13; max_version likewise
    http_server_config:
      headers: {Strict-Transport-Security: max-age=31536000}
    basic_auth_users:
      prometheus: $2y$10$...                         # bcrypt hashes only, never clear text

Every error of the file is reported at once, naming its key. Certificates are re-read when their files
change (cert-manager rotates them in place), so a rotation needs no restart.
"""

from __future__ import annotations

import hashlib
import os
import ssl
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import bcrypt

from exporter.config import ConfigError, read_text, read_yaml

CLIENT_AUTH = {
    "NoClientCert": ssl.CERT_NONE,
    "VerifyClientCertIfGiven": ssl.CERT_OPTIONAL,
    "RequireAndVerifyClientCert": ssl.CERT_REQUIRED,
}
# exporter-toolkit keys that Python's ssl module cannot honour the same way: named, refused, not ignored
UNSUPPORTED = {
    "cipher_suites": "Go cipher suite names do not map onto OpenSSL's; the defaults exclude weak suites",
    "curve_preferences": "not configurable here",
    "prefer_server_cipher_suites": "not configurable here",
    "client_allowed_sans": "not supported yet",
}
VERSIONS = {"TLS12": ssl.TLSVersion.TLSv1_2, "TLS13": ssl.TLSVersion.TLSv1_3}
# headers the server itself sets: a config must not override them (exporter-toolkit refuses them too)
RESERVED_HEADERS = {"authorization", "content-length", "content-type", "www-authenticate", "connection"}


@dataclass(frozen=True)
class TlsConfig:
    cert_file: Path
    key_file: Path
    client_auth: ssl.VerifyMode = ssl.CERT_NONE
    client_ca_file: Path | None = None
    min_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_2
    max_version: ssl.TLSVersion = ssl.TLSVersion.TLSv1_3

    def files(self) -> tuple[Path, ...]:
        return (self.cert_file, self.key_file) + ((self.client_ca_file,) if self.client_ca_file else ())

    def build_context(self) -> ssl.SSLContext:
        """A server context from the files as they are now. Raises OSError or ssl.SSLError."""
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.minimum_version = self.min_version
        context.maximum_version = self.max_version
        context.load_cert_chain(self.cert_file, self.key_file)
        context.verify_mode = self.client_auth
        if self.client_ca_file is not None:
            context.load_verify_locations(cafile=self.client_ca_file)
        return context


@dataclass(frozen=True)
class WebConfig:
    tls: TlsConfig | None = None
    users: dict[str, bytes] = field(default_factory=dict)  # user → bcrypt hash
    headers: dict[str, str] = field(default_factory=dict)


def load(path: str | Path) -> WebConfig:
    """The web config in `path`; its TLS files are loaded once here so that a bad file fails at start."""
    web = parse(read_text(path), base=Path(path).parent, source=str(path))
    if web.tls is not None:
        try:
            web.tls.build_context()
        except (OSError, ssl.SSLError) as exc:
            raise ConfigError([f"tls_server_config: cannot load the certificate, key or CA: {exc}"]) from exc
    return web


def parse(text: str, base: Path = Path("."), source: str = "<web config>") -> WebConfig:
    """Parse and check a web config; relative file names are relative to `base` (the file's folder)."""
    data = read_yaml(text, source)
    data = {} if data is None else data
    if not isinstance(data, dict):
        raise ConfigError([f"{source}: expected a mapping, got {type(data).__name__}"])
    errors: list[str] = []
    known = ("tls_server_config", "http_server_config", "basic_auth_users")
    errors += [f"{key}: unknown key (known: {', '.join(known)})" for key in data if key not in known]
    tls = _tls(data.get("tls_server_config"), base, errors)
    users = _users(data.get("basic_auth_users"), errors)
    headers = _headers(data.get("http_server_config"), errors)
    if errors:
        raise ConfigError(errors)
    return WebConfig(tls=tls, users=users, headers=headers)


def _mapping(value: Any, where: str, errors: list[str]) -> dict[Any, Any]:
    if value is None:
        return {}
    if not isinstance(value, dict):
        errors.append(f"{where}: expected a mapping, got {type(value).__name__}")
        return {}
    return value


def _tls(value: Any, base: Path, errors: list[str]) -> TlsConfig | None:
    section = _mapping(value, "tls_server_config", errors)
    if not section:
        return None
    where = "tls_server_config"
    known = {"cert_file", "key_file", "client_auth_type", "client_ca_file", "min_version", "max_version"}
    start = len(errors)
    for key in section:
        if key in UNSUPPORTED:
            errors.append(f"{where}.{key}: {UNSUPPORTED[key]}")
        elif key not in known:
            errors.append(f"{where}.{key}: unknown key (known: {', '.join(sorted(known))})")
    files: dict[str, Path | None] = {}
    for key in ("cert_file", "key_file", "client_ca_file"):
        name = section.get(key)
        if name is None or name == "":
            files[key] = None
        elif not isinstance(name, str):
            errors.append(f"{where}.{key}: expected a file name, got {type(name).__name__}")
        else:
            files[key] = base / name
    for key in ("cert_file", "key_file"):
        if key not in files or files[key] is None:
            errors.append(f"{where}.{key}: required when TLS is configured")
    auth = section.get("client_auth_type", "NoClientCert")
    if not isinstance(auth, str) or auth not in CLIENT_AUTH:
        errors.append(f"{where}.client_auth_type: must be one of {', '.join(CLIENT_AUTH)}, got {auth!r}")
    elif auth != "NoClientCert" and files.get("client_ca_file") is None:
        errors.append(f"{where}.client_ca_file: required when client_auth_type is {auth}")
    versions = {}
    for key, default in (("min_version", "TLS12"), ("max_version", "TLS13")):
        text = section.get(key, default)
        if not isinstance(text, str) or text not in VERSIONS:
            errors.append(f"{where}.{key}: must be one of {', '.join(VERSIONS)}, got {text!r}")
        else:
            versions[key] = VERSIONS[text]
    if len(versions) == 2 and versions["min_version"] > versions["max_version"]:
        errors.append(f"{where}.min_version: is above max_version")
    if len(errors) > start:
        return None
    cert, key = files["cert_file"], files["key_file"]
    assert cert is not None and key is not None
    return TlsConfig(cert, key, CLIENT_AUTH[auth], files["client_ca_file"], **versions)


def _users(value: Any, errors: list[str]) -> dict[str, bytes]:
    users = {}
    for user, hashed in _mapping(value, "basic_auth_users", errors).items():
        where = f"basic_auth_users.{user}"
        if not isinstance(user, str) or not user or ":" in user:
            errors.append(f"{where}: a user name is a non-empty string without ':'")
        elif not isinstance(hashed, str) or not hashed.startswith(("$2a$", "$2b$", "$2y$")) or len(hashed) != 60:
            errors.append(f"{where}: expected a bcrypt hash ($2y$…, 60 characters), never a clear-text password")
        else:
            users[user] = hashed.encode("ascii", errors="replace")
    return users


def _headers(value: Any, errors: list[str]) -> dict[str, str]:
    section = _mapping(value, "http_server_config", errors)
    headers: dict[str, str] = {}
    for key in section:
        if key == "http2":  # accepted for compatibility: this server speaks HTTP/1.1
            continue
        if key != "headers":
            errors.append(f"http_server_config.{key}: unknown key (known: headers, http2)")
    for name, text in _mapping(section.get("headers"), "http_server_config.headers", errors).items():
        where = f"http_server_config.headers.{name}"
        if not isinstance(name, str) or not isinstance(text, str) or "\n" in text or "\r" in text:
            errors.append(f"{where}: a header is a string name and a one-line string value")
        elif name.lower() in RESERVED_HEADERS:
            errors.append(f"{where}: set by the server, cannot be configured")
        else:
            headers[name] = text
    return headers


class TlsContexts:
    """The current SSLContext, rebuilt when the certificate, key or CA file changes on disk."""

    def __init__(self, tls: TlsConfig) -> None:
        self._tls = tls
        self._lock = threading.Lock()
        self._stamp = self._stat()
        self._context = tls.build_context()

    def _stat(self) -> tuple[tuple[int, int], ...]:
        stamps = []
        for path in self._tls.files():
            try:
                st = os.stat(path)
                stamps.append((st.st_mtime_ns, st.st_size))
            except OSError:
                stamps.append((0, 0))
        return tuple(stamps)

    def current(self) -> ssl.SSLContext:
        stamp = self._stat()
        with self._lock:
            if stamp != self._stamp:
                try:
                    self._context = self._tls.build_context()
                except (OSError, ssl.SSLError):
                    pass  # a rotation half-written: keep serving the old pair, retry at the next connection
                else:
                    self._stamp = stamp
            return self._context


class BasicAuth:
    """Checks `Authorization: Basic` credentials against bcrypt hashes.

    bcrypt is slow on purpose (tens of milliseconds), so successful checks are remembered, keyed by a hash
    of the credentials; an unknown user still costs one bcrypt check, so timing does not tell which users
    exist.
    """

    CACHE = 256

    def __init__(self, users: dict[str, bytes]) -> None:
        self._users = users
        self._dummy = bcrypt.hashpw(b"not a password", bcrypt.gensalt(rounds=10))
        self._ok: OrderedDict[bytes, None] = OrderedDict()
        self._lock = threading.Lock()

    def check(self, user: str, password: str) -> bool:
        key = hashlib.sha256(f"{user}\0{password}".encode("utf-8", errors="surrogatepass")).digest()
        with self._lock:
            if key in self._ok:
                self._ok.move_to_end(key)
                return True
        hashed = self._users.get(user)
        valid = bcrypt.checkpw(password.encode("utf-8", errors="surrogatepass"), hashed or self._dummy)
        if not valid or hashed is None:
            return False
        with self._lock:
            self._ok[key] = None
            while len(self._ok) > self.CACHE:
                self._ok.popitem(last=False)
        return True
